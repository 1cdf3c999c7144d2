"""A SQLite file deleted or replaced under a running store: nothing more is written
into it, and health says which file is gone.

Here, on a real SQLite file with the store in process; the processes (`serve`,
`run`) sit under the same name in the end-to-end layer.
"""

from __future__ import annotations

import os
import shutil

import pytest

from poller import errors
from poller.clock import Clock
from poller.store import db
from poller.web import health
from support.webserver import T0, store_for


def gone(path, how: str) -> None:
    """Take the file at *path* away: deleted, or replaced by a copy of itself."""
    if how == "deleted":
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(f"{path}{suffix}"):
                os.unlink(f"{path}{suffix}")
    else:
        shutil.copy(path, f"{path}.copy")
        os.replace(f"{path}.copy", path)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_store_whose_file_went_away_writes_nothing_more(cli, tmp_path, how):
    path = tmp_path / "moods.db"
    store = store_for(cli.db_url)
    store.add_mood("lobby", "The lobby", T0)
    gone(path, how)
    with pytest.raises(errors.StoreGone, match=f"{path}.*{how}"):
        store.add_mood("den", "The den", T0)
    with pytest.raises(errors.StoreGone):
        store.moods()
    assert how == "replaced" or not path.exists()  # no empty file made in its place
    report = health.facts(store, T0)
    assert report["ok"] is False and str(path) in report["database"] and how in report["database"]


def test_health_checks_the_schema_of_the_store_it_opened(cli, tmp_path):
    store = store_for(cli.db_url)
    with store.engine.begin() as conn:
        conn.exec_driver_sql(f"UPDATE {db.VERSION_TABLE} SET version_num = 'not-ours'")
    report = health.facts(store, Clock.at(T0)())
    assert report["ok"] is False and "is at not-ours" in report["database"]
    assert str(tmp_path / "moods.db") in report["database"]


def test_a_file_in_place_passes_the_check(cli):
    store = store_for(cli.db_url)
    store.add_mood("lobby", "The lobby", T0)
    assert [m.slug for m in store.moods()] == ["lobby"]
    assert health.facts(store, T0)["database"] == "ok"
