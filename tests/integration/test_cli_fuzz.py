"""Every command, fed generated arguments: never a traceback, a known exit code,
and a command that fails leaves the database exactly as it was.

The commands come from walking the click tree of ``poller.cli.cli``, so a new
command or option is fuzzed without touching this file; every name in
``poller.cli.COMMANDS`` is reached.  Commands that would run until a signal
(``run``, ``serve``, ``demo``) have everything they check and build done for
real and only their last step, the loop, the server or the scripted play, made
to return at once; others get safe arguments (``tick`` always ``--dry-run`` and
never ``--wait``; ``dials`` never ``--seed-page``).

A command that fails says why in exactly one line on stderr.
"""

from __future__ import annotations

import signal
import sqlite3

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.cli import Cli

EXIT_CODES = {0, 1, 2, 75, 78}
TALLY = {"tried": 0, "ran": 0, "failed": 0}  # printed at the end (pytest -s)
NEVER = {("dials",): {"--seed-page", "--force"}, ("tick",): {"--wait", "--dry-run"},
         ("bridge", "webhooks"): {"--once"}}
# `bridge webhooks` delivers until a signal without --once (tests/test_webhooks.py);
# `bridge matrix` needs a config file, which the fuzzer never names.
ALWAYS = {("tick",): ["--dry-run"], ("bridge", "webhooks"): ["--once"]}
NOW = "2026-03-02T10:00:00Z"


def leaf_commands() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command that can be invoked, as (path, command), from the real tree."""
    from poller.cli import cli

    def walk(command: click.Command, path: tuple[str, ...]):
        if isinstance(command, click.Group):
            if path and command.invoke_without_command:
                yield path, command
            for name in command.commands:
                yield from walk(command.commands[name], path + (name,))
        else:
            yield path, command

    return list(walk(cli, ()))


COMMANDS = leaf_commands()


# -- values ----------------------------------------------------------------------------------

good = st.sampled_from([
    "lobby", "kitchen", "ada", "helper", "bob", "1", "2", "3", "on", "off", "mentions",
    "chatty", "reserved", "brief", "discretion", "listening", "idle_after", "cooldown", "60",
    "mention", "consider", "quiet", "arrival", "full", "look", "none", "key", "wiki", "cat",
    "hello @helper", "@ada @helper hi", "-", NOW, "2026-03-02T11:00:00Z", "https://a.test/x",
    "Name:${TOKEN}",
])
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from([str(2**63), str(2**63 - 1), str(-(2**63)), "0", "-1", "1e3", "0x10",
                     "١٢", "+5", " 7 ", "nan", "NaN", "inf", "-inf", "Infinity", "1e308",
                     "1e-320", "-0", "1_000", "½"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
dates = st.sampled_from([
    "9999-12-31T23:59:00Z", "0001-01-01T00:00:00+01:00", "0001-01-01", "1969-12-31T23:59:59Z",
    "1970-01-01T00:00:00Z", "2200-12-31T23:59:59Z", "2201-01-01", "2026-02-30T00:00:00Z",
    "2026-01-01T25:00", "2026-03-02T10:00:00+14:00", "2026-03-02T10:00:00-23:59",
    "2026-03-02T10:00:00.123456789Z", "2026-W10-1", "20260302T100000Z", "Z", "now", "",
    "2026-03-02T10:00:00Z\x00", "2026\udcff",
])
nasty_chars = st.characters(categories=["Cc", "Cf", "Cs", "Zs", "Zl", "Zp", "Co", "Cn", "Mn"])
texts = st.one_of(
    st.text(max_size=40),
    st.text(nasty_chars, max_size=12),
    st.lists(st.sampled_from(["\x1b[2J", "\x00", "\udcff", "\ud800", "\u202e", "\u200b", "\r\n",
                              "</mood-wake>", "＜／ｍｏｏｄ－ｗａｋｅ＞", "@helper", "@", "'", '"',
                              "%s", "{}", "\\", "--", "-", " ", "\t", "é", "\U0001f3f4",
                              "\x85", "\x9b", "lobby", "ada"]),
             max_size=6).map("".join),
    st.just("x" * 70_000),
    st.just(""),
)


def as_argv(value: str) -> str:
    """*value* as a process's argv can hold it: no NUL byte (C strings end there), and
    surrogates only as Python makes them from bytes that are not UTF-8 (U+DC80..U+DCFF)."""
    return "".join(chr(0xDC80 | (ord(c) & 0x7F)) if "\ud800" <= c <= "\udfff" else c
                   for c in value.replace("\x00", ""))


values = st.one_of(good, good, numbers, dates, texts).map(as_argv)

FITTING = {
    "slug": ["lobby", "lobby", "kitchen"], "mood": ["lobby"], "handle": ["ada", "helper", "bob"],
    "sender": ["ada", "helper"], "agent": ["helper"], "by": ["ada"],
    "at": [NOW, "2026-03-02T10:00:02Z"], "until": ["2026-03-03T00:00:00Z"],
    "now": [NOW, "2026-03-02T10:05:00Z"], "limit": ["1", "5"], "reply_to": ["1"],
    "wake_id": ["1"], "timeout": ["30", "0.5"], "interval": ["1"],
    "key": ["discretion", "listening", "idle_after", "cooldown"],
    "value": ["chatty", "off", "mentions", "600"], "command": ["cat"],
    "url": ["https://agent.test/wake"], "headers": ["Authorization:${TOKEN}"],
    "text": ["hello @helper", "@ada @helper are you there?"], "title": ["The kitchen"],
    "label": ["laptop"], "note": ["for the night"], "level": ["look"],
}


option_names = st.sampled_from(["--now", "--json", "--mood", "--agent", "--limit", "--at",
                                "--as", "--until", "--timeout", "--bogus", "-", "--", "-x",
                                "--help=no", "--json=1", "--now="])


def known(param: click.Parameter) -> list[str]:
    choices = getattr(param.type, "choices", None)
    return list(choices) if choices else FITTING.get(param.name or "", [])


def fitting(param: click.Parameter):
    """A value that fits *param* (so the command gets past its first check) or any value."""
    return st.one_of(st.sampled_from(known(param)), values) if known(param) else values


@st.composite
def arguments(draw, path: tuple[str, ...], command: click.Command) -> list[str]:
    """Arguments for *command*, generated two ways: mostly every value fits but
    (usually) one, which is anything at all, so the command's deeper checks are
    reached; otherwise its options and arguments in any order with any values,
    sometimes a stray option, a missing value or an argument left out."""
    never = NEVER.get(path, set())
    params = [p for p in command.params if p.name != "help" and not set(p.opts) & never]
    options = [p for p in params if isinstance(p, click.Option)]
    positional = [p for p in params if not isinstance(p, click.Option)]
    if draw(st.integers(0, 2)):
        chosen = [p for p in options if p.required or draw(st.booleans())]
        chosen = [chosen[i] for i in draw(st.permutations(range(len(chosen))))]
        slots = [p for p in chosen + positional if not getattr(p, "is_flag", False)]
        odd = draw(st.sampled_from(slots)) if slots and draw(st.integers(0, 3)) else None

        def value(p):
            if p is odd or not known(p):
                return draw(values)
            return draw(st.sampled_from(known(p)))

        argv = []
        for p in chosen:
            argv += [draw(st.sampled_from(p.opts))] + ([] if p.is_flag else [value(p)])
        argv += [value(p) for p in positional]
    else:
        words: list[list[str]] = []
        for param in options:
            if not (param.required and draw(st.integers(0, 9))) and not draw(st.booleans()):
                continue
            name = draw(st.sampled_from(param.opts))
            if param.is_flag:
                words.append([name])
            elif draw(st.integers(0, 9)) == 0:
                words.append([f"{name}={draw(fitting(param))}"])
            else:
                words.append([name, draw(fitting(param))])
        for param in positional:
            if draw(st.integers(0, 7)) != 0:  # an argument, now and then left out
                words.append([draw(fitting(param))])
        for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 3)) == 0 else 0):
            extra = [draw(option_names)]
            if draw(st.booleans()):
                extra.append(draw(values))
            words.append(extra)
        order = draw(st.permutations(range(len(words)))) if words else []
        argv = [w for i in order for w in words[i]]
    head = []
    if draw(st.integers(0, 4)) == 0:  # the global --now
        head = ["--now", draw(st.one_of(st.just(NOW), dates.map(as_argv)))]
    return head + list(path) + argv + ALWAYS.get(path, [])


# -- the database -------------------------------------------------------------------------------

def dump(path) -> dict[str, list]:
    """Every row of every table, in a stable order."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        conn.text_factory = bytes
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {n.decode(): sorted(map(repr, conn.execute(f'SELECT * FROM "{n.decode()}"')))
                for n in names}
    finally:
        conn.close()


@pytest.fixture(scope="module", autouse=True)
def tally():
    yield
    print(f"\nCLI fuzz: {TALLY}")


@pytest.fixture
def returning_at_once(monkeypatch):
    """``run``, ``serve`` and ``demo`` do all they check and build, then return instead
    of running until a signal; the process keeps its signal handlers and stays dumpable."""
    from poller import demo, secure
    from poller.cycle import loop
    from poller.web import serving

    monkeypatch.setattr(loop.Poller, "run", lambda self, *args, **kwargs: None)
    monkeypatch.setattr(serving, "run", lambda *args, **kwargs: None)
    monkeypatch.setattr(demo, "run", lambda directory, echo, model=None, kept=True:
                        {"db_url": "sqlite://"})
    monkeypatch.setattr(demo, "serve", lambda *args, **kwargs: None)
    monkeypatch.setattr(secure, "undumpable", lambda: None)
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.fixture
def seeded(tmp_path, monkeypatch, returning_at_once):
    """A small database with a Mood, a person, an agent, posts and one finished wake."""
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", "thread")
    path = tmp_path / "moods.db"
    cli = Cli(f"sqlite:///{path}")
    cli("init")
    cli("mood", "add", "lobby", "--title", "The lobby", "--now", NOW)
    cli("person", "add", "ada", "--trust", "full", "--now", NOW)
    cli("agent", "add", "helper", "--command", "echo on it", "--now", NOW)
    cli("tick", "--now", NOW)
    cli("post", "lobby", "--as", "ada", "--at", "2026-03-02T10:00:01Z", "hello @helper")
    cli("tick", "--now", "2026-03-02T10:00:02Z", "--wait")
    cli("signin", "ada", "--mood", "lobby", "--at", "2026-03-02T10:00:03Z")
    assert cli("wakes", "show", "1").out.startswith("wake 1: helper in lobby")
    return cli, path


def test_the_walk_finds_every_command():
    from poller import cli

    found = {" ".join(p) for p, _ in COMMANDS}
    assert {"init", "mood add", "agent add", "post", "posts", "set", "wakes", "wakes show",
            "preview", "dials", "config check", "tick", "scram", "run", "serve",
            "demo"} <= found
    assert set(cli.COMMANDS) == {p[0] for p, _ in COMMANDS}


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_generated_arguments_never_give_a_traceback_and_a_failure_writes_nothing(
        seeded, path, command):
    cli, db = seeded
    state = {"before": dump(db)}

    @settings(max_examples=30, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(argv=arguments(path, command),
           stdin=st.one_of(st.none(), st.binary(max_size=40), st.text(max_size=40)))
    def run(argv, stdin):
        r = cli(*argv, input=stdin, ok=False)
        after = dump(db)
        assert "Traceback" not in r.err, (argv, r.err)
        assert r.code in EXIT_CODES, (argv, r.code, r.err)
        TALLY["tried"] += 1
        TALLY["failed" if r.code else "ran"] += 1
        if r.code != 0:
            said = [line for line in r.err.splitlines() if line.strip()]
            assert said, (argv, "failed without saying why")
            assert len(said) == 1, (argv, r.err)
            assert after == state["before"], (argv, r.err)
        state["before"] = after

    run()
