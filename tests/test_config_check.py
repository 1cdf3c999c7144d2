"""``config check``: every value's type and range, secrets never echoed, warnings about
where secrets are kept, where each value came from, and ``--connect``."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
import time
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from support.cli import Cli
from poller import config

SECRET = "sekrit-4f9a2c"


def write(tmp_path, body: str, mode: int = 0o600):
    path = tmp_path / "config.toml"
    path.write_text(body)
    os.chmod(path, mode)
    return path


def one_line(r) -> str:
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1, r.err
    return lines[0]


# -- every value is checked: type, range, choice, shape -----------------------------------------

BAD = [
    ("[database]\nurl = 5\n", "database.url must be str"),
    ("[database]\nurl = \"not a url\"\n", "database.url must be a database URL"),
    ("[tokenizer]\nencoding = 7\n", "tokenizer.encoding must be str"),
    ("[tokenizer]\nencoding = \"\"\n", "tokenizer.encoding must not be empty"),
    ("[wiki]\nsite = \"https://wiki.test/w/\"\n", "wiki.site must be a host name"),
    ("[wiki]\nsite = \"wiki test\"\n", "wiki.site must be a host name"),
    ("[wiki]\nscheme = \"ftp\"\n", "wiki.scheme must be http or https"),
    ("[wiki]\npath = \"/w\"\n", "wiki.path must be the directory holding api.php"),
    ("[wiki]\ntitle = \"\"\n", "wiki.title must not be empty"),
    ("[wiki]\nttl = -1\n", "wiki.ttl must not be negative"),
    ("[wiki]\ntimeout = 0\n", "wiki.timeout must be above 0"),
    ("[wiki]\ntimeout = inf\n", "wiki.timeout must be a finite number"),
    ("[wiki]\ntimeout = nan\n", "wiki.timeout must be a finite number"),
    ("[wiki]\nmax_chars = 0\n", "wiki.max_chars must be at least 1"),
    ("[wiki]\nmax_chars = 1.5\n", "wiki.max_chars must be int"),
    ("[wiki]\nbot_user = true\n", "wiki.bot_user must be str"),
    ("[wake]\netiquette_url = \"wiki/Etiquette\"\n", "wake.etiquette_url must be an http"),
    ("[wake]\netiquette_url = \"ftp://wiki.test/E\"\n", "wake.etiquette_url must be an http"),
    ("[wake]\ntodo_pattern = \"https://wiki.test/todo\"\n", "must contain {slug}"),
    ("[wake]\ntodo_pattern = \"https://wiki.test/{slug}/{page}\"\n", "no placeholder but {slug}"),
    ("[wake]\ntodo_pattern = \"{slug}/todo\"\n", "wake.todo_pattern must be an http"),
    ("[wake]\nprompt_cap_chars = 1999\n", "wake.prompt_cap_chars must be at least 2000"),
    ("[wake]\npost_cap_tokens = 0\n", "wake.post_cap_tokens must be at least 1"),
    ("[wake]\nsummary_tokens = -5\n", "wake.summary_tokens must not be negative"),
    ("[summarizer]\nkind = \"gpt\"\n", "summarizer.kind must be extractive, llm or none"),
    ("[summarizer]\nurl = 5\n", "summarizer.url must be str"),
    ("[summarizer]\nurl = \"127.0.0.1:8080\"\n", "summarizer.url must be an http"),
    ("[summarizer]\ntimeout = -0.5\n", "summarizer.timeout must be above 0"),
    ("[summarizer]\nmodel = []\n", "summarizer.model must be str"),
    ("[poller]\ninterval = 0\n", "poller.interval must be above 0"),
    ("[poller]\ninterval = 1e12\n", "poller.interval must be at most"),
    ("[poller]\nbot_chain_cap = -1\n", "poller.bot_chain_cap must not be negative"),
    ("[poller]\nbot_chain_cap = true\n", "poller.bot_chain_cap must be int"),
    ("[poller]\nlook_timeout = 0\n", "poller.look_timeout must be above 0"),
    ("[poller]\nfull_timeout = -1\n", "poller.full_timeout must not be negative"),
    ("[poller]\nlease = 0\n", "poller.lease must be above 0"),
    ("[poller]\nturn_stale = 0\n", "poller.turn_stale must be above 0"),
    ("[poller]\nagent_env = \"A B\"\n", "poller.agent_env must name environment variables"),
    ("[poller]\nagent_env = [\"OK\", 3]\n", "poller.agent_env must be a list of variable names"),
    ("[poller]\nagent_env = 3\n", "poller.agent_env must be str or a list of names"),
    ("[poller]\nlaunch = \"fork\"\n", "poller.launch must be auto, process or thread"),
]


@pytest.mark.parametrize("body, message", BAD, ids=[m for _, m in BAD])
def test_a_bad_value_is_one_line_and_exit_78(tmp_path, body, message):
    path = write(tmp_path, body)
    r = Cli().fails("config", "check", "--config", str(path))
    assert r.code == 78
    assert message in one_line(r)
    assert r.out == ""


def test_the_rules_cover_every_option():
    named = {"database.url", "tokenizer.encoding"} | {
        f"{section}.{f.name}" for section, cls in config.SECTIONS.items()
        for f in dataclasses.fields(cls)}
    assert set(config.RULES) == named


def test_every_default_passes_its_own_rule():
    for name, value in defaults().items():
        assert config.check_value(name, value) == value, name


def defaults() -> dict:
    cfg = config.Config(db_url="sqlite:///x.db")
    out = {"database.url": cfg.db_url, "tokenizer.encoding": cfg.encoding}
    for section in config.SECTIONS:
        for key, value in dataclasses.asdict(getattr(cfg, section)).items():
            out[f"{section}.{key}"] = value
    return out


def test_a_value_from_the_environment_is_checked_and_named(tmp_path):
    env_bad = {"MOOD_POLLER_LAUNCH": "fork"}
    with pytest.raises(config.errors.ConfigError, match=r"poller.launch \(from MOOD_POLLER_LAUNCH\)"):
        config.load(env=env_bad)


@pytest.mark.parametrize("body", [
    "[wiki]\nbot_password = 12345\n",
    f"[summarizer]\napi_key = [\"{SECRET}\"]\n",
    f"[wiki]\nbot_password = {{ value = \"{SECRET}\" }}\n",
    f"[database]\nurl = \"{SECRET}\"\n",
    f"[database]\nurl = [\"postgresql://mood:{SECRET}@db/moods\"]\n",
])
def test_no_error_echoes_a_secret(tmp_path, body):
    path = write(tmp_path, body)
    r = Cli().fails("config", "check", "--config", str(path))
    assert r.code == 78
    assert SECRET not in r.err + r.out and "12345" not in r.err
    assert "not shown" in one_line(r)


def test_a_bad_database_url_from_the_environment_is_masked(monkeypatch):
    monkeypatch.setenv("MOOD_POLLER_DB", f"postgresql://mood:{SECRET}@db:notaport/moods")
    r = Cli().fails("config", "check")
    line = one_line(r)
    assert r.code == 78 and r.out == ""
    assert "database.url (from MOOD_POLLER_DB) is not a database URL" in line
    assert SECRET not in line and "mood:***@db" in line
    assert "unparseable" not in line


def test_a_malformed_database_url_flag_fails_config_check(tmp_path):
    r = Cli("postgresql+psycopg://mood:pw@[::1/moods").fails("config", "check")
    assert r.code == 78 and "database.url (from --db)" in one_line(r)


# -- where secrets are kept ---------------------------------------------------------------------

def test_a_secret_in_a_file_every_user_may_read_is_warned_about(tmp_path):
    path = write(tmp_path, f"[wiki]\nbot_password = \"{SECRET}\"\n", mode=0o644)
    r = Cli()("config", "check", "--config", str(path))
    assert r.code == 0 and r.out.startswith("# config OK")
    assert SECRET not in r.out + r.err
    warnings = [line for line in r.err.splitlines() if line.strip()]
    assert any("every user may read it" in w and "mode 644" in w and "wiki.bot_password" in w
               for w in warnings), r.err
    assert any("MOOD_POLLER_WIKI_BOT_PASSWORD" in w for w in warnings), r.err
    assert all(w.startswith("mood-poller: warning: ") for w in warnings)


def test_a_private_file_holding_a_secret_only_suggests_the_environment(tmp_path):
    path = write(tmp_path, f"[summarizer]\napi_key = \"{SECRET}\"\n"
                           f"[database]\nurl = \"postgresql+psycopg://mood:{SECRET}@db/moods\"\n",
                 mode=0o640)
    r = Cli()("config", "check", "--config", str(path))
    assert r.code == 0 and SECRET not in r.out + r.err
    assert "every user may read" not in r.err
    assert "MOOD_POLLER_SUMMARIZER_API_KEY" in r.err and "MOOD_POLLER_DB" in r.err


def test_no_warning_without_a_secret_in_the_file(tmp_path, monkeypatch):
    path = write(tmp_path, "[poller]\ninterval = 2\n", mode=0o644)
    monkeypatch.setenv("MOOD_POLLER_SUMMARIZER_API_KEY", SECRET)
    r = Cli()("config", "check", "--config", str(path))
    assert r.err == "" and SECRET not in r.out


# -- where each value came from -----------------------------------------------------------------

def test_values_from_the_environment_and_flags_are_marked(tmp_path, monkeypatch):
    db = tmp_path / "env.db"
    path = write(tmp_path, "[poller]\ninterval = 2\n")
    monkeypatch.setenv("MOOD_POLLER_DB", f"sqlite:///{db}")
    monkeypatch.setenv("MOOD_POLLER_SUMMARIZER_API_KEY", SECRET)
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", "thread")
    out = Cli()("config", "check", "--config", str(path)).out
    lines = out.splitlines()
    assert f'url = "sqlite:///{db}"  # from MOOD_POLLER_DB' in lines
    assert 'api_key = "***"  # from MOOD_POLLER_SUMMARIZER_API_KEY' in lines
    assert 'launch = "thread"  # from MOOD_POLLER_LAUNCH' in lines
    assert "interval = 2.0" in lines  # from the file: no mark
    assert tomllib.loads(out)["poller"]["launch"] == "thread"  # still TOML
    as_json = json.loads(Cli()("config", "check", "--config", str(path), "--json").out)
    sources = as_json["sources"]
    assert sources["database.url"] == "MOOD_POLLER_DB"
    assert sources["summarizer.api_key"] == "MOOD_POLLER_SUMMARIZER_API_KEY"
    assert sources["poller.interval"] == "file" and sources["poller.lease"] == "default"
    assert SECRET not in json.dumps(as_json)
    flagged = json.loads(Cli(f"sqlite:///{db}")("config", "check", "--json").out)
    assert flagged["sources"]["database.url"] == "--db"


# -- --connect ----------------------------------------------------------------------------------

class Fake:
    """A loopback HTTP server: a MediaWiki action API serving the dials page and an
    OpenAI-compatible model list; *behaviour* picks "ok", "hang" or "denied"."""

    def __init__(self, behaviour: str = "ok"):
        self.behaviour = behaviour
        self.seen: list[tuple[str, str | None]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.seen.append((self.path, self.headers.get("Authorization")))
                if fake.behaviour == "hang":
                    time.sleep(3)
                    return
                if fake.behaviour == "denied":
                    self.reply(401, {"error": "bad key"})
                    return
                parts = urlsplit(self.path)
                if parts.path.endswith("/api.php"):
                    title = parse_qs(parts.query).get("titles", [""])[0]
                    page = {"title": title, "revisions": [
                        {"revid": 77, "slots": {"main": {"content": "== discretion =="}}}]}
                    self.reply(200, {"query": {"pages": [page]}})
                elif parts.path == "/v1/models":
                    self.reply(200, {"data": [{"id": "m"}]})
                else:
                    self.reply(404, {})

            def reply(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    servers = []

    def start(behaviour: str = "ok") -> Fake:
        servers.append(Fake(behaviour))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


@pytest.fixture
def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def connect_config(tmp_path, wiki_host: str, summarizer_url: str, timeout: float = 5.0):
    return write(tmp_path, f"[wiki]\nsite = \"{wiki_host}\"\nscheme = \"http\"\ntimeout = {timeout}\n"
                           f"[summarizer]\nkind = \"llm\"\nmodel = \"m\"\nurl = \"{summarizer_url}\"\n"
                           f"timeout = {timeout}\n")


def checks(out: str) -> dict[str, str]:
    found = {}
    for line in out.splitlines():
        for name in ("database", "wiki", "summarizer", "mail"):
            if line.startswith(f"# {name}: "):
                found[name] = line[len(f"# {name}: "):]
    return found


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


def test_connect_names_each_failure_and_exits_75(tmp_path, closed_port, monkeypatch):
    monkeypatch.setenv("MOOD_POLLER_SUMMARIZER_API_KEY", SECRET)
    missing = tmp_path / "never-made.db"
    path = connect_config(tmp_path, f"127.0.0.1:{closed_port}",
                          f"http://bot:{SECRET}@127.0.0.1:{closed_port}/v1?api_key={SECRET}")
    path.write_text(path.read_text() + f'[mail]\nhost = "127.0.0.1"\nport = {closed_port}\n'
                    'starttls = false\nsender = "poller@example.org"\n')
    r = Cli(f"sqlite:///{missing}", str(path)).fails("config", "check", "--connect")
    assert r.code == 75
    found = checks(r.out)
    assert set(found) == {"database", "wiki", "summarizer", "mail"}
    assert all(v.startswith("failed: ") for v in found.values()), found
    assert "mood-poller init" in found["database"]
    assert not missing.exists()  # a check creates nothing
    assert "unreachable" in found["wiki"]
    assert "unreachable" in found["summarizer"] and "api_key=***" in found["summarizer"]
    assert SECRET not in r.out + r.err
    assert "cannot reach database, wiki, summarizer, mail" in r.err


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
