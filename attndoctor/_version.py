"""The release number, in a module of its own so that every part can read it without importing the package root."""

__version__ = "0.1.0"
