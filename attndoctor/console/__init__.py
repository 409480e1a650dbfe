"""What a command needs around its answers: the output stream, the progress line, and worker processes for many
configs."""
