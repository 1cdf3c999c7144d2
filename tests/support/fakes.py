"""Test helpers (no tests here): a stand-in ``claude`` executable and a loopback HTTP agent.

``write_claude(dir)`` writes an executable ``claude`` that records its argv,
stdin and working directory to ``claude.jsonl`` and prints a stream-json
conversation shaped like Claude Code's (system init, assistant message,
final result).  What it does is read from ``claude-mode`` beside it, so a
test can switch behaviour between turns:

- ``ok``: a successful result whose text is ``claude-reply`` (or a default);
- ``noresult``: init and an assistant message, then exit 0 with no result;
- ``error``: a result with subtype ``error_max_turns``;
- ``budget``: a result with subtype ``error_max_budget_usd`` and no result text;
- any mode ending ``-quiet`` (``error-quiet``, ``noresult-quiet``...): as the
  mode before it, but the assistant message only calls a tool (says nothing);
- ``subagent``: as ``error``, but after the agent's message a sub-agent (an event with
  ``parent_tool_use_id``) says something of its own before the error result;
- ``badutf8``: invalid UTF-8 bytes in an assistant line, then a good result;
- ``crash``: half a stream, then exit 1;
- ``no-resume``: like Claude Code given an unknown ``--resume`` id;
- ``mcp``: a turn that uses the Moods' tools: it starts the server its ``--mcp-config``
  names with the MCP SDK's client and runs the steps in ``claude-mcp`` (a JSON list of
  ``{"list": true}``, ``{"call": TOOL, "args": {...}}`` or ``{"permission": {"tool_name",
  "input"}}``, the last through the permission prompt tool), each result a line of
  ``claude-mcp.jsonl`` (with the token it was given), then answers;
- ``work``: a turn at work: it calls Read on ``/srv/project/private/notes.md``,
  waits until a file ``go-1`` appears beside it, gets the file's content back
  (a tool_result), calls Bash with a command line, waits for ``go-2``, then
  answers.

A prompt that is a slash command (``/compact``, ``/context``, ``/cost``,
``/usage``) is answered as Claude Code answers one in print mode: ``/compact``
with a ``compact_boundary`` system event, the others with their output in a
user message wrapped in ``<local-command-stdout>``; then a ``result`` with an
empty ``result`` text.

``HttpAgent`` is a real HTTP server on 127.0.0.1 with one route per behaviour.
"""

from __future__ import annotations

import http.server
import json
import socket
import stat
import sys
import threading
import time
from pathlib import Path

CLAUDE = r'''#!{python}
import json, os, sys, uuid
here = os.path.dirname(os.path.abspath(__file__))
def read(name, default=""):
    try:
        with open(os.path.join(here, name), encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return default
mode = read("claude-mode", "ok").strip()
quiet = mode.endswith("-quiet")
mode = mode.removesuffix("-quiet")
prompt = sys.stdin.read()
argv = sys.argv[1:]
with open(os.path.join(here, "claude.jsonl"), "a") as fh:
    fh.write(json.dumps({{"argv": argv, "stdin": prompt, "cwd": os.getcwd(),
                         "env": {{k: v for k, v in os.environ.items() if k.startswith("MOOD_")}}}}) + "\n")
resume = argv[argv.index("--resume") + 1] if "--resume" in argv else None
if mode == "no-resume" and resume:
    print(f"No conversation found with session ID: {{resume}}", file=sys.stderr)
    sys.exit(1)
sid = resume or str(uuid.uuid4())
out = sys.stdout.buffer
def emit(obj):
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()
def gate(name):
    import time
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(here, name)) and time.monotonic() < deadline:
        time.sleep(0.02)
def done(text, cost):
    emit({{"type": "result", "subtype": "success", "is_error": False, "duration_ms": 800,
          "duration_api_ms": 700, "num_turns": 1, "result": text, "session_id": sid,
          "total_cost_usd": cost, "usage": {{"input_tokens": 0, "output_tokens": 0}}}})
    sys.exit(0)
emit({{"type": "system", "subtype": "init", "session_id": sid, "cwd": os.getcwd(),
      "model": argv[argv.index("--model") + 1] if "--model" in argv else "claude-sonnet",
      "tools": ["Read", "Grep", "Glob", "Bash", "Edit", "Write"],
      "slash_commands": ["compact", "context", "cost", "usage"],
      "permissionMode": argv[argv.index("--permission-mode") + 1]}})
reply = read("claude-reply", "Hello from the stand-in claude.")
command = prompt.strip()
if command == "/compact":
    emit({{"type": "system", "subtype": "compact_boundary", "session_id": sid,
          "uuid": str(uuid.uuid4()), "compact_metadata": {{"trigger": "manual", "pre_tokens": 48213}}}})
    done("", 0.031)
if command in ("/context", "/cost", "/usage"):
    printed = {{"/context": "Context Usage: 48k/200k tokens (24%)",
               "/cost": "Total cost: $0.0431\nTotal duration (API): 12.1s",
               "/usage": "Current session: 3% used"}}[command]
    emit({{"type": "user", "session_id": sid, "message": {{"role": "user",
          "content": "<local-command-stdout>" + printed + "</local-command-stdout>"}}}})
    done("", 0)
if mode == "mcp":  # a turn that uses the Moods' tools: the steps in claude-mcp, in order
    import anyio
    from mcp import Client, StdioServerParameters
    config = json.load(open(argv[argv.index("--mcp-config") + 1]))["mcpServers"]["mood"]
    steps = json.loads(read("claude-mcp", "[]"))
    said = []
    async def drive():
        params = StdioServerParameters(command=config["command"], args=config["args"],
                                       env=config["env"])
        async with Client(params) as client:
            for step in steps:
                if step.get("list"):
                    got = {{"tools": [t.name for t in (await client.list_tools()).tools]}}
                elif "permission" in step:
                    r = await client.call_tool("approve", step["permission"])
                    got = {{"permission": json.loads(r.content[0].text)}}
                else:
                    r = await client.call_tool(step["call"], step.get("args", {{}}))
                    got = {{"call": step["call"], "error": r.is_error, "text": r.content[0].text}}
                with open(os.path.join(here, "claude-mcp.jsonl"), "a") as fh:
                    fh.write(json.dumps(dict(got, token=config["env"]["MOOD_TURN_TOKEN"])) + "\n")
                said.append(json.dumps(got)[:120])
    anyio.run(drive)
    emit({{"type": "assistant", "session_id": sid, "message": {{"id": "msg_m", "type": "message",
          "role": "assistant", "model": "claude-sonnet",
          "content": [{{"type": "text", "text": reply}}]}}}})
    done(reply, 0.01)
if mode == "work":
    emit({{"type": "assistant", "session_id": sid, "message": {{"id": "msg_w1", "type": "message",
          "role": "assistant", "model": "claude-sonnet", "content": [
          {{"type": "text", "text": "Let me look at the notes first."}},
          {{"type": "tool_use", "id": "toolu_w1", "name": "Read",
           "input": {{"file_path": "/srv/project/private/notes.md", "limit": 40}}}}]}}}})
    gate("go-1")
    emit({{"type": "user", "session_id": sid, "message": {{"role": "user", "content": [
          {{"tool_use_id": "toolu_w1", "type": "tool_result",
           "content": "TOP SECRET plans: the launch code is 0000"}}]}}}})
    emit({{"type": "assistant", "session_id": sid, "message": {{"id": "msg_w2", "type": "message",
          "role": "assistant", "model": "claude-sonnet", "content": [
          {{"type": "tool_use", "id": "toolu_w2", "name": "Bash",
           "input": {{"command": "grep -r launch-code /srv/project", "description": "search"}}}}]}}}})
    gate("go-2")
    emit({{"type": "assistant", "session_id": sid, "message": {{"id": "msg_w3", "type": "message",
          "role": "assistant", "model": "claude-sonnet",
          "content": [{{"type": "text", "text": reply}}]}}}})
    done(reply, 0.0123)
emit({{"type": "assistant", "session_id": sid, "message": {{"id": "msg_1", "type": "message",
      "role": "assistant", "model": "claude-sonnet",
      "content": [{{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {{"file_path": "notes.md"}}}}]
      if quiet else [{{"type": "text", "text": reply[:200]}}], "stop_reason": "end_turn"}}}})
if mode == "subagent":  # a sub-agent (Task) speaks after the agent, then the run errors
    emit({{"type": "assistant", "session_id": sid, "parent_tool_use_id": None, "message": {{
          "id": "msg_t", "type": "message", "role": "assistant", "model": "claude-sonnet",
          "content": [{{"type": "tool_use", "id": "toolu_t", "name": "Task",
                       "input": {{"description": "dig", "prompt": "look around"}}}}]}}}})
    emit({{"type": "assistant", "session_id": sid, "parent_tool_use_id": "toolu_t", "message": {{
          "id": "msg_s", "type": "message", "role": "assistant", "model": "claude-haiku",
          "content": [{{"type": "text", "text": "SUB-AGENT NOTES: grep found nothing"}}]}}}})
    emit({{"type": "result", "subtype": "error_max_turns", "is_error": True, "session_id": sid,
          "num_turns": 30, "total_cost_usd": 0.5, "errors": ["reached the maximum number of turns"]}})
    sys.exit(0)
if mode == "badutf8":
    out.write(b'{{"type": "assistant", "session_id": "' + sid.encode() + b'", "note": "\xff\xfe bad"}}\n')
    out.write(b"\xc3\x28 not json at all\n")
if mode == "noresult":
    sys.exit(0)
if mode == "crash":
    out.write(b'{{"type": "assistant", "sess')
    out.flush()
    sys.exit(1)
if mode == "budget":
    emit({{"type": "result", "subtype": "error_max_budget_usd", "is_error": True, "session_id": sid,
          "num_turns": 3, "total_cost_usd": 1.02, "duration_ms": 5000}})
    sys.exit(0)
if mode == "error":
    emit({{"type": "result", "subtype": "error_max_turns", "is_error": True, "session_id": sid,
          "num_turns": 30, "total_cost_usd": 0.5, "errors": ["reached the maximum number of turns"]}})
    sys.exit(0)
emit({{"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1234,
      "duration_api_ms": 1000, "num_turns": 1, "result": reply, "session_id": sid,
      "total_cost_usd": 0.0123, "usage": {{"input_tokens": 10, "output_tokens": 5}}}})
'''


def write_claude(directory: Path, mode: str = "ok", reply: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "claude"
    path.write_text(CLAUDE.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    set_claude(directory, mode, reply)
    return path


def set_claude(directory: Path, mode: str, reply: str | None = None) -> None:
    (directory / "claude-mode").write_text(mode)
    if reply is not None:
        (directory / "claude-reply").write_text(reply, encoding="utf-8")


def claude_calls(directory: Path) -> list[dict]:
    log = directory / "claude.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        self.server.seen.append({"path": self.path, "headers": dict(self.headers),
                                 "body": json.loads(body)})
        route = self.path.strip("/").split("?")[0]
        if route == "drop":  # read the request, then hang up without answering
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if route == "slow":
            time.sleep(5)
        status, ctype, payload = self.server.routes.get(route, (404, "text/plain", b"no such route"))
        if callable(payload):
            payload = payload(self.server.seen[-1]["body"])
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        try:
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass


class HttpAgent:
    """A threaded HTTP server on 127.0.0.1 that answers wakes by route."""

    def __init__(self) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # a dropped client is expected
        self.server.seen = []
        self.server.routes = {
            "ok": (200, "application/json",
                   lambda b: json.dumps({"reply": f"{b['agent']} heard {b['kind']}"}).encode()),
            "text": (200, "text/plain; charset=utf-8", "plain words back".encode()),
            "slow": (200, "application/json", b'{"reply": "late"}'),
            "fail": (500, "text/plain", b"the model backend is down"),
            "bad": (400, "application/json", b'{"error": "wake_id missing"}'),
            "malformed": (200, "application/json", b'{"reply": "unterminated'),
            "noreply": (200, "application/json", b'{"answer": "wrong field"}'),
            "huge": (200, "text/plain", b"x" * (6 * 1024 * 1024)),
            "hugejson": (200, "application/json",
                         b'{"reply": "' + b"y" * (6 * 1024 * 1024) + b'"}'),
            "badutf8": (200, "text/plain", b"caf\xc3 ok"),
        }
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def seen(self) -> list[dict]:
        return self.server.seen

    def url(self, route: str) -> str:
        host, port = self.server.server_address
        return f"http://{host}:{port}/{route}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    """A loopback port nothing listens on (closed right after it is found)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



REPLY_AGENT = r'''
import json, os, sys
here = sys.argv[1]
text = sys.stdin.read()
agent = os.environ["MOOD_AGENT"]
with open(os.path.join(here, "wakes-" + agent + ".jsonl"), "a") as fh:
    fh.write(json.dumps({"text": text, "kind": os.environ["MOOD_WAKE_KIND"],
                         "tools": os.environ["MOOD_TOOLS"], "mood": os.environ["MOOD_SLUG"],
                         "model": os.environ.get("MOOD_MODEL", ""),
                         "effort": os.environ.get("MOOD_EFFORT", "")}) + "\n")
path = os.path.join(here, "reply-" + agent)
data = open(path, "rb").read() if os.path.exists(path) else b"ok"
sys.stdout.buffer.write(data)
'''


def reply_agent(directory: Path) -> str:
    """A command agent that logs each wake and answers with the bytes set by ``set_reply``."""
    import shlex

    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "reply_agent.py"
    script.write_text(REPLY_AGENT)
    return shlex.join([sys.executable, str(script), str(directory)])


def set_reply(directory: Path, agent: str, data: str | bytes) -> None:
    (directory / f"reply-{agent}").write_bytes(data.encode() if isinstance(data, str) else data)


def agent_wakes(directory: Path, agent: str) -> list[dict]:
    log = directory / f"wakes-{agent}.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
