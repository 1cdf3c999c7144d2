"""A room to test away and back in: two moods, three people, and an agent replying from
a script, with an activity catalog; ``Room`` drives it through the CLI on the timeline."""

from __future__ import annotations

import json
from pathlib import Path

from support.agents import agent_command, script, wakes_seen
from support.timeline import TimelineCli, at, since_t0

CATALOG = """\
archive_after_minutes = 45
catch_up_limit = 3
idle_nudge_minutes = 20
min_gap_minutes = 90

[[catalog]]
id = "creek_walk"
label = "out for a creek walk"
duration_minutes = [30, 30]
seed = "A short walk along the creek."

[[catalog]]
id = "long_walk"
label = "out for a long walk"
duration_minutes = [60, 60]
seed = "A long walk over the hills."

[[catalog]]
id = "nap"
label = "napping"
duration_minutes = [60, 60]
reachable = false
seed = "A nap."
"""


GOODBYE = "Off for a walk, back soon.\n```away\nactivity: {}\nnote: clear my head\n```"


class Room:
    """The lobby and the attic; ada and cy (trust full), bob (look); the agent helper,
    replying from a script, with the catalog above."""

    def __init__(self, c: TimelineCli, tmp_path: Path, catalog: str = CATALOG,
                 activities: bool = True):
        self.c, self.tmp = c, tmp_path
        self.queue = tmp_path / "replies.json"
        self.catalog = tmp_path / "activities.toml"
        self.catalog.write_text(catalog)
        for mood in ("lobby", "attic"):
            c("mood", "add", mood)
        c("person", "add", "ada", "--trust", "full")
        c("person", "add", "cy", "--trust", "full")
        c("person", "add", "bob", "--trust", "look")
        extra = ["--activities", str(self.catalog)] if activities else []
        c("agent", "add", "helper", "--command",
          agent_command(tmp_path, "script", str(self.queue)), *extra)
        c("set", "cooldown", "0")
        c("set", "idle_after", "0")  # no quiet looks
        c("set", "considers_per_hour", "0")  # no considers unless a test wants them
        c("tick", "--now", at(0))

    def say(self, *replies: str) -> None:
        script(self.queue, *replies)

    def post(self, seconds: float, who: str, text: str, mood: str = "lobby") -> int:
        return int(self.c("post", mood, "--as", who, "--at", at(seconds), text).out)

    def tick(self, seconds: float) -> dict:
        return json.loads(self.c("tick", "--now", at(seconds), "--wait", "--json").out)

    def wakes(self) -> list[dict]:
        return sorted(json.loads(self.c("wakes", "--json", "--limit", "1000").out),
                      key=lambda w: w["id"])

    def posts(self, mood: str = "lobby") -> list[dict]:
        return json.loads(self.c("posts", mood, "--limit", "500", "--json").out)

    def activities(self) -> list[dict]:
        return json.loads(self.c("activities", "--json").out)

    def why(self, mood: str = "lobby") -> dict:
        return json.loads(self.c("why", "helper", mood, "--json").out)["decisions"]

    def seen(self) -> list[dict]:
        return wakes_seen(self.tmp)

    def go_out(self, seconds: float = 1, activity: str = "creek_walk") -> float:
        """ada asks; helper says goodbye and goes out for *activity*; the second (on the
        timeline) it is due back, rounded up."""
        self.say(GOODBYE.format(activity))
        self.post(seconds, "ada", "@helper can you take a break?")
        self.tick(seconds + 1)
        (a,) = [a for a in self.activities() if a["status"] == "away"]
        return float(int(since_t0(a["due_at"])) + 1)


def kinds(room: Room) -> list[str]:
    return [w["kind"] for w in room.wakes()]
