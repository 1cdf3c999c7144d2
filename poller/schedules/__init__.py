"""Schedules and check-ins: alarms, check-in agreements, their times, and the mail they send."""
