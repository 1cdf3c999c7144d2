"""``config check``: every value's type and range, secrets never echoed, warnings about
where secrets are kept, where each value came from, and ``--connect``.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json


from support.cli import Cli
from support.connect import SECRET, checks, connect_config, write
from support.connect import fake  # noqa: F401  (fixtures)


# -- --connect ----------------------------------------------------------------------------------

def test_connect_reaches_everything_and_exits_0(cli, sqlite_url, tmp_path, fake, monkeypatch):
    server = fake()
    monkeypatch.setenv("MOOD_POLLER_SUMMARIZER_API_KEY", SECRET)
    path = connect_config(tmp_path, server.host, f"http://{server.host}")
    r = Cli(sqlite_url, str(path))("config", "check", "--connect")
    found = checks(r.out)
    assert found["database"].startswith("ok (") and "SELECT 1" in found["database"]
    assert found["wiki"].startswith("ok (") and "revision 77" in found["wiki"]
    assert found["summarizer"].startswith("ok (") and "HTTP 200" in found["summarizer"]
    assert ("/v1/models", f"Bearer {SECRET}") in server.seen
    assert any(p.startswith("/w/api.php?") and "Cryptograss%3AMoods%2FDials" in p
               for p, _ in server.seen)
    assert SECRET not in r.out + r.err
    as_json = json.loads(Cli(sqlite_url, str(path))("config", "check", "--connect", "--json").out)
    assert [(c["check"], c["status"]) for c in as_json["connect"]] == [
        ("database", "ok"), ("wiki", "ok"), ("summarizer", "ok"), ("mail", "skipped")]


def test_connect_skips_what_is_not_configured(cli, sqlite_url):
    r = Cli(sqlite_url)("config", "check", "--connect")
    found = checks(r.out)
    assert found["database"].startswith("ok (")
    assert found["wiki"].startswith("skipped (") and "wiki.site" in found["wiki"]
    assert found["summarizer"].startswith("skipped (") and "extractive" in found["summarizer"]
    assert found["mail"].startswith("skipped (") and "mail.host" in found["mail"]


def test_connect_uses_the_configured_timeouts(tmp_path, sqlite_url, cli, fake):
    server = fake("hang")
    path = connect_config(tmp_path, server.host, f"http://{server.host}", timeout=0.3)
    r = Cli(sqlite_url, str(path)).fails("config", "check", "--connect")
    assert r.code == 75
    found = checks(r.out)
    assert found["database"].startswith("ok (")
    # The request's own timeout or the bound around it, whichever fires first.
    assert found["wiki"] in (f"failed: wiki {server.host} timed out",
                             f"failed: wiki {server.host} gave no answer within 0.3s")
    assert found["summarizer"] == f"failed: http://{server.host}/v1/models gave no answer within 0.3s"


def test_connect_reports_a_refused_api_key(tmp_path, sqlite_url, cli, fake, monkeypatch):
    server = fake("denied")
    monkeypatch.setenv("MOOD_POLLER_SUMMARIZER_API_KEY", SECRET)
    path = write(tmp_path, f"[summarizer]\nkind = \"llm\"\nmodel = \"m\"\n"
                           f"url = \"http://{server.host}/v1\"\n")
    r = Cli(sqlite_url, str(path)).fails("config", "check", "--connect")
    assert r.code == 75
    assert "HTTP 401" in checks(r.out)["summarizer"] and SECRET not in r.out + r.err


def test_connect_exits_75_when_every_failure_may_pass(tmp_path):
    # A PostgreSQL server that does not answer (yet): trying again later can help.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = Cli(f"postgresql+psycopg://mood@127.0.0.1:{port}/moods").fails("config", "check",
                                                                       "--connect")
    assert r.code == 75
    assert checks(r.out)["database"].startswith("failed: ")


def test_read_only_commands_create_no_database(tmp_path):
    missing = tmp_path / "no" / "such" / "moods.db"
    for args in (("status",), ("health",), ("agent", "list"), ("posts", "lobby"),
                 ("config", "check", "--connect")):
        r = Cli(f"sqlite:///{missing}").fails(*args)
        assert r.code == 78, (args, r.err)
        assert not (tmp_path / "no").exists(), args  # not even its directory
    assert "`mood-poller init` creates it" in Cli(f"sqlite:///{missing}").fails("status").err
    Cli(f"sqlite:///{missing}")("init")
    assert missing.exists()


def test_a_postgres_url_is_answered_with_the_spelling_to_use():
    r = Cli("postgres://mood@127.0.0.1/moods").fails("status")
    assert r.code == 78 and "postgresql+psycopg://" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_a_negative_setting_is_refused_by_its_range(cli):
    r = cli.fails("set", "considers_per_hour", "-5")
    assert "considers_per_hour must be between 0 and 60, got -5" in r.err
    assert "No such option" not in r.err


def test_config_check_checks_every_bridge_section(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text('[bridges.matrix]\nhomeserver = "http://127.0.0.1:8008"\n'
                    'server_nam = "example.org"\n')
    r = Cli(config=str(path)).fails("config", "check")
    assert r.code == 78 and "unknown option bridges.matrix.server_nam" in r.err
    path.write_text('[bridges.slack]\ntoken = "x"\n')
    r = Cli(config=str(path)).fails("config", "check")
    assert r.code == 78 and "unknown bridge section [bridges.slack]" in r.err
    path.write_text('[bridges.matrix]\nhomeserver = "http://127.0.0.1:8008"\n'
                    'server_name = "example.org"\n')
    r = Cli(config=str(path))("config", "check")  # right, but its tokens are not set here
    assert "needs MOOD_POLLER_MATRIX_AS_TOKEN and MOOD_POLLER_MATRIX_HS_TOKEN" in r.err
    monkeypatch.setenv("MOOD_POLLER_MATRIX_AS_TOKEN", "a" * 64)
    monkeypatch.setenv("MOOD_POLLER_MATRIX_HS_TOKEN", "b" * 64)
    r = Cli(config=str(path))("config", "check")
    assert "Matrix" not in r.err and "a" * 64 not in r.out + r.err
