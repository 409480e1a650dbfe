"""A stand-in for transformers (imported after torch, outside site-packages) whose attention function calls SDPA."""
