"""A job: its typed config, built from a suite by suite/expand.py, and what the engine runs."""
