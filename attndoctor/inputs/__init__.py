"""Every path a user names, read and written one way: config files, model configs, logs, env files, settings, rule
folders, and the outputs that must never replace them."""

from .files import EITHER, FILE, FOLDER, MAX_BYTES, Input, describe, locate, read_bytes, read_lines, read_stream, \
    read_text
from .outputs import check_output, output_opener

__all__ = ["EITHER", "FILE", "FOLDER", "MAX_BYTES", "Input", "check_output", "describe", "locate", "output_opener",
           "read_bytes", "read_lines", "read_stream", "read_text"]
