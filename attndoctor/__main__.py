"""`python -m attndoctor` runs the command line."""

from .cli import main

main()
