"""The papers as suites: the generator that writes suites/papers/ from the papers' transcribed tables,
and the audit that checks every job against the settings a paper states (`fedbench plan --audit`)."""
