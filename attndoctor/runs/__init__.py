"""The commands that run real kernels on a GPU: verify, verify --stress and bench (the engine never imports them)."""
