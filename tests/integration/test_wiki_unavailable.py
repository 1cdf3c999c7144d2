"""A wiki that cannot be reached is a temporary failure (exit 75), never a config error."""

from __future__ import annotations

import socket

from support.cli import Cli


def test_seeding_an_unreachable_wiki_exits_75(sqlite_url, tmp_path, monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[wiki]\nsite = "127.0.0.1:{port}"\nscheme = "http"\npath = "/"\n'
                   f'bot_user = "Bot"\ntimeout = 2.0\n')
    monkeypatch.setenv("MOOD_POLLER_WIKI_BOT_PASSWORD", "not-a-real-one")
    c = Cli(sqlite_url, str(cfg))
    c("init")
    r = c.fails("dials", "--seed-page")
    assert r.code == 75 and "not-a-real-one" not in r.err
