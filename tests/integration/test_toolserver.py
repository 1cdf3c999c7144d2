"""The Moods as tools: ``mood-poller mcp`` driven by the MCP SDK's own client.

A person's token over stdio (a real ``mood-poller mcp`` process) and over HTTP (``/mcp``
under a real server); a turn's capability through the stand-in ``claude``, which
starts the server its ``--mcp-config`` names and calls it as Claude Code would, the
permission prompt included, with the poller's real runner and door; approvals
answered in the Mood, from the command line, by a person who may not, and by
nobody in time; a capability refused once its turn is over or its time is up.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import anyio
import pytest

from poller.store import capabilities
from poller.toolserver import callers
from support.fakes import claude_calls, write_claude
from support.timeline import T0, at
from support.turns import post, posts, tick, wakes
from support.waiting import wait_for
from support.webserver import store_for

READING = {"read_history", "read_post", "who_is_here", "list_moods", "search"}


@pytest.fixture
def room(cli, tmp_path):
    """lobby (with an old post about whales) and kitchen; ada (full), bob (look), eve
    (none); the stand-in claude as the agent ``claude``."""
    cli("mood", "add", "lobby")
    cli("mood", "add", "kitchen")
    cli("person", "add", "ada", "--trust", "full")
    cli("person", "add", "bob", "--trust", "look")
    cli("person", "add", "eve", "--trust", "none")
    cli("set", "cooldown", "0")
    cli("set", "considers_per_hour", "0")
    cli("set", "idle_after", "0")
    bindir = tmp_path / "bin"
    exe = write_claude(bindir, mode="mcp", reply="Done, @ada.")
    cli("agent", "add", "claude", "--claude-code", "--claude-bin", str(exe),
        "--session-dir", str(tmp_path / "sessions"))
    tick(cli, 0)
    post(cli, 1, "ada", "The humpback whale sings at dawn in the bay.")
    post(cli, 1, "bob", "Soup tonight.", mood="kitchen")
    cli.bindir = bindir
    return cli


def steps(cli, *todo) -> None:
    (cli.bindir / "claude-mcp").write_text(json.dumps(list(todo)))


def results(cli) -> list[dict]:
    log = cli.bindir / "claude-mcp.jsonl"
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def token(cli, handle: str) -> str:
    out = cli("person", "token", handle).out
    return next(w for w in out.split() if w.startswith("mpt_"))


# -- A turn ---------------------------------------------------------------------------------


def test_a_full_turn_lists_reads_and_acts_through_its_tools(room):
    steps(room, {"list": True}, {"call": "search", "args": {"query": "whale"}},
          {"call": "read_history", "args": {}},
          {"call": "change_settings", "args": {"settings": {"verbosity": "brief"}}},
          {"call": "read_post", "args": {"post_id": 999}})
    post(room, 2, "ada", "@claude what sings at dawn?")
    tick(room, 3)
    (w,) = wakes(room)
    assert w["status"] == "replied", w
    listed, found, history, changed, missing = results(room)
    assert READING | {"approve", "change_settings", "handoff"} <= set(listed["tools"])
    assert not found["error"] and "«whale»" in found["text"].lower()
    assert "humpback" in history["text"] and "what sings at dawn" in history["text"]
    assert not changed["error"], changed
    assert missing["error"] and "no post #p-999" in missing["text"]
    # The block the acting tool accepted was applied with the reply, which is posted.
    got = json.loads(room("get", "verbosity", "--mood", "lobby", "--agent", "claude",
                          "--json").out)
    assert got["verbosity"]["value"] == "brief"
    assert posts(room)[-1]["text"] == "Done, @ada."
    argv = claude_calls(room.bindir)[-1]["argv"]
    assert argv[argv.index("--permission-prompt-tool") + 1] == "mcp__mood__approve"
    assert "mcp__mood" in argv[argv.index("--allowedTools") + 1].split(",")
    # The token is in the config file only, never on the command line nor kept in clear.
    assert not any(a.startswith(capabilities.TOKEN_PREFIX) for a in argv)
    turn_token = listed["token"]
    store = store_for(room.db_url)
    cap, why = capabilities.find(store, turn_token, T0 + dt.timedelta(seconds=4))
    assert cap is None and "revoked" in why  # the turn is over: so is its capability


def test_a_look_only_turn_gets_reading_tools_only(room):
    steps(room, {"list": True},
          {"call": "change_settings", "args": {"settings": {"verbosity": "brief"}}},
          {"call": "search", "args": {"query": "soup"}})
    # Sandboxed with no network at all: the tools are reached through the turn's socket.
    room("agent", "set", "claude", "--network", "off")
    post(room, 2, "bob", "@claude anything about soup?")  # look trust: a look-only turn
    tick(room, 3)
    (w,) = wakes(room)
    assert (w["status"], w["tools"]) == ("replied", "look")
    listed, acted, soup = results(room)
    assert set(listed["tools"]) == READING
    assert acted["error"] and "look-only" in acted["text"]
    assert not soup["error"] and "kitchen" in soup["text"]
    argv = claude_calls(room.bindir)[-1]["argv"]
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    assert {f"mcp__mood__{t}" for t in READING} <= set(allowed)
    assert "mcp__mood__change_settings" not in allowed and "--permission-prompt-tool" not in argv
    got = json.loads(room("get", "verbosity", "--mood", "lobby", "--agent", "claude",
                          "--json").out)
    assert got["verbosity"]["value"] == "normal"


def test_a_capability_is_refused_once_revoked_or_expired(room, tmp_path):
    steps(room, {"list": True})
    post(room, 2, "ada", "@claude hello")
    tick(room, 3)
    (listed,) = results(room)
    # After the turn: a `mood-poller mcp` started with that token is refused at once.
    env = dict(os.environ, MOOD_TURN_TOKEN=listed["token"], MOOD_POLLER_DB=room.db_url)
    env.pop("MOOD_TURN_DOOR", None)
    done = subprocess.run([sys.executable, "-m", "poller", "mcp"], env=env, input=b"",
                          capture_output=True, timeout=120)
    assert done.returncode == 1 and b"revoked" in done.stderr
    assert b"Traceback" not in done.stderr
    # A capability past its time, on a turn still running, is refused too.
    store = store_for(room.db_url)
    (w,) = wakes(room)
    with store.writing() as s:
        from poller.models import Wake

        s.get(Wake, w["id"]).status = "running"
    secret = capabilities.mint(store, w["id"], "full", T0, dt.timedelta(seconds=60))
    live = callers.TurnCaller(store, secret, lambda: T0 + dt.timedelta(seconds=30))
    assert not live.call("list_moods", {}).error
    live.clock = lambda: T0 + dt.timedelta(seconds=61)
    late = live.call("list_moods", {})
    assert late.error and "expired" in late.text
    capabilities.revoke(store, w["id"], T0)
    with pytest.raises(Exception, match="revoked"):
        callers.TurnCaller(store, secret, lambda: T0)


# -- Approvals ------------------------------------------------------------------------------


def start_asking(room, tool="Bash", command="ls -la /srv/project", seconds=2):
    steps(room, {"permission": {"tool_name": tool, "input": {"command": command}}})
    post(room, seconds, "ada", "@claude please list the project")
    room("tick", "--now", at(seconds + 1))  # the turn runs on; the tick returns
    return wait_for(lambda: json.loads(room("approvals", "--json").out),
                    what="the approval request")[0]


def settled(room) -> dict:
    return wait_for(lambda: next((w for w in wakes(room) if w["status"] not in
                                  ("pending", "running")), None), what="the turn's end")


def test_an_approval_in_the_mood_by_a_full_trust_person_lets_the_tool_run(room):
    asked = start_asking(room)
    assert (asked["tool"], asked["status"]) == ("Bash", "pending")
    notice = posts(room)[-1]
    assert notice["kind"] == "system" and "asks to use Bash" in notice["text"]
    assert "ls -la /srv/project" in notice["text"] and f"#{asked['id']}" in notice["text"]
    (w,) = wakes(room)
    assert w["status"] == "running"
    shown = json.loads(room("wakes", "show", str(w["id"]), "--json").out)
    assert shown.get("progress") == "waiting for approval: Bash"
    status = room("status").out  # the operator sees what waits, and how to answer it
    assert f"waiting for approval: #{asked['id']} claude in lobby asks for Bash" in status
    assert [a["id"] for a in json.loads(room("status", "--json").out)["approvals"]] == [asked["id"]]
    # bob has trust look: his answer is refused in the Mood, and the request waits on.
    post(room, 5, "bob", "@claude approve")
    tick(room, 6)
    assert json.loads(room("approvals", "--json").out)[0]["status"] == "pending"
    assert "trust look" in posts(room)[-1]["text"]
    post(room, 7, "ada", "@claude approve")
    tick(room, 8)
    w = settled(room)
    assert w["status"] == "replied"
    (answer,) = results(room)
    assert answer["permission"] == {"behavior": "allow",
                                    "updatedInput": {"command": "ls -la /srv/project"}}
    (done,) = json.loads(room("approvals", "--wake", str(w["id"]), "--json").out)
    assert (done["status"], done["decided_by"], done["via"]) == ("approved", "ada", "post")
    told = [p["text"] for p in posts(room) if p["kind"] == "system"]
    assert f"Approval #{done['id']} (Bash for @claude): approved by ada." in told
    # The answers were commands, not conversation: no wake followed them.
    tick(room, 30)
    assert len(wakes(room)) == 1


def test_a_denial_from_the_command_line_reaches_the_agent_with_its_reason(room):
    asked = start_asking(room)
    room("deny", str(asked["id"]), "--reason", "not on the build box")
    settled(room)
    (answer,) = results(room)
    assert answer["permission"]["behavior"] == "deny"
    assert "not on the build box" in answer["permission"]["message"]
    again = room.fails("approve", str(asked["id"]))
    assert "already" in again.err and "Traceback" not in again.err


def test_an_unanswered_request_is_denied_when_its_time_runs_out(room):
    room("set", "approval_timeout", "1")
    start_asking(room)
    settled(room)
    (answer,) = results(room)
    assert answer["permission"]["behavior"] == "deny"
    assert "in time" in answer["permission"]["message"]
    (w,) = wakes(room)
    (done,) = json.loads(room("approvals", "--wake", str(w["id"]), "--json").out)
    assert done["status"] == "timed_out"
    assert "nobody answered in time" in [p for p in posts(room) if p["kind"] == "system"][-1]["text"]


def test_the_notice_never_shows_a_secret_from_the_environment(room, monkeypatch):
    secret = "s3cr3t-value-from-env"
    asked_input = f"curl -H 'Authorization: Bearer {secret}' https://x.example/?token=abc"
    os.environ["MOOD_TEST_API_TOKEN"] = secret
    try:
        from poller.toolserver import approvals

        assert secret not in approvals.shown("Bash", {"command": asked_input})
    finally:
        del os.environ["MOOD_TEST_API_TOKEN"]


# -- A person ---------------------------------------------------------------------------------


async def _session(client, todo):
    out = {"tools": [t.name for t in (await client.list_tools()).tools],
           "resources": [str(r.uri) for r in (await client.list_resources()).resources]}
    for name, args in todo:
        r = await client.call_tool(name, args)
        out[name] = (r.is_error, r.content[0].text)
    return out


def over_stdio(db_url: str, person_token: str, todo) -> dict:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "poller", "mcp"],
                                   env={"MOOD_POLLER_TOKEN": person_token,
                                        "MOOD_POLLER_DB": db_url})

    async def main():
        async with Client(params) as client:
            return await _session(client, todo)

    return anyio.run(main)


def test_a_persons_token_over_stdio_reads_searches_and_posts_as_them(room):
    room("mood", "add", "attic")
    room("mood", "archive", "attic")  # no longer one of the Moods people are in
    ada = over_stdio(room.db_url, token(room, "ada"),
                     [("search", {"query": "humpback"}),
                      ("read_history", {"mood": "kitchen"}),
                      ("post", {"mood": "lobby", "text": "posted from my assistant"})])
    assert set(ada["tools"]) == READING | {"post"}
    assert set(ada["resources"]) == {"mood://lobby", "mood://kitchen"}
    assert not ada["search"][0] and "humpback" in ada["search"][1].lower()
    assert "Soup tonight" in ada["read_history"][1]
    assert not ada["post"][0]
    last = posts(room)[-1]
    assert (last["sender"], last["text"]) == ("ada", "posted from my assistant")
    eve = over_stdio(room.db_url, token(room, "eve"),
                     [("post", {"mood": "lobby", "text": "let me in"})])
    assert "post" not in eve["tools"] and eve["post"][0]  # trust none: reads, never posts
    assert posts(room)[-1]["text"] == "posted from my assistant"


def test_mcp_without_a_token_or_with_a_revoked_one_says_so_in_one_line(room):
    env = dict(os.environ, MOOD_POLLER_DB=room.db_url)
    for name in ("MOOD_TURN_TOKEN", "MOOD_POLLER_TOKEN"):
        env.pop(name, None)
    none = subprocess.run([sys.executable, "-m", "poller", "mcp"], env=env, input=b"",
                          capture_output=True, timeout=120)
    assert none.returncode == 78 and b"MOOD_POLLER_TOKEN" in none.stderr
    old = token(room, "bob")
    room("person", "token", "bob", "--revoke")
    gone = subprocess.run([sys.executable, "-m", "poller", "mcp"], input=b"",
                          env=dict(env, MOOD_POLLER_TOKEN=old), capture_output=True, timeout=120)
    assert gone.returncode == 1 and b"revoked" in gone.stderr
    assert len(gone.stderr.decode().strip().splitlines()) == 1


def test_mcp_over_http_under_serve_takes_a_bearer_token(room):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from support import webserver

    served = webserver.start(room.db_url)
    try:
        url = served.url + "/mcp"

        async def main(bearer):
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer}"}, timeout=60)
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await _session(client, [("search", {"query": "soup"}),
                                               ("post", {"mood": "kitchen", "text": "yes please"})])

        bob = anyio.run(main, token(room, "bob"))
        assert set(bob["tools"]) == READING | {"post"}
        assert "Soup" in bob["search"][1] and not bob["post"][0]
        assert posts(room, mood="kitchen")[-1]["text"] == "yes please"
        with served.client() as plain:
            refused = plain.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 headers={"Authorization": "Bearer mpt_nope"})
            assert refused.status_code == 401
            assert plain.post("/mcp", json={}).status_code == 401
            # No stream to hold open: a GET is refused at once, with the method to use.
            held = plain.get("/mcp", headers={"Authorization": f"Bearer {token(room, 'ada')}"})
            assert held.status_code == 405 and "POST" in held.headers.get("allow", "")
    finally:
        served.stop()
