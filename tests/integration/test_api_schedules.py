"""Alarms and check-ins over the JSON API: the same verbs, the same refusals."""

from __future__ import annotations

import pytest

from support import webserver


@pytest.fixture
def served(cli):
    s = webserver.start(cli.db_url)  # the clock: 2031-05-06 09:00 UTC
    s.cli = cli
    cli("mood", "add", "lobby")
    cli("agent", "add", "bot", "--command", "true")
    yield s
    s.stop()


def test_operators_add_list_and_remove_alarms_others_may_not(served):
    op = served.client(served.person("olga", operator=True))
    ada = served.client(served.person("ada"))
    body = {"agent": "bot", "mood": "lobby", "daily": "02:30", "tz": "Europe/Berlin",
            "note": "the nightly look"}
    assert ada.post("/api/v1/alarms", json=body).status_code == 403
    r = op.post("/api/v1/alarms", json=body)
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["set_by"] == "olga" and made["next"].startswith("2031-05-07 02:30 Europe/Berlin")
    assert any("does not exist" in w for w in made["warnings"])  # the spring gap
    assert [a["id"] for a in op.get("/api/v1/alarms", params={"agent": "bot"}).json()] == \
        [made["id"]]
    bad = op.post("/api/v1/alarms", json={"agent": "bot", "mood": "lobby", "daily": "02:30"})
    assert bad.status_code == 400 and "tz" in bad.json()["detail"]
    both = op.post("/api/v1/alarms", json=dict(body, cron="0 9 * * *"))
    assert both.status_code == 400 and "exactly one" in both.json()["detail"]
    assert op.delete(f"/api/v1/alarms/{made['id']}").status_code == 200
    assert op.get("/api/v1/alarms").json() == []
    assert op.delete(f"/api/v1/alarms/{made['id']}").status_code == 404


def test_an_alarm_that_can_never_fire_is_a_400_and_nothing_is_written(served):
    op = served.client(served.person("olga", operator=True))
    base = {"agent": "bot", "mood": "lobby"}
    for when, message in [({"cron": "0 0 31 2 *", "tz": "UTC"}, "cron 0 0 31 2 * never fires"),
                          ({"at": "9999-12-31 23:59", "tz": "Etc/GMT+12"}, "never fires")]:
        r = op.post("/api/v1/alarms", json=base | when)
        assert r.status_code == 400 and message in r.json()["detail"], r.text
    assert op.get("/api/v1/alarms").json() == []


def test_a_person_checks_in_for_a_named_deadline_and_a_contact_accepts_once(served):
    ada = served.client(served.person("ada"))
    served.cli("checkin", "setup", "--person", "ada", "--agent", "bot", "--mood", "lobby",
               "--daily", "21:00", "--tz", "Europe/Berlin", "--now", "2031-05-06T08:00:00Z")
    mine = ada.get("/api/v1/checkin").json()
    deadline = mine["next_deadline"]
    assert deadline == "2031-05-06 21:00 Europe/Berlin (Tue, UTC+02:00)"
    r = ada.post("/api/v1/checkin/done", json={"for": deadline})
    assert r.status_code == 200 and r.json()["answered"] == deadline
    assert ada.post("/api/v1/checkin/done", json={"for": deadline}).json()["answered"] is None
    far = ada.post("/api/v1/checkin/done", json={"for": "2031-05-09 21:00"})
    assert far.status_code == 400 and "may name" in far.json()["detail"]
    nobody = served.client().post("/api/v1/checkin/accept", json={"code": "not-a-code"})
    assert nobody.status_code == 400 and "unknown" in nobody.json()["detail"]


def test_the_im_here_button_checks_in_for_the_deadline_it_names_and_keeps_it(served):
    import re

    from support.webserver import csrf_of, signed_in

    c = signed_in(served, served.person("ada"))
    served.cli("checkin", "setup", "--person", "ada", "--agent", "bot", "--mood", "lobby",
               "--daily", "21:00", "--tz", "Europe/Berlin", "--now", "2031-05-05T08:00:00Z")
    page = c.get("/").text  # the clock: Tuesday 2031-05-06 11:00 Berlin; Monday 21:00 missed
    assert "not an emergency service" in page
    monday = "2031-05-05 21:00 Europe/Berlin (Mon, UTC+02:00)"
    assert f'name="for" value="{monday}"' in page
    r = c.post("/checkin/done", data={"csrf": csrf_of(page), "for": monday})
    assert r.status_code == 303
    kept = c.get(r.headers["location"]).text
    assert f'name="for" value="{monday}"' in kept and "Refresh" in kept  # the same deadline
    again = c.post("/checkin/done", data={"csrf": csrf_of(kept), "for": monday})
    assert again.status_code == 303
    mine = served.client(served.tokens["ada"]).get("/api/v1/checkin").json()
    assert mine["answered_until"] == monday and mine["next_deadline"].startswith("2031-05-06 21:00")
    fresh = c.get("/").text
    assert re.search(r'name="for" value="2031-05-06 21:00', fresh)
