"""``mood-poller demo``: the whole loop on a throwaway database, in scripted time.

It builds a small world (three Moods, three people, two agents running the
bundled example agent, :mod:`poller.kit.example_agent`), then plays a short
script: posts and sign-ins stamped at scripted times, and a poller cycle
(``Poller.tick(now)``) after each step, so a mention, a consider, a quiet
look and an arrival all happen within a few seconds of wall time.  Each wake
is printed (abridged) when it is recorded and each reply when its turn has
settled.  Nothing here touches the network or the operator's own database.
"""

from __future__ import annotations

import datetime as dt
import importlib.resources
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from poller import observe, tokens

from poller.config import Config
from poller.turns import launch
from poller.cycle import loop
from poller.store import db
from poller.store import Store

T0 = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.timezone.utc)
WAKE_LINES = 12  # at most this many lines of each wake are printed

PEOPLE = (("ada", "full"), ("bob", "look"), ("cy", "full"), ("dee", "look"))
MOODS = (("lobby", "The lobby"), ("garden", "Garden club"), ("studio", "The studio"))
AGENTS = ("helper", "scout")

# Per-Mood and per-agent settings that make the script short: quiet looks in
# the lobby after 10 minutes of scripted silence; no cooldown between turns.
SETTINGS = (
    ("cooldown", "0", None, None),
    ("idle_after", "600", "lobby", None),
    ("listening", "mentions", "lobby", "scout"),  # helper covers the lobby
    ("listening", "mentions", "garden", "helper"),  # scout covers the garden
)


@dataclass(frozen=True)
class Scene:
    """At *seconds* after T0: a post (who, mood, text), a sign-in (text None), or a cycle only."""

    seconds: float
    who: str = ""
    mood: str = ""
    text: Optional[str] = None
    signin: bool = False
    note: str = ""


SCRIPT = (
    Scene(0, note="first cycle: a new deployment starts from now"),
    Scene(60, "ada", "lobby", "@helper what time is the build review tomorrow?",
         note="a mention"),
    Scene(65),
    Scene(120, "bob", "garden", "the tomatoes are finally ripe"),
    Scene(125, "cy", "garden", "does anyone know when to pick basil?"),
    Scene(130, note="chatter not settled yet (consider_after is 10 s): nothing due"),
    Scene(140, note="a consider: people talked in the garden without naming anyone"),
    Scene(200, "cy", "studio", "@helper @scout can one of you check the mixing notes?",
         note="one post asks both agents"),
    Scene(205),
    Scene(700, note="the lobby has been quiet for 10 minutes: a quiet look"),
    Scene(800, "dee", "lobby", signin=True, note="dee signs in to the lobby: an arrival"),
    Scene(801),
)


def example_agent_command(python: str = sys.executable) -> str:
    """A shell command running the bundled example agent, installed or from a checkout."""
    try:
        script = importlib.resources.files("poller.kit").joinpath("example_agent.py")
        path = Path(str(script))
    except ModuleNotFoundError:
        path = Path(__file__).resolve().parent.parent / "memory-lane" / "example_agent.py"
    if not path.is_file():
        path = Path(__file__).resolve().parent.parent / "memory-lane" / "example_agent.py"
    return shlex.join([python, str(path)])


LETTER_START, LETTER_END = "A letter for your first turn in the Mood", "End of the letter"


def abridge(text: str, lines: int = WAKE_LINES) -> str:
    """A wake's non-blank lines up to its footer (at most *lines*), and what was left out."""
    kept = [line for line in text.splitlines() if line.strip()]
    if LETTER_START in text:  # an agent's first turn in a Mood: the letter, in one line
        start = next(i for i, line in enumerate(kept) if line.startswith(LETTER_START))
        end = next((i for i, line in enumerate(kept) if line.startswith(LETTER_END)), start)
        kept[start:end + 1] = [f"… (the letter of a first turn here: {end - start + 1} lines)"]
    body = next((i for i, line in enumerate(kept) if line.startswith("———")), len(kept))
    shown = min(body, lines)
    if shown == len(kept):
        return "\n".join(kept)
    return "\n".join(kept[:shown] + [f"… ({len(kept) - shown} more lines: the footer's how-tos)"
                                      if shown == body else f"… ({len(kept) - shown} more lines)"])


def build_world(store: Store, command: str, now: dt.datetime) -> None:
    for slug, title in MOODS:
        store.add_mood(slug, title, now)
    for handle, trust in PEOPLE:
        store.add_person(handle, trust, now)
    for handle in AGENTS:
        store.add_agent(handle, now, command=command, timeout=30)
    for key, value, mood, agent in SETTINGS:
        store.set_setting(key, value, now, mood=mood, agent=agent, note="demo")


MODEL_AGENT = "sage"  # the model agent `demo --model` adds beside the echo agents
MODEL_QUESTION = "@sage in two sentences: what is this place, and what can you do here?"
MODEL_TIMEOUT_S = 180.0


def add_model_agent(store: Store, options: dict, now: dt.datetime) -> None:
    """The model agent ``demo --model`` adds (options as ``agent add --model`` keeps them)."""
    from poller.turns.model import ModelWaker

    store.add_agent(MODEL_AGENT, now, waker=ModelWaker.name, timeout=MODEL_TIMEOUT_S,
                    options=options, shape=ModelWaker)


def run(directory: Optional[str] = None, echo: Callable[[str], None] = print,
        model: Optional[dict] = None, kept: bool = True) -> dict:
    """Play the script; returns a summary (db URL, wake ids by kind, replies).  With *model*
    (a model agent's options), a model agent answers one more question at the end.  Not
    *kept*: the caller removes the directory when the demo ends (no next steps to print)."""
    where = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="mood-poller-demo-"))
    where.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{where / 'moods.db'}"
    echo(f"demo database: {where / 'moods.db'} "
         + ("(kept: delete the directory when done)" if kept else
            "(removed when the demo ends; `demo --dir PATH` keeps it)"))
    engine = db.make_engine(url)
    try:
        db.upgrade(engine)
        cfg = Config(db_url=url)
        store = Store(engine, tokens.counter(cfg.encoding))
        build_world(store, example_agent_command(), T0)
        echo(f"Moods: {', '.join(s for s, _ in MOODS)}; people: "
             f"{', '.join(h for h, _ in PEOPLE)}; agents: {', '.join(AGENTS)} "
             "(both run the bundled example agent)\n")
        script = SCRIPT
        if model:
            add_model_agent(store, model, T0)
            script = SCRIPT + (Scene(900, "ada", "lobby", MODEL_QUESTION,
                                     note=f"a language model agent ({model['model']}) is asked"),
                               Scene(901))
            echo(f"and {MODEL_AGENT}, a language model agent ({model['model']})\n")
        summary = _play(store, cfg, echo, script)
    finally:
        engine.dispose()
    summary["db_url"] = url
    if kept:
        _next_steps(url, echo)
    return summary


def _play(store: Store, cfg: Config, echo: Callable[[str], None], script=SCRIPT) -> dict:
    # Turns run in this process: the agents are still real subprocesses.
    poller = loop.Poller(store, cfg, launcher=launch.ThreadLauncher(store, cfg))
    summary: dict = {"wakes": {}, "replies": []}
    try:
        for step in script:
            now = T0 + dt.timedelta(seconds=step.seconds)
            clock = f"[+{int(step.seconds):>3}s]"
            if step.note:
                echo(f"{clock} ({step.note})")
            if step.signin:
                store.add_signin(step.who, step.mood, now, label=step.who.capitalize())
                echo(f"{clock} {step.who} signs in to {step.mood}")
            elif step.text is not None:
                store.add_post(step.mood, step.who, step.text, now)
                echo(f"{clock} {step.mood} <{step.who}> {step.text}")
                continue  # posts land first; the next step runs the cycle
            report = poller.tick(now)
            for w in report.wakes:
                summary["wakes"].setdefault(w.kind, []).append(w.wake_id)
                echo(f"\n{clock} WAKE {w.wake_id}: {w.agent} in {w.mood}, {w.kind} "
                     f"(tools {w.tools})")
                echo(_indent(abridge(w.text)))
            poller.wait(MODEL_TIMEOUT_S + 10 if any(w.agent == MODEL_AGENT for w in report.wakes)
                        else 60)
            for w in report.wakes:
                summary["replies"].append(_reply(store, w.wake_id, clock, echo))
            if report.wakes:
                echo("")
    finally:
        poller.release()
    return summary


def _reply(store: Store, wake_id: int, clock: str, echo: Callable[[str], None]) -> dict:
    w = observe.wake(store, wake_id)
    text = ""
    if w["reply_post_id"]:
        for p in store.posts(w["mood"], limit=20):
            if p.id == w["reply_post_id"]:
                text = p.text
    if w["status"] == "replied":
        echo(f"{clock} REPLY {w['mood']} <{w['agent']}> {text}")
    elif w["status"] == "silent":
        echo(f"{clock} SILENT {w['agent']} in {w['mood']} stayed silent")
    else:
        echo(f"{clock} TURN {wake_id} {w['status']}: {w['error'] or ''}")
    return {"wake_id": wake_id, "agent": w["agent"], "mood": w["mood"], "kind": w["kind"],
            "status": w["status"], "text": text}


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _next_steps(url: str, echo: Callable[[str], None]) -> None:
    db_arg = shlex.quote(url)
    echo("Where to look next:")
    echo(f"  mood-poller --db {db_arg} wakes                      # every wake, newest first")
    echo(f"  mood-poller --db {db_arg} wakes show 1               # one wake in full")
    echo(f"  mood-poller --db {db_arg} why --mood garden --agent helper   # why it did not wake")
    echo(f"  mood-poller --db {db_arg} posts lobby                # the Mood, replies included")
    echo(f"  mood-poller --db {db_arg} status")


def store_has_model(store: Store) -> bool:
    from poller import errors

    try:
        return store.agent(MODEL_AGENT).waker == "model"
    except errors.NotFound:
        return False


def serve(url: str, port: int = 8470, echo: Callable[[str], None] = print) -> None:
    """After the script (``demo --serve``): the web page on the demo's Moods, with the poller
    running, until Ctrl-C; ada (an operator here) signs in with the printed link.

    The token is in the link's fragment (after ``#``), which a browser never sends
    to the server: the page reads it, signs in and drops it from the address bar.
    """
    from poller.clock import Clock
    from poller.store import access
    from poller.web import serving

    engine = db.make_engine(url)
    try:
        cfg = Config(db_url=url)
        store = Store(engine, tokens.counter(cfg.encoding))
        access.set_operator(store, "ada", True)
        token, _ = access.new_token(store, "ada", Clock()())

        def announce(base: str) -> None:
            echo(f"\nThe demo's Moods are live at {base} (this machine only). Sign in as ada "
                 f"(an operator): open this link and press Sign in:\n\n    {base}signin#token={token}\n\n"
                 "Mention @helper in the lobby and watch it answer"
                 + (f" (or @{MODEL_AGENT}, the language model)" if store_has_model(store) else "")
                 + "; Ctrl-C stops.")

        serving.run(store, cfg, Clock(), host="127.0.0.1", port=port, with_poller=True,
                    interval=cfg.poller.interval, announce=announce)
    finally:
        engine.dispose()
