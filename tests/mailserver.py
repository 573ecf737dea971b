"""A real SMTP server for alert tests: aiosmtpd on 127.0.0.1, an ephemeral port, no TLS.

`MailServer()` serves from its own event loop in a daemon thread and keeps every message it
accepts, parsed (`server.messages`, email.message.EmailMessage) with its envelope
(`server.envelopes`). `MailServer(login=("user", "password"))` offers AUTH and accepts
only that login (over plain text: it is a test on loopback); `server.logins` records the
user names that logged in. aiosmtpd's Controller cannot take port 0, so the server is
created on the loop directly.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
from email.message import EmailMessage
from typing import Any

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session


class MailServer:
    def __init__(self, host: str = "127.0.0.1", login: tuple[str, str] | None = None) -> None:
        self.host = host
        self.login = login
        self.messages: list[EmailMessage] = []
        self.envelopes: list[Envelope] = []
        self.logins: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        start = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self._server = start.result(timeout=10)
        self.port: int = self._server.sockets[0].getsockname()[1]

    async def _start(self) -> asyncio.Server:
        def protocol() -> SMTP:
            return SMTP(
                self,
                hostname="mail.test",
                loop=self._loop,
                auth_require_tls=False,  # offered, not required: a client with a login uses it
                authenticator=self._authenticate,
            )

        return await self._loop.create_server(protocol, self.host, 0)

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        if not isinstance(data, LoginPassword) or self.login is None:
            return AuthResult(success=False, handled=False)
        user, password = data.login.decode(), data.password.decode()
        if (user, password) != self.login:
            return AuthResult(success=False, handled=False)  # 535, said by aiosmtpd
        self.logins.append(user)
        return AuthResult(success=True)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or b""
        message = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.envelopes.append(envelope)
        self.messages.append(message)
        return "250 OK"

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
