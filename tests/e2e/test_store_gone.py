"""`serve` and `run` over a SQLite file that is deleted while they run: posts are
refused, `/healthz` names the file, and the poller stops with a line saying why.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import json
import os

import httpx

from support import webserver
from support.runs import start_run
from support.waiting import wait_for


def delete(path) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.unlink(f"{path}{suffix}")


def test_serve_refuses_posts_into_a_deleted_file_and_healthz_says_so(cli, tmp_path):
    path = tmp_path / "moods.db"
    cli("mood", "add", "lobby")
    cli("person", "add", "ada")
    token = cli("person", "token", "ada").out.strip()
    served = webserver.serve_process(cli.db_url, tmp_path, "--with-poller")
    try:
        c = httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"},
                         timeout=120)
        wait_for(lambda: c.get("/healthz").status_code == 200, what="the first cycle")
        assert c.post("/api/v1/moods/lobby/posts", json={"text": "before"}).status_code == 201
        delete(path)
        r = c.post("/api/v1/moods/lobby/posts", json={"text": "after"})
        assert r.status_code == 503 and r.json()["error"] == "store_error"
        assert str(path) in r.json()["detail"] and "deleted" in r.json()["detail"]
        h = c.get("/healthz")
        assert h.status_code == 503 and h.json()["ok"] is False
        assert str(path) in h.json()["database"] and "deleted" in h.json()["database"]
        assert not path.exists()  # nothing made an empty database in its place
        wait_for(lambda: "poller stopping: the database file" in served.log.read_text(),
                 what="the poller beside it to stop")
        assert c.get("/healthz").status_code == 503  # the door still answers, with the reason
    finally:
        assert served.stop() == 0
    assert "Traceback" not in served.log.read_text()


def test_run_stops_with_one_line_when_its_file_is_deleted(cli, tmp_path):
    path = tmp_path / "moods.db"
    poller = start_run(cli.db_url, tmp_path, "--log-json", now=None)
    log = tmp_path / "run.log"
    try:
        wait_for(lambda: "run_started" in log.read_text(), what="the poller to start")
        delete(path)
        assert poller.wait(timeout=120) == 78
    finally:
        if poller.poll() is None:
            poller.kill()
            poller.wait()
    text = log.read_text()
    gone = [json.loads(line) for line in text.splitlines()
            if line.startswith("{") and json.loads(line).get("action") == "store_gone"]
    assert len(gone) == 1 and str(path) in gone[0]["message"], text
    assert "Traceback" not in text and not path.exists()
