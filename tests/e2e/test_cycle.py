"""The cycle's seams: turns in process or as runners, the recheck before a wake is
recorded, one ingest path for replies, one clock, SQL only in the store, and the
dial wording read (and cached) outside every write transaction.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations


from support.cli import Cli
from support.mediawiki import mediawiki, running_wiki  # noqa: F401  (fixtures)
from support.machine import REPO
from support.cycle import at, cached


# -- the dial wording, fetched outside the write transactions, cached in the database --------


def test_the_loop_saves_the_dial_cache_on_each_database(running_wiki, any_cli, tmp_path):
    title = f"Cryptograss:Moods/Dials/loop-{tmp_path.name[-12:]}"
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[wiki]\nsite = "{running_wiki.host}"\nscheme = "http"\n'
                   f'path = "{running_wiki.path}"\ntitle = "{title}"\nttl = 60\ntimeout = 5.0\n')
    c = Cli(any_cli.db_url, str(cfg))
    first = running_wiki.edit(title, (REPO / "memory-lane" / "dials.wikitext").read_text())
    c("mood", "add", "lobby")
    c("tick", "--now", at(0))
    assert cached(c.db_url, title) == first
    edited = (REPO / "memory-lane" / "dials.wikitext").read_text().replace(
        "Say something", "Say a thing", 1) + "\n<!-- edited -->\n"
    second = running_wiki.edit(title, edited)
    assert second != first
    c("tick", "--now", at(30))  # within the ttl: the copy stands
    assert cached(c.db_url, title) == first
    c("tick", "--now", at(61))
    assert cached(c.db_url, title) == second
