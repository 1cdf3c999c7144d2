"""The wake: the one message an agent reads, composed from the Mood's history and the templates."""
