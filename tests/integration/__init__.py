"""Integration tests: real SQLite and PostgreSQL, the CLI in process, agents as subprocesses."""
