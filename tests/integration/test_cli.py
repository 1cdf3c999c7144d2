"""The CLI contract: names, output shapes, and a clear one-line error for bad input.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json

import pytest

from support.cli import Cli


def setup_lobby(cli):
    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", "cat", "--timeout", "30")


def test_contract_round_trip(any_cli):
    cli = any_cli
    setup_lobby(cli)
    moods = json.loads(cli("mood", "list", "--json").out)
    assert [(m["slug"], m["title"], m["archived"]) for m in moods] == [("lobby", "The lobby", False)]
    agents = json.loads(cli("agent", "list", "--json").out)
    assert agents[0]["handle"] == "bot" and agents[0]["timeout"] == 30
    first = cli("post", "lobby", "--as", "ada", "--at", "2026-11-30T10:00:00Z", "hello @bot").out
    assert first.strip().isdigit()
    second = cli("post", "lobby", "--as", "bot", "--reply-to", first.strip(), "-",
                 input="from stdin\n").out.strip()
    posts = json.loads(cli("posts", "lobby", "--json").out)
    assert [p["id"] for p in posts] == [int(first), int(second)]
    keys = {"id", "mood", "sender", "created_at", "kind", "text", "reply_to", "tokens"}
    assert keys <= set(posts[0])
    assert posts[0]["created_at"] == "2026-11-30T10:00:00Z"
    assert posts[1]["reply_to"] == int(first) and posts[1]["text"] == "from stdin\n"
    assert posts[0]["tokens"] > 0
    cli("signin", "ada", "--mood", "lobby", "--tier", "wiki", "--label", "laptop")
    out = cli("set", "listening", "off", "--mood", "lobby", "--until", "2099-01-01T00:00:00Z",
              "--by", "ada", "--note", "maintenance").out
    assert "listening: on -> off" in out
    got = json.loads(cli("get", "--mood", "lobby", "--agent", "bot", "--json").out)
    assert got["listening"] == {"value": "off", "slot": "mood", "until": "2099-01-01T00:00:00Z"}
    assert got["idle_after"]["slot"] == "default"
    one = json.loads(cli("get", "discretion", "--json").out)
    assert list(one) == ["discretion"]
    cli("mood", "archive", "lobby")
    assert json.loads(cli("mood", "list", "--json").out)[0]["archived"] is True


def snapshot(cli):
    return (cli("mood", "list", "--json").out, cli("agent", "list", "--json").out,
            cli("person", "list", "--json").out, cli("posts", "lobby", "--json").out,
            cli("get", "--mood", "lobby", "--json").out)


BAD = [
    (("mood", "add", "Bad Slug"), "invalid Mood slug"),
    (("mood", "add", "lobby"), "already exists"),
    (("mood", "archive", "nowhere"), "no Mood 'nowhere'"),
    (("person", "add", "ADA"), "already taken"),
    (("person", "add", "bad handle!"), "invalid handle"),
    (("person", "add", "x", "--trust", "total"), "total"),
    (("agent", "add", "bot2"), "exactly one of --command"),
    (("agent", "add", "bot2", "--command", "cat", "--timeout", "-3"), "timeout"),
    (("post", "nowhere", "--as", "ada", "hi"), "no Mood"),
    (("post", "lobby", "--as", "ghost", "hi"), "no person or agent 'ghost'"),
    (("post", "lobby", "--as", "ada", "   "), "empty post"),
    (("post", "lobby", "--as", "ada", "x" * 70_000), "post too long"),
    (("post", "lobby", "--as", "ada", "--at", "yesterday", "hi"), "invalid --at"),
    (("post", "lobby", "--as", "ada", "--reply-to", "999", "hi"), "no post 999"),
    (("signin", "ada", "--mood", "nowhere"), "no Mood"),
    (("set", "loudness", "11"), "unknown setting"),
    (("set", "idle_after", "999999999"), "between 0 and 604800"),
    (("set", "consider_after", "soon"), "whole number"),
    (("set", "discretion", "chatty", "--until", "2099-01-01"), "only to listening"),
    (("set", "listening", "off", "--until", "2000-01-01"), "in the future"),
    (("set", "discretion", "chatty", "--agent", "ada"), "not an agent"),
    (("set", "discretion", "chatty", "--by", "ghost"), "ghost"),
    (("get", "loudness"), "unknown setting"),
    (("posts", "lobby", "--limit", "0"), "--limit"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a)[:40] for a, _ in BAD])
def test_bad_input_is_one_clear_line_and_writes_nothing(cli, args, message):
    setup_lobby(cli)
    cli("post", "lobby", "--as", "ada", "a first post")
    before = snapshot(cli)
    r = cli.fails(*args)
    assert message in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert snapshot(cli) == before


def test_invalid_utf8_on_stdin_is_refused(cli):
    setup_lobby(cli)
    r = cli.fails("post", "lobby", "--as", "ada", "-", input=b"\xff\xfe bad")
    assert "UTF-8" in r.err
    assert json.loads(cli("posts", "lobby", "--json").out) == []


def test_unopenable_database_url(tmp_path):
    r = Cli("postgresql+psycopg://u:hunter2@127.0.0.1:1/x").fails("mood", "list")
    assert "cannot open database" in r.err and "hunter2" not in r.err
    assert r.code == 75  # nothing listens there: it may come back (tests/test_exit_codes.py)
    r = Cli("nonsense://").fails("mood", "list")
    assert "database" in r.err
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = Cli(f"sqlite:///{blocker}/sub/moods.db").fails("init")
    assert "cannot" in r.err


def test_missing_config_file_and_env_precedence(tmp_path, sqlite_url, monkeypatch):
    r = Cli(sqlite_url, str(tmp_path / "absent.toml")).fails("init")
    assert "cannot read" in r.err
    other = tmp_path / "from-env.db"
    monkeypatch.setenv("MOOD_POLLER_DB", f"sqlite:///{other}")
    Cli()("init")
    assert other.exists()
    path = tmp_path / "c.toml"
    path.write_text(f"[database]\nurl = 'sqlite:///{tmp_path / 'from-file.db'}'\n")
    monkeypatch.delenv("MOOD_POLLER_DB")
    Cli(config=str(path))("init")
    assert (tmp_path / "from-file.db").exists()


def test_default_database_lives_under_xdg_data_home(tmp_path):
    Cli()("init")
    assert (tmp_path / "xdg-data" / "memory-lane" / "moods.db").exists()




def listening_lobby(cli, *posts: tuple[str, str]) -> None:
    """bot in lobby, listening for mentions only, the poller's first cycle at 12:00, ada's
    *posts* (when, text), a cycle at 12:05."""
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", "cat")
    cli("set", "listening", "mentions", "--mood", "lobby")
    cli("tick", "--now", "2026-11-30T12:00:00Z")
    for at, said in posts:
        cli("post", "lobby", "--as", "ada", "--at", at, said)
    cli("tick", "--now", "2026-11-30T12:05:00Z")


def test_why_says_each_reason_in_a_sentence(cli):
    import json

    listening_lobby(cli, ("2026-11-30T12:00:01Z", "nice weather"))
    out = cli("why", "--mood", "lobby", "--agent", "bot").out
    assert ("skipped:listening-mentions" in out
            and "it listens only for mentions here, and this was not one" in out), out
    said = json.loads(cli("why", "--mood", "lobby", "--agent", "bot", "--json").out)
    assert said["decisions"]["consider"]["sentence"].startswith("it listens only for mentions")


ISO_TIME = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}"  # the machine's shape: --json keeps it


def test_every_time_a_person_reads_is_one_shape_with_its_zone(cli):
    """why, status, posts, wakes, search and set print 2026-11-30 12:05 UTC; --json ISO."""
    import re

    listening_lobby(cli, ("2026-11-30T12:00:01.588106Z", "nice weather"),
                    ("2026-11-30T12:01:00Z", "@bot hello"))
    outs = {
        "why": cli("why", "bot", "lobby", "--now", "2026-11-30T12:06:00Z").out,
        "status": cli("status", "--now", "2026-11-30T12:06:00Z").out,
        "posts": cli("posts", "lobby").out,
        "wakes": cli("wakes").out,
        "search": cli("search", "weather").out,
        "set": cli("set", "listening", "off", "--mood", "lobby",
                   "--until", "2099-01-01T00:00:00Z").out,
    }
    for name, out in outs.items():
        assert not re.search(ISO_TIME, out), (name, out)
    assert "at 2026-11-30 12:05 UTC" in outs["why"], outs["why"]
    assert "#1 [ada, 2026-11-30 12:00 UTC] nice weather" in outs["posts"]
    assert "2026-11-30 12:05 UTC" in outs["wakes"]
    assert "[ada, 2026-11-30 12:00 UTC]" in outs["search"]
    assert outs["set"].strip().endswith("until 2099-01-01 00:00 UTC")
    said = json.loads(cli("why", "bot", "lobby", "--json").out)
    assert re.fullmatch(ISO_TIME + r".*Z", said["decisions"]["mention"]["at"])
