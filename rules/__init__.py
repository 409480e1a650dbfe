"""attndoctor's rule base: TOML data files only, shipped inside the wheel as attndoctor_rules."""
