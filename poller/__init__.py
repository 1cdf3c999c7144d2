"""mood-poller: decides when an AI agent gets a turn in a Mood, and what it is told."""

__version__ = "0.1.0"
