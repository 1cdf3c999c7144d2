"""``config check``: every value's type and range, secrets never echoed, warnings about
where secrets are kept, where each value came from, and ``--connect``.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import tomllib

import pytest

from support.cli import Cli
from poller import config
from support.connect import SECRET, checks, connect_config, write

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

@pytest.fixture
def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def test_connect_names_each_failure_and_exits_78_when_one_cannot_pass(tmp_path, closed_port,
                                                                       monkeypatch):
    monkeypatch.setenv("MOOD_POLLER_SUMMARIZER_API_KEY", SECRET)
    missing = tmp_path / "never-made.db"
    path = connect_config(tmp_path, f"127.0.0.1:{closed_port}",
                          f"http://bot:{SECRET}@127.0.0.1:{closed_port}/v1?api_key={SECRET}")
    path.write_text(path.read_text() + f'[mail]\nhost = "127.0.0.1"\nport = {closed_port}\n'
                    'starttls = false\nsender = "poller@example.org"\n')
    r = Cli(f"sqlite:///{missing}", str(path)).fails("config", "check", "--connect")
    assert r.code == 78  # no database file: waiting will not make one (the rest could pass)
    found = checks(r.out)
    assert set(found) == {"database", "wiki", "summarizer", "mail"}
    assert all(v.startswith("failed: ") for v in found.values()), found
    assert "mood-poller init" in found["database"]
    assert not missing.exists()  # a check creates nothing
    assert "unreachable" in found["wiki"]
    assert "unreachable" in found["summarizer"] and "api_key=***" in found["summarizer"]
    assert SECRET not in r.out + r.err
    assert "cannot reach database, wiki, summarizer, mail" in r.err


