"""Model agents: what a model turn costs the poller, and a day's tokens with kept sessions.

A loopback OpenAI-compatible server runs in a process of its own (its CPU is not
counted), answering every request after a fixed think time and reporting as
prompt tokens what it was sent (cl100k tokens of the messages).

1. **CPU per turn.**  40 mentions answered one after another by a model agent
   through ``Poller.tick`` with turns in this process (think time 50 ms): this
   process's CPU per turn, after a warm-up turn (the provider library's import is
   paid once per process).  Target: <= 5 ms beyond the server's time.  Floor: a
   turn of the same agent answered by a command agent that is ``true``-fast is
   not comparable (a subprocess); the floor printed is ``python -c pass`` CPU.
2. **Memory per turn in flight.**  16 Moods, one mention each, think time 3 s: the
   RSS of this process with 16 model turns in flight, minus before, per turn.
3. **A day's prompt tokens and dollars.**  A Mood's day: 300 posts by 6 people,
   every 8th naming the agent (mentions, 37).  With a kept session each turn sends
   the conversation so far plus a delta wake (summarised past ``session_tokens``);
   answered OpenClaw-style every message is sent with the last 50 messages.  Both
   priced at gpt-4o-mini's list prices ($0.15 / $0.60 per million).

Run: ``python bench/model_agents.py [--quick]``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import subprocess
import sys
import textwrap
import threading
import time

import _common
from _common import T0

from poller.turns import launch  # noqa: E402
from poller.cycle import loop  # noqa: E402

USD_IN, USD_OUT = 0.15, 0.60  # gpt-4o-mini, per million tokens
ANSWER = "Thanks: I looked at it, and the build should be green again after the fix."

SERVER = textwrap.dedent('''
    import json, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from poller import tokens
    count = tokens.counter().count
    think = float(sys.argv[1])
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            sent = sum(count(str(m.get("content") or "")) + 4 for m in body["messages"])
            time.sleep(think)
            text = %r
            out = json.dumps({"id": "c", "object": "chat.completion", "created": int(time.time()),
                              "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": text}}],
                              "usage": {"prompt_tokens": sent, "completion_tokens": count(text),
                                        "total_tokens": sent}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        def log_message(self, *a):
            pass
    s = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(s.server_address[1], flush=True)
    s.serve_forever()
''' % ANSWER)


class Server:
    def __init__(self, think: float) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(think)],
                                     stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, PYTHONPATH=str(_common.REPO)))
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}/v1"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def world(store, url: str, moods: int) -> list[str]:
    slugs = _common.build_world(store, moods, [], ["ada"])
    store.add_agent("sage", T0, waker="model", timeout=120,
                    options={"model": "openai:gpt-4o-mini", "base_url": url})
    for key, value in (("cooldown", "0"), ("considers_per_hour", "0"), ("idle_after", "0"),
                       ("max_wakes_per_hour", "600"), ("parallel_turns", "64"),
                       ("max_tool_calls", "0")):
        store.set_setting(key, value, T0)
    return slugs


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def cpu_per_turn(turns: int) -> float:
    server = Server(0.05)
    try:
        _, store, cfg = _common.fresh_database()
        (slug,) = world(store, server.url, 1)
        p = loop.Poller(store, cfg, launcher=launch.ThreadLauncher(store, cfg))
        now = T0
        p.tick(now)
        cpu = []
        for i in range(turns + 1):
            now += dt.timedelta(seconds=30)
            store.add_post(slug, "ada", f"@sage question {i}: {_common.CHATTER[i % 10]}", now)
            with _common.Timed() as t:
                p.tick(now + dt.timedelta(seconds=1))
                p.wait(60)
            if i:  # the first turn imports the provider library
                cpu.append(t.cpu * 1000)
        p.release()
        return _common.median(cpu)
    finally:
        server.close()


def waker_cpu(turns: int) -> float:
    """The model waker's own CPU per run (the wake composed already, no store), median."""
    from poller.turns import model as model_waker
    from poller.turns.wakers import TurnRequest

    server = Server(0.05)
    try:
        waker = model_waker.ModelWaker({"model": "openai:gpt-4o-mini", "base_url": server.url})
        turn = TurnRequest(1, "sage", "lobby", "mention", "full", "<mood-wake>hi</mood-wake>",
                           timeout=30)
        cpu = []
        for i in range(turns + 1):
            with _common.Timed() as t:
                waker.run(turn, lambda pgid: None, threading.Event())
            if i:
                cpu.append(t.cpu * 1000)
        return _common.median(cpu)
    finally:
        server.close()


def memory_per_turn(n: int) -> float:
    server = Server(3.0)
    try:
        _, store, cfg = _common.fresh_database()
        slugs = world(store, server.url, n)
        p = loop.Poller(store, cfg, launcher=launch.ThreadLauncher(store, cfg))
        p.tick(T0)
        store.add_post(slugs[0], "ada", "@sage warm up", T0 + dt.timedelta(seconds=1))
        p.tick(T0 + dt.timedelta(seconds=2))
        p.wait(60)
        before = rss_mb()
        later = T0 + dt.timedelta(seconds=30)
        for slug in slugs:
            store.add_post(slug, "ada", "@sage what is new here?", later)
        p.tick(later + dt.timedelta(seconds=1))
        time.sleep(1.5)  # every turn is waiting on the server now
        during = rss_mb()
        p.wait(60)
        p.release()
        return (during - before) / n
    finally:
        server.close()


def a_day(people: int = 6, posts: int = 300, every: int = 8) -> tuple[int, int, int, int]:
    """(prompt tokens kept-session, OpenClaw-style; output tokens each), for one Mood's day."""
    server = Server(0.0)
    try:
        _, store, cfg = _common.fresh_database()
        (slug,) = world(store, server.url, 1)
        for i in range(people):
            store.add_person(f"p{i}", "full", T0)
        p = loop.Poller(store, cfg, launcher=launch.ThreadLauncher(store, cfg))
        p.tick(T0)
        now, texts = T0, []
        for i in range(posts):
            now += dt.timedelta(minutes=3)
            text = (f"@sage {_common.CHATTER[i % 10]}" if i % every == every - 1
                    else _common.CHATTER[(i * 7) % 10])
            store.add_post(slug, f"p{i % people}", text, now)
            texts.append(text)
            if text.startswith("@sage"):
                p.tick(now + dt.timedelta(seconds=1))
                p.wait(60)
        p.release()
        import sqlalchemy as sa

        from poller.models import Turn

        with store.reading() as s:
            kept_in, kept_out = s.execute(sa.select(sa.func.sum(Turn.tokens_in),
                                                    sa.func.sum(Turn.tokens_out))).one()
        counter = store.counter
        system = 60  # a persona of two sentences
        answer = counter.count(ANSWER)
        claw_in = sum(system + sum(counter.count(t) + 8 for t in texts[max(0, i - 49):i + 1])
                      for i in range(len(texts)))
        return int(kept_in or 0), claw_in, int(kept_out or 0), answer * len(texts)
    finally:
        server.close()


def floor_ms() -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    _common.quiet_logs()
    print(_common.facts())
    commit = subprocess.run(["git", "-C", str(_common.REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print(f"commit {commit}; floor: python -c pass {floor_ms():.1f} ms CPU")
    turns = 10 if args.quick else 40
    print(f"cpu: {cpu_per_turn(turns):.1f} ms CPU per model turn in this process (median of "
          f"{turns}, the server's 50 ms think time not counted; {_common.load()})")
    print(f"  of which the model waker's own run: {waker_cpu(turns):.1f} ms CPU (pydantic-ai and "
          f"the provider SDK; the rest is the poller's cycle, settling and the turn's thread)")
    n = 4 if args.quick else 16
    print(f"memory: {memory_per_turn(n):.2f} MB RSS per model turn in flight ({n} in flight)")
    kept_in, claw_in, kept_out, claw_out = a_day(posts=80 if args.quick else 300)
    usd = lambda i, o: (i * USD_IN + o * USD_OUT) / 1e6  # noqa: E731
    print(f"a day: kept sessions {kept_in:,} prompt tokens, {kept_out:,} out, "
          f"${usd(kept_in, kept_out):.4f}; every message with the last 50: {claw_in:,} prompt "
          f"tokens, {claw_out:,} out, ${usd(claw_in, claw_out):.4f} "
          f"({claw_in / max(1, kept_in):.1f}x the prompt tokens)")


if __name__ == "__main__":
    main()
