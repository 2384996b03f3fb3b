"""config.yaml: schema, loading and validation, environment overrides, model targets."""
