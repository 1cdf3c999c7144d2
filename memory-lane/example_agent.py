"""A tiny example agent: reads a wake on stdin, answers on stdout.

This is the smallest thing that can be a mood-poller agent, and the agent
``mood-poller demo`` runs.  It calls no model and no network: it answers from
the wake text it was given, so you can see what an agent is told.  Use it as
the skeleton of a real agent::

    mood-poller agent add helper --command "python3 -m poller.kit.example_agent"

The contract (see the README): the wake arrives on stdin; the environment
carries ``MOOD_AGENT``, ``MOOD_SLUG``, ``MOOD_WAKE_KIND`` (mention, consider,
quiet, arrival), ``MOOD_WAKE_ID`` and ``MOOD_TOOLS`` (full or look); whatever
is printed on stdout is posted in the Mood as the agent's reply.  Printing
``<silent>why</silent>`` (or nothing) stays silent; a non-zero exit is a
failed turn.
"""

from __future__ import annotations

import os
import re
import sys

# A post line in a wake: "[sender, time] text" or "[sender, time, new] text".
POST = re.compile(r"^\[(?P<sender>[^,\]]+), (?P<time>[^,\]]+)(?:, [^\]]*)?\] (?P<text>.*)$")
ARRIVAL = re.compile(r"^(?P<label>.+?) \(@(?P<handle>[^,)]+).*\) just signed in")


def posts(wake: str, heading_prefix: str) -> list[tuple[str, str, bool]]:
    """(sender, text, is_agent) of the post lines under the first heading starting with
    *heading_prefix*."""
    lines = wake.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(heading_prefix):
            out = []
            for follow in lines[i + 1:]:
                m = POST.match(follow)
                if m:
                    sender = m["sender"].removesuffix(" (agent)")
                    out.append((sender, m["text"], sender != m["sender"]))
                elif follow.startswith(" ") and out:
                    continue  # a post's further lines are indented
                else:
                    break
            return out
    return []


def short(text: str, limit: int = 60) -> str:
    """*text* on one line, clipped, with @handles defused: quoting a post must not
    mention anyone again (two agents quoting each other would never stop)."""
    text = " ".join(text.replace("@", "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def answer(wake: str, me: str, kind: str) -> str:
    """The reply for one wake: plain text, or ``<silent>why</silent>``."""
    if kind == "mention":
        asked = posts(wake, "The post") or posts(wake, "The posts")
        if not asked:
            return "<silent>I was called but could not find the post that called me</silent>"
        parts = [f"@{sender} asked \u201c{short(text)}\u201d" for sender, text, _ in asked]
        return (f"{'; '.join(parts)}. I'm {me}, the example agent: I only echo what I was told, "
                f"but a real agent would answer here.")
    if kind == "consider":
        said = posts(wake, "The new post")
        if not said:
            return "<silent>nothing new for me</silent>"
        sender, text, _ = said[-1]
        if "?" in text:
            return f"Not asked, but on @{sender}'s question \u201c{short(text, 40)}\u201d: a real agent would offer a thought here."
        return "<silent>people are talking among themselves; nothing for me to add</silent>"
    if kind == "quiet":
        lately = posts(wake, "The Mood lately")
        if lately and "?" in lately[-1][1] and not lately[-1][2]:
            sender, text, _ = lately[-1]
            return f"Picking up a loose end while it's quiet: @{sender} asked \u201c{short(text, 40)}\u201d and nobody has answered yet."
        return "<silent>quiet, and nothing is left hanging: the last question was answered</silent>"
    if kind == "arrival":
        m = next((ARRIVAL.match(line) for line in wake.splitlines() if ARRIVAL.match(line)), None)
        lately = posts(wake, "The Mood lately")
        if m is None or not lately:
            return "<silent>someone arrived, and I have nothing meant for them</silent>"
        # The greeting rule: no bare hello, only something meant for them.
        people = [(s, t) for s, t, agent in lately if not agent]
        news = f"the latest from people here was @{people[-1][0]}: \u201c{short(people[-1][1], 50)}\u201d" \
            if people else "only agents have spoken here lately"
        return f"@{m['handle']}, in case you are catching up: {len(lately)} posts lately; {news}."
    return f"<silent>unknown wake kind {kind!r}</silent>"


def main() -> int:
    wake = sys.stdin.read()
    me = os.environ.get("MOOD_AGENT", "agent")
    kind = os.environ.get("MOOD_WAKE_KIND", "")
    print(answer(wake, me, kind))
    return 0


if __name__ == "__main__":
    sys.exit(main())
