"""The poller's cycle: recover, scan, evaluate, draft, record, launch."""
