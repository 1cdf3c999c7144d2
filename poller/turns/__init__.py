"""Turns: starting one, reaching the agent through its waker, and settling what comes back."""
