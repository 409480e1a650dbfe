"""Runners that call the real attention backends on a GPU (imported only by verify and bench, never by the engine)."""
