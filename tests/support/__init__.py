"""What the tests share: real components to run against (PostgreSQL, MediaWiki,
Synapse, SMTP, the web front door, chat endpoints), agent programs and stand-ins,
the tests' timeline, and the in-process CLI.  Test modules import from here, never
from one another."""
