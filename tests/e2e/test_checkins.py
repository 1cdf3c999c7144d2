"""Check-in agreements end to end: the seed's worked examples through real turns, grace once
per streak, consent by a single-use code, and one contact message through a real SMTP server.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations



from support.cli import Cli
from support.smtp import SmtpServer
from support.checkins import at, invitation_code, room, setup
from support.checkins import smtp  # noqa: F401  (fixtures)

def test_two_pollers_on_postgresql_send_a_mail_once(pg_server, migrated_pg, tmp_path, smtp):
    import subprocess
    import sys

    c = Cli(pg_server.new_database(template=migrated_pg), smtp.config(tmp_path / "config.toml"))
    room(c, tmp_path, tmp_path / "reply.txt")
    for who in ("bea", "cyd", "dot"):
        c("person", "add", who, "--trust", "full")
        c("checkin", "setup", "--person", who, "--agent", "bot", "--mood", "lobby", "--daily",
          "21:00", "--tz", "UTC", "--contact-email", f"{who}-friend@example.org",
          "--now", at(5, 10))
    cmd = [sys.executable, "-m", "poller", "--db", c.db_url, "--config", c.config, "tick",
           "--now", at(5, 10, 1)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    c("tick", "--now", at(5, 10, 2))
    assert sorted(to[0] for to, _ in smtp.received) == [
        "bea-friend@example.org", "cyd-friend@example.org", "dot-friend@example.org"]


def test_a_poller_killed_while_a_contact_message_waits_sends_it_once_after_restart(
        cli, tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from support.waiting import wait_for

    reply = tmp_path / "reply.txt"
    first = SmtpServer().start()
    c = Cli(cli.db_url, first.config(tmp_path / "config.toml"))
    room(c, tmp_path, reply)
    setup(c, "--contact-email", "carol@example.org", "--grace-minutes", "30")
    c("tick", "--now", at(5, 10, 1))
    code = invitation_code(first.received[0][1])
    c("checkin", "accept", input=code + "\n")
    c("checkin", "arm", "--person", "ada", "--now", at(5, 10, 2))
    first.stop()  # the mail server goes away
    reply.write_text("@ada you missed your check-in.")
    c("tick", "--now", at(5, 21), "--wait")
    reply.write_text("```contact\nsubject: ada\n---\nHello Carol, this is bot.\n```")
    c("tick", "--now", at(5, 21, 31), "--wait")  # the message is written to the outbox
    log = tmp_path / "run.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_")}
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "poller", "--db", c.db_url, "--config",
                                 c.config, "--now", at(5, 21, 32), "run", "--interval", "0.2"],
                                stdout=out, stderr=out, env=env, start_new_session=True)
    try:
        wait_for(lambda: "not sent, kept for the next cycle" in log.read_text(),
                 what="run to try the mail server and keep the message")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
    second = SmtpServer(first.port).start()
    try:
        c("tick", "--now", at(5, 21, 40))
        c("tick", "--now", at(5, 21, 41))
        assert [m["Subject"] for _, m in second.received] == ["ada"]
    finally:
        second.stop()


