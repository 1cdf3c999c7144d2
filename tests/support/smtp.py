"""A real SMTP server on 127.0.0.1 (aiosmtpd) that keeps every message it accepts."""

from __future__ import annotations

import email
import email.policy
import socket
from email.message import EmailMessage


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Inbox:
    """What the server accepted: envelope recipients and the parsed message, in order."""

    def __init__(self):
        self.received: list[tuple[list[str], EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.received.append((list(envelope.rcpt_tos), msg))
        return "250 Message accepted for delivery"


class SmtpServer:
    def __init__(self, port: int | None = None):
        from aiosmtpd.controller import Controller

        self.port = port or free_port()
        self.inbox = Inbox()
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)

    def start(self) -> "SmtpServer":
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    @property
    def received(self):
        return self.inbox.received

    def config(self, path) -> str:
        path.write_text(f'[mail]\nhost = "127.0.0.1"\nport = {self.port}\nstarttls = false\n'
                        f'sender = "poller@example.org"\ntimeout = 10.0\n')
        return str(path)
