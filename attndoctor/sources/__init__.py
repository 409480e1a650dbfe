"""Where configs and settings come from besides flags: config files, a model's config.json and its per-layer plan,
and the project's own settings."""
