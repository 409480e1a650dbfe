"""`attndoctor why`: from an error message or a log to the rules that explain it, the cause and the fix."""
