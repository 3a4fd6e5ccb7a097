"""The bodies of the fedbench commands, one module per command: benchmark/cli.py parses the options
and calls one function here. Each takes `select(seeds, only=...)` -> (suite, jobs), the parsed
suite file, --only, --set and --rounds."""
