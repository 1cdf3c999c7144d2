"""README's Quick start, run word for word, gets an answer; tripping over history is named.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from support.machine import REPO


def quick_start_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"(?m)^    (mood-poller .*)$", section)
    return [line.split("  #", 1)[0].strip() for line in block]


def test_the_quick_start_as_written_ends_with_the_agents_reply(tmp_path):
    commands = quick_start_commands()
    assert commands[0] == "mood-poller init" and commands[-1] == "mood-poller posts lobby"
    bindir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_")}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"  # python3 and mood-poller
    out = ""
    for command in commands:
        r = subprocess.run(command, shell=True, env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, f"{command}: {r.stderr}"
        assert "history" not in r.stderr, f"{command} warned: {r.stderr}"
        out = r.stdout
    lines = out.strip().splitlines()
    assert "[ada," in lines[0] and "hello @helper" in lines[0]
    assert lines[-1].startswith("#") and "[helper," in lines[-1]


