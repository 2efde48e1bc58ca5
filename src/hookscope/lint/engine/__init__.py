"""The lint engine: files, project discovery, config, suppressions, findings, fixes,
output formats, the project index and its cache, and the runner. It knows no language."""
