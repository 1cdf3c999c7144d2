"""End-to-end tests: the CLI and `serve` as processes, signals and kill -9, two pollers,
real MediaWiki, Synapse, SMTP and Chromium."""
