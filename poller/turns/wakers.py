"""Wakers: how a turn reaches an agent and how its reply comes back.

A waker takes the wake text and the turn's context and returns an
``Outcome``: the reply text, or why there is none.  Every waker kills what it
started when the turn times out or is cancelled.  Each is a subclass of
:class:`Waker`, which states as class attributes what it can do (resume a
session, take slash commands, report its cost or its progress, where the
Mood's rules go) and which agent options it takes; the rest of the poller
asks those, never which waker it is.  Wakers are found by name through the
``mood_poller.wakers`` entry points (:mod:`poller.turns.registry`).  Three
come with the poller:

- ``CommandWaker``: any shell command; the wake on stdin, the reply on stdout.
- ``ClaudeWaker``: the ``claude`` CLI in print mode with ``stream-json``
  output, resuming the agent's session for the Mood; look-only turns get a
  read-only tool allowlist.
- ``HttpWaker``: POSTs the wake as JSON; the reply is the response's
  ``reply`` field (or a ``text/plain`` body).

An ``Outcome`` that is no reply carries two reasons: ``error``, the detail
(the agent's stderr tail, the HTTP body) for the wake's record and the
operator, and ``public``, the kind of failure alone, which is what the Mood
is told.  Agents get an allowlisted environment (:func:`turn_env`), no
inherited file descriptor but their three pipes, and may run as another Unix
user (the agent's ``run_as`` option).

This module is imported by every runner, so it stays light: httpx is
imported only when an HTTP turn runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import pwd
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Optional

from poller.turns import sandbox, settle
from poller.kinds import WakeKind
from poller.secure import mask_text

READ_LIMIT = 4 * 1024 * 1024  # bytes of stdout kept; the rest is drained and dropped
KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class TurnRequest:
    wake_id: int
    agent: str
    mood: str
    kind: str
    tools: str  # full | look
    text: str
    answers: tuple[int, ...] = ()
    timeout: Optional[float] = None  # seconds; None: no limit
    silence_limit: Optional[float] = None  # seconds without output before it is ended; None: none
    workdir: Optional[str] = None
    session: Optional[str] = None  # a resumable session id, for wakers that have one
    pass_env: tuple[str, ...] = ()  # extra environment variables the agent may see
    # The Mood's settings for the turn (``model``, ``effort``, ``rules``); empty: not set.
    model: str = ""  # over the agent's own model option
    effort: str = ""
    rules: str = ""  # for wakers whose instructions do not come in the wake (instructions_in_wake)
    # Told what the turn is doing as it goes (reports_progress: e.g. the tool in use), names only.
    on_progress: Optional[Callable[[str], None]] = field(default=None, compare=False, repr=False)
    # For wakers that keep the conversation themselves (keeps_history): the kept one, as
    # JSON ("" : none, a fresh session), and the Mood's settings for it.
    history: str = field(default="", repr=False)
    persona: str = ""
    session_tokens: int = 32_000
    # For wakers that call tools (calls_tools): the turn's poller.tools.Toolbox.
    toolbox: Optional[object] = field(default=None, compare=False, repr=False)
    # Where the turn's processes run (poller.turns.sandbox.Jail); None: unsandboxed.
    sandbox: Optional[sandbox.Jail] = None
    # The Moods' tools for a process of the turn (``mood-poller mcp``); None: none.
    tool_server: Optional["ToolServer"] = field(default=None, repr=False)


@dataclass(frozen=True)
class ToolServer:
    """What a turn's process needs to reach its tools: the turn's token (a secret: never
    on a command line), the socket its runner serves them on, in a directory of the turn's
    own (bound into its sandbox), and the names of the reading tools (pre-allowed on
    look-only turns)."""

    token: str
    door: str
    directory: str
    reading: tuple[str, ...] = ()
    owner: Optional[tuple[int, int]] = None  # the agent's user, when it runs as another

    def env(self) -> dict[str, str]:
        return {"MOOD_TURN_TOKEN": self.token, "MOOD_TURN_DOOR": self.door}


@dataclass(frozen=True)
class TurnResult:
    status: str  # replied | failed | cut_off
    reply: str = ""
    error: str = ""  # the full reason, for the wake's record (`mood-poller wakes show`)
    note: str = ""  # e.g. invalid UTF-8 replaced, output truncated
    session: Optional[str] = None
    cost: Optional[float] = None
    public: str = ""  # the kind of failure alone, for the system post in the Mood
    unseen: bool = False  # the agent never took the wake in (e.g. its session was gone)
    # Wakers that keep the conversation (keeps_history): the one to keep (None: unchanged),
    # its size, and whether it was compacted (the next wake then carries the full catch-up).
    history: Optional[str] = field(default=None, repr=False)
    history_tokens: Optional[int] = None
    compacted: bool = False
    tokens_in: Optional[int] = None  # as the provider counted them (reports_tokens)
    tokens_out: Optional[int] = None


class Waker:
    """One way of waking an agent; subclasses declare their name and what they can do.

    The attributes are read on the class, without a waker being made: the
    deciding cycle and the runner ask them of an agent's waker by name.  An
    outside package ships a subclass and registers it under the entry-point
    group ``mood_poller.wakers`` with its ``name``.
    """

    name: ClassVar[str] = ""  # what ``agents.waker`` holds: lower case, at most 16 characters
    title: ClassVar[str] = ""  # how people call it ("Claude Code")
    target: ClassVar[str] = ""  # the agent field that aims it: "command", "url" or "" (none)
    accepts: ClassVar[tuple[str, ...]] = ()  # the agent options it takes
    keeps_session: ClassVar[bool] = False  # resumes a session per Mood (``Outcome.session``)
    takes_commands: ClassVar[bool] = False  # runs a person's slash command (/compact) in it
    reports_cost: ClassVar[bool] = False  # its Outcome carries the turn's cost
    reports_progress: ClassVar[bool] = False  # calls ``Turn.on_progress`` as it goes
    instructions_in_wake: ClassVar[bool] = True  # the Mood's rules go in the wake (else Turn.rules)
    keeps_history: ClassVar[bool] = False  # its conversation is kept in the store (Turn.history)
    calls_tools: ClassVar[bool] = False  # gets the turn's toolbox (Turn.toolbox)
    reports_tokens: ClassVar[bool] = False  # its Outcome carries the provider's token counts
    runs_process: ClassVar[bool] = False  # starts the agent as a process here (sandboxed)

    @classmethod
    def from_agent(cls, agent) -> "Waker":
        """The waker for an agent row (``poller.values.AgentInfo``), from its stored values."""
        raise NotImplementedError

    @classmethod
    def summary(cls, options: dict) -> str:
        """What ``agent list`` shows of an agent aimed by options alone; nothing secret."""
        return ""

    def run(self, turn: "TurnRequest", on_start: Callable[[int], None],
            cancel: threading.Event) -> "TurnResult":
        """Wake the agent and wait for its reply; *on_start* gets the process group of
        anything started, and *cancel* ends the turn early."""
        raise NotImplementedError

    def needs_writable(self, home: str) -> tuple[str, ...]:
        """What its process must be able to write, in a sandbox, to keep working (beyond
        its scratch directory and, on full-tool turns, its work directory); *home* is
        the home directory of the user it runs as."""
        return ()


BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ")
LOCALE_ENV = ("LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY",
              "LC_MESSAGES", "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE",
              "LC_MEASUREMENT", "LC_IDENTIFICATION")
XDG_ENV = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
           "XDG_RUNTIME_DIR", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS")
AGENT_ENV = BASE_ENV + LOCALE_ENV + XDG_ENV
# The poller user's own directories mean nothing to an agent running as another user.
USER_DIRS_ENV = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
                 "XDG_RUNTIME_DIR")
WAKE_ENV = ("MOOD_WAKE_ID", "MOOD_AGENT", "MOOD_SLUG", "MOOD_WAKE_KIND", "MOOD_TOOLS")


def turn_env(turn: TurnRequest, run_as: Optional["RunAs"] = None) -> dict[str, str]:
    """The agent's environment: an exact allowlist plus what the operator names.

    The poller's environment holds secrets (database URLs, header tokens, API
    keys); an agent, even on a look-only turn started by anyone's post, gets
    only ``AGENT_ENV`` (``PATH``, ``HOME``, the locale and XDG base-directory
    names...), the ``MOOD_*`` wake variables and the names in
    ``poller.agent_env``; never a ``MOOD_POLLER_*`` name.  An agent run as
    another user gets that user's ``HOME``, ``USER`` and ``LOGNAME``.
    """
    allowed = set(AGENT_ENV) | set(turn.pass_env)
    env = {k: v for k, v in os.environ.items()
           if k in allowed and not k.startswith("MOOD_")}
    if run_as is not None:
        for name in USER_DIRS_ENV:
            env.pop(name, None)
        env.update(HOME=run_as.home, USER=run_as.name, LOGNAME=run_as.name)
    env.update(zip(WAKE_ENV, (str(turn.wake_id), turn.agent, turn.mood, turn.kind, turn.tools)))
    env.update((name, value) for name, value in (("MOOD_MODEL", turn.model),
                                                 ("MOOD_EFFORT", turn.effort)) if value)
    if turn.tool_server is not None:  # the agent's own capability, for `mood-poller mcp`
        env.update(turn.tool_server.env())
    return env


@dataclass(frozen=True)
class RunAs:
    """A Unix user an agent's process runs as (the agent's ``run_as`` option)."""

    name: str
    uid: int
    gid: int
    home: str

    @classmethod
    def named(cls, name: str) -> "RunAs":
        """The user called *name*; LookupError if there is none."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise LookupError(f"there is no Unix user {name!r} to run the agent as") from None
        return cls(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir)

    def popen_args(self) -> dict:
        """``subprocess.Popen`` arguments: this user, its primary group, no other group."""
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def resolve_run_as(name: Optional[str]) -> tuple[Optional[RunAs], Optional[TurnResult]]:
    """The user an agent runs as (None: the poller's own), or the failed Outcome if it is gone."""
    if not name:
        return None, None
    try:
        return RunAs.named(name), None
    except LookupError as exc:
        return None, TurnResult("failed", error=str(exc), public="the user it runs as does not exist")


def start_failure(what: str, run_as: Optional[RunAs], exc: OSError, shown: str = "") -> TurnResult:
    """The Outcome of a process that could not be started (as its user, if it has one).

    *what* names the process for the Mood, *shown* (default: *what*) for the record.
    """
    shown = shown or what
    if run_as is not None and exc.errno == errno.EPERM and exc.filename is None:
        # setgroups/setgid/setuid before exec were refused: no privilege to switch users
        return TurnResult("failed", error=f"could not start {shown} as user {run_as.name}: "
                                       f"{exc.strerror} (running an agent as another user needs "
                                       "a poller running as root, or with CAP_SETUID and CAP_SETGID)",
                       public=f"{what} could not be started as its user")
    return TurnResult("failed", error=f"could not start {shown}: {exc.strerror}",
                   public=f"{what} could not be started")


class Process:
    """A child in its own process group, fed stdin, read to a limit, killable as a group."""

    def __init__(self, argv: list[str], *, shell: bool, stdin: bytes, env: dict, cwd: Optional[str],
                 on_start: Callable[[int], None] = lambda pgid: None,
                 on_stdout: Optional[Callable[[bytes], None]] = None,
                 run_as: Optional[RunAs] = None, jail: Optional[sandbox.Jail] = None):
        self.on_stdout = on_stdout  # given: stdout chunks go there instead of the buffer
        self.scratch: Optional[str] = None  # a sandboxed turn's TMPDIR, removed at its end
        if jail is not None:
            self.scratch = sandbox.scratch((run_as.uid, run_as.gid) if run_as else None)
            env = dict(env, TMPDIR=self.scratch)
            argv = jail.argv(["/bin/sh", "-c", argv[0]] if shell else list(argv), self.scratch,
                             cwd, run_as.uid if run_as is not None else None)
            shell, cwd = False, None  # bwrap changes into the directory inside
        # close_fds: the child gets its three pipes and nothing else this
        # process holds open (the database file, sockets to the database).
        try:
            self.proc = subprocess.Popen(argv if not shell else argv[0], shell=shell,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env, cwd=cwd,
                                         start_new_session=True, close_fds=True, pass_fds=(),
                                         **(run_as.popen_args() if run_as is not None else {}))
        except OSError:
            sandbox.remove(self.scratch)
            raise
        self.pgid = self.proc.pid
        on_start(self.pgid)
        self.out = bytearray()
        self.err = bytearray()
        self.out_dropped = 0
        self.last_output = time.monotonic()  # when stdout last said anything (or the start)
        self._threads = [threading.Thread(target=self._feed, args=(stdin,), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stdout, self.out, True), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self.err, False), daemon=True)]
        for t in self._threads:
            t.start()

    def _feed(self, data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            self.proc.stdin.write(data)
        with contextlib.suppress(BrokenPipeError, OSError):
            self.proc.stdin.close()

    def _read(self, stream, buf: bytearray, is_out: bool) -> None:
        limit = READ_LIMIT if is_out else 64 * 1024
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            if is_out:
                self.last_output = time.monotonic()
            if is_out and self.on_stdout is not None:
                self.on_stdout(chunk)
                continue
            room = limit - len(buf)
            if room > 0:
                buf.extend(chunk[:room])
            if len(chunk) > max(room, 0) and is_out:
                self.out_dropped += len(chunk) - max(room, 0)

    def wait(self, timeout: Optional[float]) -> bool:
        """True if it exited in time; on timeout the whole group is killed.

        Either way the turn is over once the agent has exited: whatever it
        left running in its process group (a background job) is killed too.
        """
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return False
        finally:
            self.end_group()
            for t in self._threads[1:]:
                t.join(5)
            sandbox.remove(self.scratch)
        return True

    def end_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)

    def kill(self) -> None:
        for sig, pause in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, 0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, sig)
            deadline = time.monotonic() + pause
            while pause and time.monotonic() < deadline and self.proc.poll() is None:
                time.sleep(0.05)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        # Children that left the group's leader behind still share its group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)


class CommandWaker(Waker):
    """Runs a shell command: the wake on stdin, the reply on stdout."""

    name = "command"
    title = "command"
    target = "command"
    accepts = ("run_as", "network")
    runs_process = True

    def __init__(self, command: str, run_as: Optional[str] = None):
        self.command = command
        self.run_as = run_as  # a Unix user name; None: the poller's own user

    @classmethod
    def from_agent(cls, agent) -> "CommandWaker":
        return cls(agent.command, (agent.options or {}).get("run_as"))

    def run(self, turn: TurnRequest, on_start: Callable[[int], None], cancel: threading.Event) -> TurnResult:
        user, failed = resolve_run_as(self.run_as)
        if failed is not None:
            return failed
        try:
            proc = Process([self.command], shell=True, stdin=turn.text.encode("utf-8"),
                           env=turn_env(turn, user), cwd=turn.workdir, on_start=on_start,
                           run_as=user, jail=turn.sandbox)
        except OSError as exc:
            return start_failure("its command", user, exc)
        return finish(proc, turn, cancel)


def _await(proc: Process, turn: TurnRequest, cancel: threading.Event) -> Optional[TurnResult]:
    """Wait for a started process; an Outcome only if it had to be ended."""
    deadline = None if turn.timeout is None else time.monotonic() + turn.timeout
    while True:
        step = 0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
        try:
            proc.proc.wait(step)
            break
        except subprocess.TimeoutExpired:
            pass
        if cancel.is_set():
            proc.kill()
            proc.wait(5)
            return stopped()
        if deadline is not None and time.monotonic() >= deadline:
            proc.kill()
            proc.wait(5)
            return timed_out(turn.timeout)
        if turn.silence_limit and time.monotonic() - proc.last_output >= turn.silence_limit:
            proc.kill()
            proc.wait(5)
            return fell_silent(turn.silence_limit)
    proc.wait(5)
    return None


STOPPED = "the turn was stopped (shutdown or emergency stop)"


def stopped() -> TurnResult:
    return TurnResult("cut_off", error=STOPPED, public=STOPPED)


def timed_out(timeout: float) -> TurnResult:
    why = f"timed out after {timeout:g} s"
    return TurnResult("cut_off", error=why, public=f"it {why}")


def fell_silent(limit: float) -> TurnResult:
    why = f"produced no output for {limit:g} s"
    return TurnResult("cut_off", error=why, public=f"it {why}")


def exited(what: str, code: int) -> str:
    """The public reason for a process that ended with *code*."""
    if code < 0:
        return f"{what} was killed by signal {-code}"
    return f"{what} exited with status {code}"


def _stderr_tail(proc: Process) -> str:
    """The last line of the agent's stderr, for the wake's record only."""
    err = bytes(proc.err).decode("utf-8", "replace").strip().splitlines()
    return f": {mask_text(err[-1][:300])}" if err else ""


def finish(proc: Process, turn: TurnRequest, cancel: threading.Event) -> TurnResult:
    """Wait for a started process, honouring the timeout and cancellation."""
    ended = _await(proc, turn, cancel)
    if ended is not None:
        return ended
    reply, note = settle.decode(bytes(proc.out))
    if proc.out_dropped:
        note = (note + "; " if note else "") + f"{proc.out_dropped:,} bytes of output dropped"
    code = proc.proc.returncode
    if code != 0:
        return TurnResult("failed", error=f"exit code {code}{_stderr_tail(proc)}", note=note,
                       public=exited("its command", code))
    return TurnResult("replied", reply=reply, note=note)


# -- Claude Code -------------------------------------------------------------------

# Look-only turns: tools that read and search, nothing that edits or runs.
LOOK_TOOLS = ("Read", "Grep", "Glob", "LS", "WebSearch", "WebFetch")
LOOK_DENIED = ("Bash", "Edit", "MultiEdit", "Write", "NotebookEdit")
# dontAsk: anything not pre-approved is denied instead of waiting on a prompt nobody sees.
LOOK_PERMISSION_MODE = "dontAsk"
FULL_PERMISSION_MODE = "acceptEdits"  # the default for full-tool turns; per agent: permission_mode
LINE_LIMIT = 8 * 1024 * 1024  # one stream-json line longer than this is dropped


RULES_HEADING = "The rules of this Mood, set by its operators:"


MCP_SERVER = "mood"  # the Moods' tools, as Claude Code names them: mcp__mood__<tool>
APPROVE_TOOL = f"mcp__{MCP_SERVER}__approve"


def mcp_config(server: ToolServer) -> dict:
    """The ``--mcp-config`` that starts ``mood-poller mcp`` for the turn, with its token."""
    import sys

    return {"mcpServers": {MCP_SERVER: {
        "type": "stdio", "command": sys.executable, "args": ["-m", "poller", "mcp"],
        "env": server.env()}}}


def write_mcp_config(server: ToolServer) -> str:
    """The turn's ``--mcp-config`` file, 0600 in the turn's own directory (the token is in
    it, never on the command line)."""
    path = os.path.join(server.directory, "mcp.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(mcp_config(server), fh)
    if server.owner is not None:
        os.chown(path, *server.owner)
    return path


def claude_argv(options: dict, tools: str, session: Optional[str], *, model: str = "",
                effort: str = "", rules: str = "", mcp: str = "",
                reading: tuple[str, ...] = ()) -> list[str]:
    """The ``claude`` command line for one turn (the prompt goes on stdin).

    *model* (the Mood's setting) wins over the agent's own ``model`` option.
    *rules* go in the instructions channel, ``--append-system-prompt``, on
    every turn: Claude Code keeps no system prompt with a session, so a
    resumed turn without the flag would run without them.
    """
    argv = [options.get("bin") or "claude", "-p", "--output-format", "stream-json", "--verbose"]
    model = model or options.get("model")
    if model:
        argv += ["--model", model]
    if effort:
        argv += ["--effort", effort]
    if rules:  # the heading first: the value never reads as an option
        argv += ["--append-system-prompt", f"{RULES_HEADING}\n{rules}"]
    if session:
        argv += ["--resume", session]
    if mcp:  # the Moods' tools (*mcp*: the config file naming `mood-poller mcp`)
        argv += ["--mcp-config", mcp]
    if tools == "full":
        argv += ["--permission-mode", options.get("permission_mode") or FULL_PERMISSION_MODE]
        allowed = list(options.get("allowed_tools") or ()) + ([f"mcp__{MCP_SERVER}"] if mcp else [])
        if allowed:
            argv += ["--allowedTools", ",".join(allowed)]
        if mcp:  # a tool not pre-allowed is asked of the people in the Mood
            argv += ["--permission-prompt-tool", APPROVE_TOOL]
    else:
        mine = [f"mcp__{MCP_SERVER}__{name}" for name in reading] if mcp else []
        argv += ["--permission-mode", LOOK_PERMISSION_MODE,
                 "--allowedTools", ",".join([*LOOK_TOOLS, *mine]),
                 "--disallowedTools", ",".join(LOOK_DENIED)]
    return argv


class ClaudeStream:
    """Claude Code's ``stream-json`` output, read line by line as it arrives.

    Keeps only what the turn needs: the session id (from the ``system``/``init``
    line or any later line), the final ``result`` line, and the text of the
    agent's last message that said something (``said``): its words stand as its
    reply even when the run then ends in an error.
    """

    def __init__(self, on_progress: Optional[Callable[[str], None]] = None) -> None:
        self._buf = bytearray()
        self._skipping = False
        self.session: Optional[str] = None
        self.result: Optional[dict] = None
        self.said: str = ""
        self.bad_lines = 0
        self.notes: list[str] = []
        self.local_output: str = ""  # what a slash command printed (<local-command-stdout>)
        self.compacted: Optional[int] = None  # /compact: the tokens the session held before
        self.on_progress = on_progress

    def feed(self, chunk: bytes) -> None:
        self._buf.extend(chunk)
        while True:
            i = self._buf.find(b"\n")
            if i < 0:
                if len(self._buf) > LINE_LIMIT:
                    self.notes.append(f"a stream line over {LINE_LIMIT:,} bytes was dropped")
                    self._buf.clear()
                    self._skipping = True
                return
            line = bytes(self._buf[:i])
            del self._buf[:i + 1]
            if self._skipping:
                self._skipping = False
                continue
            self._line(line)

    def close(self) -> None:
        if self._buf and not self._skipping:
            self._line(bytes(self._buf))
        self._buf.clear()

    def _line(self, raw: bytes) -> None:
        if not raw.strip():
            return
        line, note = settle.decode(raw)
        if note and not any(n.startswith("invalid UTF-8") for n in self.notes):
            self.notes.append(note)
        try:
            obj = json.loads(line)
        except ValueError:
            self.bad_lines += 1
            return
        if not isinstance(obj, dict):
            return
        sid = obj.get("session_id")
        if isinstance(sid, str) and sid:
            self.session = sid[:200]
        kind = obj.get("type")
        if kind == "result":
            self.result = obj
        elif kind == "assistant" and not obj.get("parent_tool_use_id"):
            # A sub-agent's messages (``parent_tool_use_id`` set) are its working notes
            # to the agent, never the agent's words to the Mood.
            said = _message_text(obj.get("message"))
            if said:
                self.said = said
        elif kind == "user":
            self._local_output(obj.get("message"))
        elif kind == "system" and obj.get("subtype") == "compact_boundary":
            meta = obj.get("compact_metadata")
            pre = meta.get("pre_tokens") if isinstance(meta, dict) else None
            self.compacted = pre if isinstance(pre, int) and not isinstance(pre, bool) else 0
        if self.on_progress is not None:
            doing = progress_of(obj)
            if doing:
                self.on_progress(doing)

    def _local_output(self, message) -> None:
        """A slash command's output comes back as a user message wrapped in
        ``<local-command-stdout>``."""
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = [b["text"] for b in content
                     if isinstance(b, dict) and isinstance(b.get("text"), str)]
        else:
            texts = []
        for text in texts:
            m = LOCAL_STDOUT_RE.search(text)
            if m and m.group(1).strip():
                self.local_output = m.group(1).strip()


LOCAL_STDOUT_RE = re.compile(r"<local-command-stdout>(.*?)</local-command-stdout>", re.DOTALL)
# Tools whose input names a file: the progress shows that file's name, never its content.
FILE_KEYS = ("file_path", "notebook_path")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]+")


def _clean(text: str, limit: int) -> str:
    return _UNPRINTABLE.sub(" ", text).strip()[:limit]


def progress_of(event: dict) -> str:
    """What a stream-json event says the turn is doing, in a few words: the tool it calls
    and, for a tool that opens a file, the file's name; never a tool's other arguments,
    a command line, a file's content or anything the agent writes."""
    kind = event.get("type")
    if kind == "system" and event.get("subtype") == "init":
        return "starting"
    if kind == "system" and event.get("subtype") == "compact_boundary":
        return "compacting its session"
    if kind != "assistant" or not isinstance(event.get("message"), dict):
        return ""
    content = event["message"].get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    calls = [b for b in blocks if b.get("type") == "tool_use" and isinstance(b.get("name"), str)]
    if not calls:
        return "writing" if any(b.get("type") == "text" for b in blocks) else (
            "thinking" if blocks else "")
    call = calls[-1]
    doing = f"using {_clean(call['name'], 80)}"
    given = call.get("input") if isinstance(call.get("input"), dict) else {}
    path = next((given[k] for k in FILE_KEYS if isinstance(given.get(k), str)), "")
    name = _clean(os.path.basename(path.rstrip("/")), 100) if path else ""
    return f"{doing} on {name}" if name else doing


def _message_text(message) -> str:
    """The text blocks of an assistant message (tool calls and thinking left out)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = [b["text"].strip() for b in content
             if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return "\n\n".join(t for t in texts if t)


COMMAND = WakeKind.COMMAND  # a person's slash command (/compact...), run as it is
NO_SESSION = "(there is no session here yet, so nothing was run)"


def command_output(out: TurnResult, stream: ClaudeStream) -> TurnResult:
    """What a slash command printed: the final result's text, or (Claude Code prints a
    local command's output as a user message) the ``<local-command-stdout>``, or for
    ``/compact`` the size of what it compacted."""
    if out.status != "replied":
        return out
    text = out.reply.strip() or stream.local_output
    if not text and stream.compacted is not None:
        text = (f"The session was compacted (it held {stream.compacted:,} tokens)."
                if stream.compacted else "The session was compacted.")
    return dataclasses.replace(out, reply=text)


class ClaudeWaker(Waker):
    """Runs Claude Code in print mode for one turn, resuming the Mood's session."""

    name = "claude-code"
    title = "Claude Code"
    accepts = ("run_as", "session_dir", "model", "permission_mode", "bin", "network")
    runs_process = True
    keeps_session = True
    takes_commands = True
    reports_cost = True  # total_cost_usd in its final result event
    reports_progress = True
    # Claude Code keeps no system prompt with a session: the rules go as
    # --append-system-prompt on every turn instead (claude_argv).
    instructions_in_wake = False

    def __init__(self, options: dict):
        self.options = dict(options or {})

    @classmethod
    def from_agent(cls, agent) -> "ClaudeWaker":
        return cls(agent.options)

    @classmethod
    def summary(cls, options: dict) -> str:
        model, where = options.get("model"), options.get("session_dir")
        return " ".join(filter(None, [options.get("bin", "claude"), model and f"--model {model}",
                                      where and f"in {where}"]))

    def run(self, turn: TurnRequest, on_start: Callable[[int], None], cancel: threading.Event) -> TurnResult:
        user, failed = resolve_run_as(self.options.get("run_as"))
        if failed is not None:
            return failed
        if turn.kind == COMMAND and not turn.session:
            return TurnResult("replied", reply=NO_SESSION)  # nothing to run it in: not run
        cwd = self.options.get("session_dir") or turn.workdir
        if cwd and not os.path.isdir(cwd):
            try:
                os.makedirs(cwd, mode=0o700, exist_ok=True)
                if user is not None:  # the agent's own directory, not the poller's
                    os.chown(cwd, user.uid, user.gid)
            except OSError as exc:
                return TurnResult("failed", error=f"could not create {cwd}: {exc.strerror}",
                               public="its session directory could not be created")
        stream = ClaudeStream(turn.on_progress)
        server = turn.tool_server
        try:
            mcp = write_mcp_config(server) if server is not None else ""
        except OSError as exc:
            return TurnResult("failed", error=f"could not write its tools' configuration: "
                              f"{exc.strerror}", public="its tools could not be made ready")
        argv = claude_argv(self.options, turn.tools, turn.session, model=turn.model,
                           effort=turn.effort, rules=turn.rules, mcp=mcp,
                           reading=server.reading if server is not None else ())
        jail = turn.sandbox
        if jail is not None:  # its configuration and sessions stay writable (--resume)
            needs = self.needs_writable(user.home if user else os.path.expanduser("~"))
            with contextlib.suppress(OSError):  # a bind needs it to be there
                if not os.path.isdir(needs[0]):
                    os.makedirs(needs[0], mode=0o700)
                    if user is not None:
                        os.chown(needs[0], user.uid, user.gid)
            jail = jail.needing(needs)
            if turn.tools == "full" and cwd:
                jail = dataclasses.replace(jail, workdir=cwd)
        try:
            proc = Process(argv, shell=False, stdin=turn.text.encode("utf-8"),
                           env=turn_env(turn, user), cwd=cwd, on_start=on_start,
                           on_stdout=stream.feed, run_as=user, jail=jail)
        except OSError as exc:
            return start_failure("claude", user, exc, shown=argv[0])
        ended = _await(proc, turn, cancel)
        stream.close()
        if ended is not None:
            return TurnResult(ended.status, error=ended.error, public=ended.public,
                           session=stream.session)
        out = self._outcome(stream, proc, turn)
        return command_output(out, stream) if turn.kind == COMMAND else out

    def needs_writable(self, home: str) -> tuple[str, ...]:
        """``~/.claude``, where its sessions are kept, and its configuration
        (``~/.claude.json``)."""
        return (os.path.join(home, ".claude"), os.path.join(home, ".claude.json"))

    @classmethod
    def _outcome(cls, stream: ClaudeStream, proc: Process, turn: TurnRequest) -> TurnResult:
        out = cls._ending(stream, proc, turn)
        if out.status == "failed" and stream.said:
            # The run ended badly after the agent spoke: its words are its reply
            # (silence recognised as silence by the settling), the error kept beside.
            return TurnResult("replied", reply=stream.said, error=out.error,
                           note="; ".join(filter(None, [out.note, f"after it spoke, {out.error}"])),
                           session=stream.session or out.session, cost=out.cost)
        return out

    @staticmethod
    def _ending(stream: ClaudeStream, proc: Process, turn: TurnRequest) -> TurnResult:
        note = "; ".join(stream.notes)
        if stream.bad_lines:
            note = "; ".join(filter(None, [note, f"{stream.bad_lines} unreadable stream lines skipped"]))
        r = stream.result
        code = proc.proc.returncode
        if r is None:
            public = why = "the claude stream ended without a final result"
            if code:
                why += f" (exit code {code}{_stderr_tail(proc)})"
            # A session that cannot be resumed must not fail every turn after it.  With
            # no stream at all, claude never took the wake in: what it was to answer is
            # owed again (settling sees ``unseen``).
            never_started = stream.session is None
            forget = "" if turn.session and never_started else None
            return TurnResult("failed", error=why, note=note, public=public,
                           session=stream.session if forget is None else forget,
                           unseen=never_started and not stream.said)
        cost = r.get("total_cost_usd")
        cost = float(cost) if isinstance(cost, (int, float)) else None
        if r.get("subtype") != "success" or r.get("is_error"):
            detail = r.get("errors") or r.get("result") or ""
            detail = "; ".join(map(str, detail)) if isinstance(detail, list) else str(detail)
            why = f"claude reported {str(r.get('subtype') or 'an error')[:60]}"
            return TurnResult("failed", error=why + (f": {mask_text(detail[:300])}" if detail else ""),
                           public=why, note=note, session=stream.session, cost=cost)
        if code != 0:
            return TurnResult("failed", error=f"exit code {code}{_stderr_tail(proc)}", note=note,
                           public=exited("claude", code), session=stream.session, cost=cost)
        reply = r.get("result")
        if not isinstance(reply, str):
            return TurnResult("failed", error="the final result carries no text", note=note,
                           public="claude's final result carries no text",
                           session=stream.session, cost=cost)
        return TurnResult("replied", reply=reply, note=note, session=stream.session, cost=cost)


# -- HTTP ------------------------------------------------------------------------------

BODY_LIMIT = READ_LIMIT  # bytes of a response body read; the rest is not
CONNECT_ATTEMPTS = 3
CONNECT_TIMEOUT_S = 10.0
CONNECT_BACKOFF_S = 0.5


ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(header: str, value: str) -> str:
    """*value* with every ``${VAR}`` replaced by the poller's environment variable VAR."""

    def one(m: re.Match) -> str:
        name = m.group(1)
        if name not in os.environ:
            raise LookupError(f"header {header} needs environment variable {name}, "
                              "which is not set")
        if any(c in os.environ[name] for c in "\r\n\x00"):
            raise LookupError(f"header {header}: environment variable {name} holds a line "
                              "break or NUL, which a header cannot carry")
        return os.environ[name]

    return ENV_REF.sub(one, value)


class HttpWaker(Waker):
    """POSTs the wake as JSON; the reply is the JSON ``reply`` field or a text/plain body.

    Only a failure to connect is retried (nothing was sent); once the request
    may have reached the agent, a failure is final, so no wake is delivered twice.
    Header values may be credentials: they go on the request and nowhere else.
    """

    name = "url"
    title = "HTTP"
    target = "url"
    accepts = ("headers",)

    def __init__(self, url: str, headers: Optional[dict] = None):
        self.url = url
        self.headers = dict(headers or {})

    @classmethod
    def from_agent(cls, agent) -> "HttpWaker":
        return cls(agent.url, (agent.options or {}).get("headers"))

    def run(self, turn: TurnRequest, on_start: Callable[[int], None], cancel: threading.Event) -> TurnResult:
        box: list[TurnResult] = []
        worker = threading.Thread(target=lambda: box.append(self._safe_post(turn)), daemon=True)
        worker.start()
        deadline = None if turn.timeout is None else time.monotonic() + turn.timeout
        while worker.is_alive():
            worker.join(0.2)
            if cancel.is_set():
                return stopped()
            if deadline is not None and time.monotonic() >= deadline and worker.is_alive():
                return timed_out(turn.timeout)
        return box[0]

    def payload(self, turn: TurnRequest) -> dict:
        body = {"wake_id": turn.wake_id, "agent": turn.agent, "mood": turn.mood,
                "kind": turn.kind, "tools": turn.tools, "text": turn.text,
                "answers": list(turn.answers)}
        body.update((name, value) for name, value in (("model", turn.model),
                                                      ("effort", turn.effort)) if value)
        return body

    def _safe_post(self, turn: TurnRequest) -> TurnResult:
        try:
            return self._post(turn)
        except Exception as exc:  # a bug here must still end the turn with a reason
            why = f"the HTTP waker failed: {type(exc).__name__}"
            return TurnResult("failed", error=why, public=why)

    def resolved_headers(self) -> dict[str, str]:
        """Header values with each ``${VAR}`` replaced from the environment at send time
        (``Bearer ${TOKEN}`` as well as ``${TOKEN}``), so a credential need be
        neither on a command line nor in the database.

        A ``${VAR}`` naming an unset variable raises LookupError naming the
        header and the variable, never a value.
        """
        return {name: expand_env(name, value) for name, value in self.headers.items()}

    def _post(self, turn: TurnRequest) -> TurnResult:
        import httpx

        try:
            headers = self.resolved_headers()
        except LookupError as exc:
            return TurnResult("failed", error=str(exc),
                           public="the poller lacks a value for one of its request headers")
        # The turn's own deadline (run) ends it; the client's read timeout only backs it
        # up, a little later, so a slow endpoint is "timed out", never a failed request.
        read = None if turn.timeout is None else turn.timeout + READ_GRACE_S
        timeout = httpx.Timeout(read, connect=CONNECT_TIMEOUT_S)
        last = ""
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            for attempt in range(CONNECT_ATTEMPTS):
                if attempt:
                    time.sleep(CONNECT_BACKOFF_S * attempt)
                try:
                    with client.stream("POST", self.url, json=self.payload(turn),
                                       headers=headers) as resp:
                        return _http_outcome(resp)
                except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                    last = mask_text(f"{type(exc).__name__}: {exc}"[:300])  # nothing was sent: try again
                except httpx.HTTPError as exc:
                    return TurnResult("failed", error=f"the request failed after it was sent, "
                                                   f"not retried: {type(exc).__name__}",
                                   public="the request to its endpoint failed after it was sent")
        return TurnResult("failed", error=f"could not connect after {CONNECT_ATTEMPTS} attempts ({last})",
                       public="its endpoint could not be reached")


READ_GRACE_S = 5.0  # the HTTP client's read timeout runs this much past the turn's


def _read_body(resp) -> tuple[bytes, bool]:
    """Up to BODY_LIMIT bytes of the body, and whether there was more."""
    body = bytearray()
    for chunk in resp.iter_bytes():
        body.extend(chunk)
        if len(body) > BODY_LIMIT:
            return bytes(body[:BODY_LIMIT]), True
    return bytes(body), False


def _http_outcome(resp) -> TurnResult:
    body, over = _read_body(resp)
    if not 200 <= resp.status_code < 300:
        excerpt = mask_text(" ".join(body[:2000].decode("utf-8", "replace").split())[:300])
        return TurnResult("failed", error=f"HTTP {resp.status_code} {resp.reason_phrase}"
                                       + (f": {excerpt}" if excerpt else ""),
                       public=f"the endpoint answered HTTP {resp.status_code}")
    ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json" or ctype.endswith("+json"):
        if over:
            why = f"the JSON response was over {BODY_LIMIT:,} bytes"
            return TurnResult("failed", error=why, public=why)
        try:
            obj = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            return TurnResult("failed", error=f"the response is not valid JSON: {str(exc)[:200]}",
                           public="the response is not valid JSON")
        reply = obj.get("reply") if isinstance(obj, dict) else None
        if not isinstance(reply, str):
            why = "the JSON response has no text 'reply' field"
            return TurnResult("failed", error=why, public=why)
        return TurnResult("replied", reply=reply)
    reply, note = settle.decode(body)
    if over:
        note = "; ".join(filter(None, [note, f"response body cut at {BODY_LIMIT:,} bytes"]))
    return TurnResult("replied", reply=reply, note=note)


# The wakers that come with the poller, in the order they are listed; known even
# where this distribution's entry points are not (a source tree on PYTHONPATH).
BUILT_IN = (CommandWaker, ClaudeWaker, HttpWaker)
