"""Check-in agreements end to end: the seed's worked examples through real turns, grace once
per streak, consent by a single-use code, and one contact message through a real SMTP server.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys


from support.cli import Cli
from support.smtp import SmtpServer
from support.checkins import UTC, at, invitation_code, room, setup
from support.checkins import smtp  # noqa: F401  (fixtures)

MON = "2026-10-05 21:00 Europe/Berlin (Mon, UTC+02:00)"
TUE = "2026-10-06 21:00 Europe/Berlin (Tue, UTC+02:00)"


def status(c: Cli, when: str) -> dict:
    return json.loads(c("checkin", "status", "--person", "ada", "--json", "--now", when).out)


def wakes(c: Cli, kind: str) -> list[dict]:
    return sorted(json.loads(c("wakes", "--kind", kind, "--json").out), key=lambda w: w["id"])


def posts(c: Cli) -> list[str]:
    return [p["text"] for p in json.loads(c("posts", "lobby", "--limit", "200", "--json").out)]


def outbox_bodies(url: str) -> list[str]:
    import sqlalchemy as sa

    from poller import models

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.select(models.MailOut.body)).scalars())
    finally:
        engine.dispose()


def say(c: Cli, reply, when: str, text: str, agent_says: str) -> None:
    reply.write_text(agent_says)
    c("post", "lobby", "--as", "ada", text, "--at", when)
    c("tick", "--now", when, "--wait")


def consented_and_armed(c, smtp) -> None:
    """An agreement with carol as its contact: invited, accepted, armed (Monday 10:02)."""
    setup(c, "--contact-email", "carol@example.org", "--grace-minutes", "30")
    c("tick", "--now", at(5, 10, 1))  # the invitation goes out
    c("checkin", "accept", input=invitation_code(smtp.received[0][1]) + "\n")
    c("checkin", "arm", "--person", "ada", "--now", at(5, 10, 2))


def test_the_seeds_monday_example_through_real_turns(cli, tmp_path):
    reply = tmp_path / "reply.txt"
    c = room(cli, tmp_path, reply)
    out = setup(c)
    assert out["next_deadline"] == MON and "not an emergency service" in \
        out["not_an_emergency_service"]
    reply.write_text("@ada you have not checked in yet: are you there?")
    c("tick", "--now", at(5, 20, 59), "--wait")
    assert wakes(c, "checkin-missed") == []
    c("tick", "--now", at(5, 21), "--wait")  # Monday 21:00 missed
    (w,) = wakes(c, "checkin-missed")
    text = c("wakes", "show", str(w["id"])).out
    assert f"did not check in by {MON}" in text and "Tell @ada here" in text
    assert status(c, at(5, 21, 5))["streak"]["open"]
    # "I'm back" at 21:10 closes Monday; again at 21:11 answers nothing.
    say(c, reply, at(5, 21, 10), "@bot I'm back, sorry",
        "Good to hear.\n```checkin\nfor: ada\nquote: I'm back\n```")
    assert f"ada's check-in counted for {MON}; next deadline {TUE}." in posts(c)
    s = status(c, at(5, 21, 10))
    assert not s["streak"]["open"] and s["streak"]["closed_by"] == "checkin"
    say(c, reply, at(5, 21, 11), "@bot I'm back, really",
        "Yes.\n```checkin\nquote: I'm back, really\n```")
    assert f"ada's check-in answered nothing new; next deadline {TUE}." in posts(c)
    assert status(c, at(5, 21, 12))["next_deadline"] == TUE  # Tuesday 21:00 still due
    # "I'm here" on Tuesday at 20:00 counts for Tuesday 21:00: no wake at 21:00.
    say(c, reply, at(6, 20), "@bot I'm here", "Noted.\n```checkin\nquote: i'm HERE\n```")
    assert f"ada's check-in counted for {TUE}; next deadline " \
           "2026-10-07 21:00 Europe/Berlin (Wed, UTC+02:00)." in posts(c)
    c("tick", "--now", at(6, 21, 1), "--wait")
    assert len(wakes(c, "checkin-missed")) == 1


def test_a_quote_that_is_not_the_persons_post_is_refused(cli, tmp_path):
    reply = tmp_path / "reply.txt"
    c = room(cli, tmp_path, reply)
    setup(c)
    c("person", "add", "bob", "--trust", "full")
    reply.write_text("Sure.\n```checkin\nfor: ada\nquote: ada is fine\n```")
    c("post", "lobby", "--as", "bob", "@bot ada is fine, I saw her", "--at", at(5, 20))
    c("tick", "--now", at(5, 20), "--wait")
    assert any("checkin block was refused" in p and "matches no post by ada" in p
               for p in posts(c))
    assert status(c, at(5, 20, 1))["answered_until"] is None
    c("tick", "--now", at(5, 21), "--wait")
    assert len(wakes(c, "checkin-missed")) == 1  # still missed


def test_a_deadline_shortly_after_midnight_and_dated_check_ins(cli, tmp_path):
    reply = tmp_path / "reply.txt"
    c = room(cli, tmp_path, reply)
    c("checkin", "setup", "--person", "ada", "--agent", "bot", "--mood", "lobby",
      "--daily", "00:30", "--tz", "Europe/Berlin", "--now", at(5, 10))
    say(c, reply, at(5, 23, 50), "@bot here before bed", "Night.\n```checkin\nquote: here\n```")
    assert any("answered nothing new" in p for p in posts(c))  # Tuesday 00:30 not yet
    say(c, reply, at(6, 0, 10), "@bot here after midnight", "```checkin\nquote: here after\n```")
    assert any("counted for 2026-10-06 00:30 Europe/Berlin (Tue" in p for p in posts(c))
    # Dated: the next deadline or the latest passed, nothing else.
    done = ["checkin", "done", "--person", "ada", "--json"]
    far = c.fails(*done[:4], "--for", "2026-10-09 00:30", "--now", at(6, 12))
    assert "not a deadline a check-in may name" in far.err
    got = json.loads(c(*done, "--for", "2026-10-07 00:30 Europe/Berlin (Wed, UTC+02:00)",
                       "--now", at(6, 12)).out)
    assert got["answered"].startswith("2026-10-07 00:30") and \
        got["next_deadline"].startswith("2026-10-08 00:30")
    again = json.loads(c(*done, "--for", "2026-10-07 00:30", "--now", at(6, 12, 1)).out)
    assert again["answered"] is None
    bad = c.fails(*done[:4], "--for", "2026-10-07 00:30 Europe/Berlin (Thu, UTC+02:00)",
                  "--now", at(6, 12))
    assert "does not match" in bad.err


def test_after_a_night_the_machine_was_off_one_late_wake_and_nobody_is_contacted(
        cli, tmp_path, smtp):
    reply = tmp_path / "reply.txt"
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, reply)
    consented_and_armed(c, smtp)
    reply.write_text("@ada this was noticed late: you missed your check-ins.")
    c("tick", "--now", at(6, 21, 1), "--wait")  # off from Monday morning to Tuesday 21:01
    (w,) = wakes(c, "checkin-missed")  # one wake, not two
    text = c("wakes", "show", str(w["id"])).out
    assert f"did not check in by {MON} nor by the deadline after it, {TUE}" in text
    assert "noticed late" in text
    s = status(c, at(6, 21, 2))
    assert (s["streak"]["first_due"], s["streak"]["last_due"]) == (MON, TUE)
    assert s["streak"]["grace_until"] is None  # a late notice plans no grace
    c("tick", "--now", at(7, 12), "--wait")
    assert wakes(c, "checkin-contact") == [] and len(smtp.received) == 1


def test_consent_grace_once_per_streak_and_one_contact_message(cli, tmp_path, smtp):
    reply = tmp_path / "reply.txt"
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, reply)
    setup(c, "--contact-email", "carol@example.org", "--grace-minutes", "30")
    assert "not agreed" in c.fails("checkin", "arm", "--person", "ada", "--now", at(5, 10)).err
    c("tick", "--now", at(5, 10, 1))
    ((to, invite),) = smtp.received
    assert to == ["carol@example.org"] and "ada asks" in invite["Subject"]
    code = invitation_code(invite)
    assert code not in c("checkin", "status", "--person", "ada", "--json").out
    assert not any(code in body for body in outbox_bodies(c.db_url))  # only its hash is kept
    c("checkin", "accept", input=code + "\n")
    assert "unknown or was already used" in c.fails("checkin", "accept", input=code + "\n").err
    assert status(c, at(5, 10, 2))["consented"]
    c("checkin", "arm", "--person", "ada", "--now", at(5, 10, 2))
    # Monday 21:00 missed: the notice, posted at 21:00, starts the grace (30 minutes).
    reply.write_text("@ada you missed your 21:00 check-in; write to me here.")
    c("tick", "--now", at(5, 21), "--wait")
    assert status(c, at(5, 21))["streak"]["grace_until"] == \
        "2026-10-05 21:30 Europe/Berlin (Mon, UTC+02:00)"
    c("tick", "--now", at(5, 21, 29), "--wait")
    assert wakes(c, "checkin-contact") == []
    reply.write_text("I wrote to her contact.\n```contact\nsubject: ada's check-in\n---\n"
                     "Hello Carol, I am bot, the AI agent ada set up a check-in with. Her "
                     "deadline passed and she has not checked in since I reminded her.\n```")
    c("tick", "--now", at(5, 21, 31), "--wait")
    (cw,) = wakes(c, "checkin-contact")
    text = c("wakes", "show", str(cw["id"])).out
    assert "carol@example.org" in text and "one message" in text
    c("tick", "--now", at(5, 21, 32), "--wait")  # the outbox is sent by the next cycle
    assert len(smtp.received) == 2
    to, msg = smtp.received[1]
    assert to == ["carol@example.org"] and msg["Subject"] == "ada's check-in"
    assert msg["Message-ID"] and "not an emergency service" in msg.get_content()
    assert "Hello Carol" in msg.get_content()
    # Tuesday 21:00 is missed too: ada is told again, but the grace is neither moved nor
    # reopened, and nobody is written to twice for one streak.
    reply.write_text("@ada still no check-in from you.")
    c("tick", "--now", at(6, 21), "--wait")
    assert len(wakes(c, "checkin-missed")) == 2
    s = status(c, at(6, 21, 1))
    assert s["streak"]["grace_until"].startswith("2026-10-05 21:30") and \
        s["streak"]["contact"] == "sent"
    for when in (at(6, 21, 40), at(7, 9)):
        c("tick", "--now", when, "--wait")
    assert len(wakes(c, "checkin-contact")) == 1 and len(smtp.received) == 2


def test_a_contact_block_outside_its_wake_is_refused_and_a_decline_is_recorded(
        cli, tmp_path, smtp):
    reply = tmp_path / "reply.txt"
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, reply)
    consented_and_armed(c, smtp)
    reply.write_text("@ada missed.\n```contact\nsubject: hi\n---\nwriting early\n```")
    c("tick", "--now", at(5, 21), "--wait")
    assert any("contact block was refused" in p and "only in the checkin-contact wake" in p
               for p in posts(c))
    reply.write_text("```contact\ndecline: ada posted at 21:20, after the notice\n```")
    c("post", "lobby", "--as", "ada", "back soon", "--at", at(5, 21, 20))
    c("tick", "--now", at(5, 21, 31), "--wait")
    s = status(c, at(5, 21, 40))
    assert s["streak"]["contact"] == "declined" and "21:20" in s["streak"]["contact_note"]
    c("tick", "--now", at(5, 21, 41), "--wait")
    assert len(smtp.received) == 1  # the invitation only


def test_mail_written_while_the_server_was_down_is_sent_once_when_it_is_back(cli, tmp_path):
    server = SmtpServer()  # not started yet: its port refuses
    c = Cli(cli.db_url, server.config(tmp_path / "config.toml"))
    room(c, tmp_path, tmp_path / "reply.txt")
    setup(c, "--contact-email", "carol@example.org")
    c("tick", "--now", at(5, 10, 1))  # refused: the invitation stays in the outbox
    server.start()
    try:
        c("tick", "--now", at(5, 10, 2))
        c("tick", "--now", at(5, 10, 3))
        assert len(server.received) == 1
        ids = {m["Message-ID"] for _, m in server.received}
        assert len(ids) == 1
    finally:
        server.stop()


def test_pause_cancel_and_replace_are_not_check_ins(cli, tmp_path):
    reply = tmp_path / "reply.txt"
    c = room(cli, tmp_path, reply)
    setup(c)
    reply.write_text("@ada missed")
    c("tick", "--now", at(5, 21), "--wait")
    paused = json.loads(c("checkin", "pause", "--person", "ada", "--json",
                          "--now", at(5, 22)).out)
    assert paused["status"] == "paused" and paused["streak"]["closed_by"] == "pause"
    assert paused["answered_until"] is None  # not a check-in
    assert "paused" in c.fails("checkin", "done", "--person", "ada", "--for", TUE,
                               "--now", at(6, 12)).err
    c("tick", "--now", at(6, 21, 5), "--wait")
    assert len(wakes(c, "checkin-missed")) == 1  # nothing watched in a pause
    c("checkin", "resume", "--person", "ada", "--now", at(6, 22))
    assert status(c, at(6, 22))["next_deadline"].startswith("2026-10-07 21:00")
    c("checkin", "cancel", "--person", "ada", "--now", at(6, 23))
    assert "no check-in agreement" in c.fails("checkin", "status", "--person", "ada").err
    c("tick", "--now", at(7, 21, 5), "--wait")
    assert len(wakes(c, "checkin-missed")) == 1


def test_bad_agreements_get_one_line_and_nothing_is_written(cli, tmp_path):
    c = room(cli, tmp_path, tmp_path / "reply.txt")
    base = ["checkin", "setup", "--person", "ada", "--agent", "bot", "--mood", "lobby",
            "--now", at(5, 10)]
    assert "exactly one of --once or --daily" in c.fails(*base, "--tz", "UTC").err
    assert "1–1440" in c.fails(*base, "--daily", "21:00", "--tz", "UTC",
                               "--grace-minutes", "0").err
    assert "15–4320" in c.fails(*base, "--daily", "21:00", "--tz", "UTC",
                                "--lateness-cutoff-minutes", "9999").err
    assert "not an e-mail address" in c.fails(*base, "--daily", "21:00", "--tz", "UTC",
                                              "--contact-email", "carol").err
    assert "has passed" in c.fails(*base, "--once", "2026-10-01 18:00", "--tz", "UTC").err
    never = c.fails(*base, "--once", "9999-12-31 23:59", "--tz", "Etc/GMT+12").err
    assert "never fires" in never and len(never.strip().splitlines()) == 1
    assert "time zone" in c.fails(*base, "--daily", "21:00", "--tz", "local").err
    assert "no check-in agreement" in c.fails("checkin", "status", "--person", "ada").err


def test_a_mail_whose_sending_was_interrupted_is_marked_uncertain_and_never_resent(
        cli, tmp_path, smtp):
    import sqlalchemy as sa

    from poller import models

    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, tmp_path / "reply.txt")
    setup(c, "--contact-email", "carol@example.org")
    engine = sa.create_engine(c.db_url)
    with engine.begin() as conn:  # a poller claimed it, then died mid-conversation
        conn.execute(sa.update(models.MailOut).values(
            state="handing", claimed_by="gone:1", claimed_at=dt.datetime(2026, 10, 5, 7, tzinfo=UTC)))
    engine.dispose()
    c("tick", "--now", at(5, 10, 1))
    c("tick", "--now", at(5, 10, 2))
    assert smtp.received == []
    engine = sa.create_engine(c.db_url)
    with engine.connect() as conn:
        assert conn.execute(sa.select(models.MailOut.state)).scalar() == "uncertain"
    engine.dispose()


def test_a_claim_left_before_the_mail_server_answered_is_sent_once(cli, tmp_path, smtp):
    """A poller that died while reaching the server handed nothing over: its claim
    goes back to pending, and the message is sent once."""
    import sqlalchemy as sa

    from poller import models, procs

    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, tmp_path / "reply.txt")
    setup(c, "--contact-email", "carol@example.org")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    engine = sa.create_engine(c.db_url)
    with engine.begin() as conn:  # claimed a minute ago by a process that is gone
        conn.execute(sa.update(models.MailOut).values(
            state="sending", claimed_by=f"{procs.HOST}:{gone}:x",
            claimed_at=dt.datetime(2026, 10, 5, 9, 59, tzinfo=UTC)))
    engine.dispose()
    c("tick", "--now", at(5, 10, 1))
    c("tick", "--now", at(5, 10, 2))
    assert [to for to, _ in smtp.received] == [["carol@example.org"]]


def test_a_once_agreement_is_completed_by_a_check_in_before_or_after_it(cli, tmp_path):
    reply = tmp_path / "reply.txt"
    c = room(cli, tmp_path, reply)
    once = ["checkin", "setup", "--person", "ada", "--agent", "bot", "--mood", "lobby",
            "--once", "2026-10-06 18:00", "--tz", "Europe/Berlin", "--json", "--now", at(5, 10)]
    assert json.loads(c(*once).out)["next_deadline"] == \
        "2026-10-06 18:00 Europe/Berlin (Tue, UTC+02:00)"
    reply.write_text("@ada you said you would check in by 18:00.")
    c("tick", "--now", at(6, 18, 1), "--wait")
    assert len(wakes(c, "checkin-missed")) == 1
    say(c, reply, at(6, 18, 30), "@bot all good, I'm here", "```checkin\nquote: I'm here\n```")
    assert any("counted for 2026-10-06 18:00" in p and "the agreement is complete" in p
               for p in posts(c))
    assert "no check-in agreement" in c.fails("checkin", "status", "--person", "ada").err
    c("tick", "--now", at(8, 18), "--wait")
    assert len(wakes(c, "checkin-missed")) == 1


def test_arming_needs_consent_a_mail_server_no_missed_check_in_and_no_pause(cli, tmp_path, smtp):
    reply = tmp_path / "reply.txt"
    plain = room(cli, tmp_path, reply)  # no [mail] configured
    setup(plain, "--contact-email", "carol@example.org")
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    c("tick", "--now", at(5, 10, 1))
    code = invitation_code(smtp.received[0][1])
    c("checkin", "accept", input=code + "\n")
    arm = ["checkin", "arm", "--person", "ada"]
    assert "no mail server" in plain.fails(*arm, "--now", at(5, 10, 2)).err
    reply.write_text("@ada missed")
    assert "check in first" in c.fails(*arm, "--now", at(5, 21, 1)).err  # passed, unprocessed
    c("tick", "--now", at(5, 21, 1), "--wait")
    assert "check in first" in c.fails(*arm, "--now", at(5, 21, 2)).err  # the streak is open
    c("checkin", "pause", "--person", "ada", "--now", at(5, 21, 3))
    assert "paused" in c.fails(*arm, "--now", at(5, 21, 4)).err
    c("checkin", "resume", "--person", "ada", "--now", at(5, 21, 5))
    assert json.loads(c(*arm, "--json", "--now", at(5, 21, 6)).out)["armed"]
    assert not json.loads(c("checkin", "disarm", "--person", "ada", "--json",
                            "--now", at(5, 21, 7)).out)["armed"]


def test_setting_up_across_a_dst_gap_warns(cli, tmp_path):
    c = room(cli, tmp_path, tmp_path / "reply.txt")
    r = c("checkin", "setup", "--person", "ada", "--agent", "bot", "--mood", "lobby",
          "--daily", "02:15", "--tz", "America/New_York", "--now", at(5, 10))
    assert "2027-03-14 02:15 does not exist in America/New_York" in r.err
    assert "not an emergency service" in r.out


def test_a_contact_message_written_before_the_person_checked_in_is_withdrawn(
        cli, tmp_path, smtp):
    reply = tmp_path / "reply.txt"
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, reply)
    consented_and_armed(c, smtp)
    reply.write_text("@ada you missed your check-in.")
    c("tick", "--now", at(5, 21), "--wait")
    reply.write_text("```contact\nsubject: ada\n---\nHello Carol, this is bot.\n```")
    c("tick", "--now", at(5, 21, 31), "--wait")  # written to the outbox, not sent yet
    c("checkin", "done", "--person", "ada", "--for", MON, "--now", at(5, 21, 32))
    c("tick", "--now", at(5, 21, 33), "--wait")
    assert len(smtp.received) == 1  # the invitation; the contact message was withdrawn
    assert not status(c, at(5, 21, 34))["streak"]["open"]


def test_config_check_connect_reaches_the_mail_server_and_sends_nothing(cli, tmp_path, smtp):
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    out = c("config", "check", "--connect").out
    assert f"mail: ok (127.0.0.1:{smtp.port} answered; nothing was sent)" in out
    assert smtp.received == []
    closed = Cli(cli.db_url, SmtpServer().config(tmp_path / "closed.toml"))  # never started
    r = closed("config", "check", "--connect", ok=False)
    assert r.code == 75 and "mail: failed" in r.out + r.err


def test_a_contact_message_over_the_limit_is_refused_without_using_up_the_attempt(
        cli, tmp_path, smtp):
    reply = tmp_path / "reply.txt"
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, reply)
    consented_and_armed(c, smtp)
    reply.write_text("@ada you missed your check-in.")
    c("tick", "--now", at(5, 21), "--wait")
    reply.write_text("```contact\nsubject: ada\n---\n" + "x" * 4_000 + "\n```")
    c("tick", "--now", at(5, 21, 31), "--wait")
    assert any("contact block was refused" in p and "the limit is 3,800" in p for p in posts(c))
    reply.write_text("```contact\nsubject: ada\n---\nHello Carol, this is bot.\n```")
    c("tick", "--now", at(5, 21, 32), "--wait")  # offered again, and told why
    second = wakes(c, "checkin-contact")[-1]
    assert len(wakes(c, "checkin-contact")) == 2
    assert "the limit is 3,800" in c("wakes", "show", str(second["id"])).out
    c("tick", "--now", at(5, 21, 33), "--wait")
    assert [m["Subject"] for _, m in smtp.received[1:]] == ["ada"]
    c("tick", "--now", at(5, 22), "--wait")
    assert len(wakes(c, "checkin-contact")) == 2 and len(smtp.received) == 2


def _contact_wake_writes(c, reply, smtp, block: str) -> None:
    """ada misses Monday 21:00; the contact wake's reply is *block*."""
    consented_and_armed(c, smtp)
    reply.write_text("@ada you missed your check-in.")
    c("tick", "--now", at(5, 21), "--wait")
    reply.write_text(block)
    c("tick", "--now", at(5, 21, 31), "--wait")


def test_a_contact_subject_with_a_line_break_is_refused_and_nothing_is_written(
        cli, tmp_path, smtp):
    reply = tmp_path / "reply.txt"
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, reply)
    _contact_wake_writes(c, reply, smtp, "```contact\nsubject: ada missed\u2028Bcc: "
                         "mallory@example.org\n---\nHello Carol, this is bot.\n```")
    assert any("contact block was refused" in p and "subject:" in p and "line break" in p
               for p in posts(c))
    assert status(c, at(5, 21, 32))["streak"]["contact"] == "declined"
    assert c("tick", "--now", at(5, 21, 33), "--wait").code == 0
    assert [to for to, _ in smtp.received] == [["carol@example.org"]]  # the invitation only


def _mail_rows(url: str) -> list[tuple[int, str, str]]:
    import sqlalchemy as sa

    from poller import models

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.select(
                models.MailOut.id, models.MailOut.state, models.MailOut.error)
                .order_by(models.MailOut.id))]
    finally:
        engine.dispose()


def test_a_mail_that_cannot_be_written_fails_with_its_reason_and_blocks_nothing(
        any_cli, tmp_path, smtp):
    import sqlalchemy as sa

    from poller import models

    c = Cli(any_cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, tmp_path / "reply.txt")
    c("person", "add", "bob", "--trust", "full")
    setup(c, "--contact-email", "carol@example.org")
    c("checkin", "setup", "--person", "bob", "--agent", "bot", "--mood", "lobby", "--daily",
      "21:00", "--tz", "UTC", "--contact-email", "dave@example.org", "--now", at(5, 10))
    engine = sa.create_engine(c.db_url)
    with engine.begin() as conn:  # written by an older version, before subjects were checked
        first = conn.execute(sa.select(sa.func.min(models.MailOut.id))).scalar()
        conn.execute(sa.update(models.MailOut).where(models.MailOut.id == first)
                     .values(subject="ada missed\u2028Bcc: mallory@example.org"))
    engine.dispose()
    for minute in (1, 2, 3):
        assert c("tick", "--now", at(5, 10, minute)).code == 0
    assert [to for to, _ in smtp.received] == [["dave@example.org"]]  # the one behind it went
    (bad, good) = _mail_rows(c.db_url)
    assert bad[1] == "failed" and "could not be written as an e-mail" in bad[2]
    assert good[1] == "sent"
    assert f"undelivered: mail {bad[0]} to carol@example.org failed (invite): it could not be" \
        in c("status").out


def test_the_contact_address_is_checked_by_a_mail_parser_and_used_as_given(cli, tmp_path, smtp):
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, tmp_path / "reply.txt")
    base = ["checkin", "setup", "--person", "ada", "--agent", "bot", "--mood", "lobby",
            "--daily", "21:00", "--tz", "UTC", "--now", at(5, 10), "--contact-email"]
    for bad in ('carol@exa"mple.org', "carol@example.org\nbcc@example.org", "carol@localhost",
                '"carol x"@example.org', "carol@example.org, dave@example.org", "<carol@example.org>"):
        err = c.fails(*base, bad).err
        assert "is not an e-mail address" in err and len(err.strip().splitlines()) == 1, err
    c(*base, "carol+check@example.org")
    c("tick", "--now", at(5, 10, 1))
    ((to, msg),) = smtp.received
    assert to == ["carol+check@example.org"] and msg["To"] == "carol+check@example.org"


def test_a_stored_address_the_parser_refuses_is_failed_never_sent_elsewhere(cli, tmp_path, smtp):
    import sqlalchemy as sa

    from poller import models

    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, tmp_path / "reply.txt")
    setup(c, "--contact-email", "carol@example.org")
    engine = sa.create_engine(c.db_url)
    with engine.begin() as conn:  # accepted by an older version's looser check
        conn.execute(sa.update(models.MailOut).values(recipient='carol@exa"mple.org'))
    engine.dispose()
    assert c("tick", "--now", at(5, 10, 1)).code == 0
    assert smtp.received == []
    ((_, state, error),) = _mail_rows(c.db_url)
    assert state == "failed" and "not an e-mail address" in error


def test_an_invitation_for_an_agreement_cancelled_or_replaced_before_it_went_is_withdrawn(
        cli, tmp_path, smtp):
    c = Cli(cli.db_url, smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, tmp_path / "reply.txt")
    setup(c, "--contact-email", "carol@example.org")
    c("checkin", "cancel", "--person", "ada", "--now", at(5, 10))
    setup(c, "--contact-email", "dave@example.org")
    setup(c, "--contact-email", "erin@example.org")  # replaces dave's before it went
    c("tick", "--now", at(5, 10, 1))
    assert [to for to, _ in smtp.received] == [["erin@example.org"]]
    states = [state for _, state, _ in _mail_rows(c.db_url)]
    assert states == ["withdrawn", "withdrawn", "sent"]


def test_a_turn_answering_someone_else_cannot_count_a_check_in_from_the_catch_up(cli, tmp_path):
    reply = tmp_path / "reply.txt"
    c = room(cli, tmp_path, reply)
    setup(c)
    c("set", "listening", "mentions")
    c("person", "add", "bob", "--trust", "look")
    c("post", "lobby", "--as", "ada", "I'm fine with pizza tonight", "--at", at(5, 19))
    reply.write_text("She said so.\n```checkin\nfor: ada\nquote: I'm fine\n```")
    c("post", "lobby", "--as", "bob", "@bot has ada checked in?", "--at", at(5, 20))
    c("tick", "--now", at(5, 20), "--wait")
    (w,) = wakes(c, "mention")
    assert "I'm fine with pizza" in c("wakes", "show", str(w["id"])).out  # shown, not answered
    assert any("checkin block was refused" in p and "matches no post by ada" in p
               for p in posts(c))
    assert status(c, at(5, 20, 1))["answered_until"] is None
    # Her own post that the turn answers still counts.
    say(c, reply, at(5, 20, 10), "@bot I'm fine, really", "Good.\n```checkin\nquote: I'm fine\n```")
    assert f"ada's check-in counted for {MON}; next deadline {TUE}." in posts(c)
