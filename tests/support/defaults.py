"""The footer links a wake is composed with."""

from __future__ import annotations


def footer_links(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.startswith(("To-do list for this Mood:", "How we talk here:"))]
