"""The command line is consistent: --json on every listing and acting command (and JSON
whenever it is given), help without reStructuredText markup, usage errors exit 2,
``why`` with or without its option names, ``set --help`` naming every key, and the
``wakes`` filters.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json

import pytest

from support.cli import Cli

T0 = "2026-05-04T09:00:00Z"


# -- --json everywhere ----------------------------------------------------------------------------

def js(c: Cli, *args: str):
    r = c(*args, "--json")
    return json.loads(r.out)


def test_json_is_printed_whenever_asked_for(cli):
    c = cli
    assert js(c, "mood", "add", "lobby", "--title", "The lobby")["slug"] == "lobby"
    assert js(c, "person", "add", "ada", "--trust", "full") == {
        **js(c, "person", "list")[0]}
    bot = js(c, "agent", "add", "bot", "--command", "cat >/dev/null; echo fine")
    assert bot["handle"] == "bot" and bot["waker"] == "command"
    svc = js(c, "agent", "add", "svc", "--url", "https://svc.test/wake",
             "--header", "Authorization:Bearer ${SVC_TOKEN}")
    assert svc["options"]["headers"] == {"Authorization": "***"}
    assert "SVC_TOKEN" not in json.dumps(svc)
    assert svc == js(c, "agent", "list")[1]
    first = js(c, "tick", "--now", T0)
    assert first["started"] is True and first["wakes"] == [] and first["decisions"] == []
    posted = js(c, "post", "lobby", "--as", "ada", "--at", "2026-05-04T09:00:01Z", "@bot hi")
    assert posted["id"] == js(c, "posts", "lobby")[-1]["id"] and posted["text"] == "@bot hi"
    seen = js(c, "signin", "ada", "--mood", "lobby", "--at", "2026-05-04T09:00:01Z")
    assert seen["handle"] == "ada" and seen["mood"] == "lobby" and isinstance(seen["id"], int)
    preview = js(c, "preview", "--mood", "lobby", "--agent", "bot", "--kind", "mention",
                 "--now", "2026-05-04T09:00:02Z")
    assert (preview["kind"], preview["tools"]) == ("mention", "full")
    assert preview["text"].startswith('<mood-wake mood="lobby" reason="mention">')
    assert preview["answers"] == [posted["id"]]
    assert "frames" in js(c, "preview", "--frames")
    report = js(c, "tick", "--now", "2026-05-04T09:00:02Z", "--wait")
    assert report["posts_read"] == 1 and report["scram"] is False
    (woke,) = report["wakes"]
    assert (woke["agent"], woke["mood"], woke["kind"]) == ("bot", "lobby", "mention")
    assert woke["answers"] == [posted["id"]]
    assert {"agent": "bot", "mood": "lobby", "kind": "mention", "code": "woke"} in report["decisions"]
    assert [w["id"] for w in js(c, "wakes")] == [woke["id"]]
    assert js(c, "wakes", "show", str(woke["id"]))["text"] == preview["text"]
    change = js(c, "set", "discretion", "chatty", "--mood", "lobby")
    assert change == {"key": "discretion", "old": "normal", "new": "chatty", "slot": "mood",
                      "mood": "lobby", "agent": None, "until": None}
    assert js(c, "scram", "--by", "ada") == {"scram": True, "lifted": False, "turns_ended": 0}
    held = js(c, "tick", "--now", "2026-05-04T09:00:05Z")
    assert held["scram"] is True and held["wakes"] == []
    assert js(c, "scram", "--lift")["lifted"] is True
    assert js(c, "scram", "--lift")["lifted"] is False
    assert js(c, "mood", "archive", "lobby")["archived"] is True


def test_tick_json_when_another_poller_holds_the_lock(cli, monkeypatch):
    from poller.cycle.context import TickReport
    from poller.cycle import loop

    def busy(self, now, *, dry_run=False):
        return TickReport(started=False, holder="elsewhere until later")

    monkeypatch.setattr(loop.Poller, "tick", busy)
    r = cli("tick", "--json")
    assert json.loads(r.out)["started"] is False
    assert json.loads(r.out)["holder"] == "elsewhere until later"


# -- why: positional or named ---------------------------------------------------------------------

def test_why_takes_handle_and_slug_either_way(cli):
    cli("mood", "add", "lobby")
    cli("agent", "add", "bot", "--command", "cat")
    named = cli("why", "--agent", "bot", "--mood", "lobby", "--json").out
    assert cli("why", "bot", "lobby", "--json").out == named
    assert cli("why", "bot", "--mood", "lobby", "--json").out == named
    assert json.loads(named)["agent"] == "bot" and json.loads(named)["mood"] == "lobby"


@pytest.mark.parametrize("args", [(), ("bot",), ("--agent", "bot"), ("--mood", "lobby"),
                                  ("bot", "lobby", "--agent", "other")])
def test_why_without_both_names_is_a_usage_error(cli, args):
    cli("mood", "add", "lobby")
    cli("agent", "add", "bot", "--command", "cat")
    r = cli.fails("why", *args)
    assert r.code == 2 and "see `mood-poller why --help`" in r.err


# -- missing what a command needs is a usage error -------------------------------------------------

@pytest.mark.parametrize("args", [
    ("post", "lobby", "hello"), ("post",), ("signin", "ada"), ("set", "discretion"),
    ("preview", "--mood", "lobby"), ("preview",), ("person", "set", "ada"),
    ("wakes", "show"), ("mood", "add"), ("person", "add"), ("agent", "add"), ("why",),
])
def test_missing_required_input_exits_2(cli, args):
    r = cli.fails(*args)
    assert r.code == 2, r.err


# -- wakes filters --------------------------------------------------------------------------------

def test_wakes_filter_by_status_since_and_kind(cli):
    c = cli
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "good", "--command", "cat >/dev/null; echo fine")
    c("agent", "add", "bad", "--command", "cat >/dev/null; exit 3")
    c("tick", "--now", T0)
    c("post", "lobby", "--as", "ada", "--at", "2026-05-04T09:00:01Z", "@good one")
    c("tick", "--now", "2026-05-04T09:00:02Z", "--wait")
    c("post", "lobby", "--as", "ada", "--at", "2026-05-04T10:00:01Z", "@bad two")
    c("tick", "--now", "2026-05-04T10:00:02Z", "--wait")
    every = js(c, "wakes")
    assert [(w["agent"], w["status"]) for w in every] == [("bad", "failed"), ("good", "replied")]
    assert [w["agent"] for w in js(c, "wakes", "--status", "failed")] == ["bad"]
    assert [w["agent"] for w in js(c, "wakes", "--status", "replied")] == ["good"]
    assert js(c, "wakes", "--status", "cut_off") == []
    assert [w["agent"] for w in js(c, "wakes", "--since", "2026-05-04T10:00:00Z")] == ["bad"]
    assert len(js(c, "wakes", "--since", "2026-05-04T09:00:00Z")) == 2
    assert js(c, "wakes", "--since", "2026-05-04T11:00:00Z") == []
    assert js(c, "wakes", "--kind", "cut-off") == []
    assert len(js(c, "wakes", "--kind", "mention", "--status", "replied")) == 1
    table = c("wakes", "--status", "failed").out
    assert "bad" in table and "good" not in table


@pytest.mark.parametrize("args, message", [
    (("--status", "done"), "'done' is not one of"),
    (("--since", "yesterday"), "--since"),
])
def test_bad_wakes_filters_are_refused(cli, args, message):
    r = cli.fails("wakes", *args)
    assert message in r.err and len(r.err.strip().splitlines()) == 1


# -- logging: global flags, every command ---------------------------------------------------------

@pytest.fixture
def closed_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def test_the_global_log_flags_reach_a_wiki_warning_from_dials(tmp_path, sqlite_url, closed_port):
    path = tmp_path / "config.toml"
    path.write_text(f'[wiki]\nsite = "127.0.0.1:{closed_port}"\nscheme = "http"\ntimeout = 2\n')
    c = Cli(sqlite_url, str(path))
    c("init")
    r = c("--log-json", "dials", "--refresh", ok=False)
    assert r.code == 1
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert lines[-1].startswith("mood-poller: the dials page could not be refreshed")
    records = [json.loads(line) for line in lines[:-1]]
    assert any(x.get("action") == "dial_refresh_failed" and x["level"] == "warning"
               for x in records), r.err
    text = c("dials", "--refresh", ok=False).err
    assert " WARNING dial wording not refreshed" in text and not text.lstrip().startswith("{")


def test_quiet_leaves_warnings_only_and_the_per_command_flags_still_work(cli):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", "cat >/dev/null; echo fine")
    cli("tick", "--now", T0)
    at = iter(range(1, 60))

    def mention_then_tick(before: tuple[str, ...] = (), after: tuple[str, ...] = ()) -> str:
        """Post a mention, run a tick with *before* ahead of it and *after* behind it:
        what it logged."""
        n = next(at)
        cli("post", "lobby", "--as", "ada", "--at", f"2026-05-04T09:{n:02d}:00Z", "@bot hi")
        return cli(*before, "tick", "--now", f"2026-05-04T09:{n:02d}:30Z", "--wait", *after).err

    assert "bot in lobby: mention woke" in mention_then_tick()
    assert mention_then_tick(before=("-q",)).strip() == ""
    assert mention_then_tick(after=("--quiet",)).strip() == ""  # tick's own alias
    records = [json.loads(line) for line in mention_then_tick(before=("--log-json",)).splitlines()
               if line.strip()]
    assert ("decision", "woke") in [(x["action"], x.get("code")) for x in records]
    assert cli.fails("-q", "tick", "-v").code == 2
    assert cli.fails("-q", "-v", "status").code == 2


def test_person_and_agent_changes_print_json(cli):
    import json

    cli("person", "add", "ada")
    assert json.loads(cli("person", "set", "ada", "--trust", "full", "--json").out)["trust"] == "full"
    assert json.loads(cli("person", "trust", "ada", "look", "--json").out)["trust"] == "look"
    cli("agent", "add", "bot", "--command", "cat")
    out = json.loads(cli("agent", "set", "bot", "--command", "tac", "--json").out)
    assert out["agent"] == "bot" and out["changed"]["command"] == "cat -> tac"
    gone = json.loads(cli("agent", "remove", "bot", "--json").out)
    assert gone["removed"]["handle"] == "bot" and gone["ended_wakes"] == []
    assert json.loads(cli("person", "remove", "ada", "--json").out)["removed"]["handle"] == "ada"


def test_an_agent_with_no_waker_or_two_is_a_usage_error(cli):
    assert cli.fails("agent", "add", "bot").code == 2
    assert cli.fails("agent", "add", "bot", "--command", "cat", "--url", "http://127.0.0.1:9/").code == 2
