"""An httpx transport on httpcore's connection pool whose every connection goes through the
guarded backend.

httpx's own HTTPTransport builds its pool itself and takes no network backend, so this is
the same small adapter written against the public interfaces of both: an httpx.Request in,
an httpcore.Request to the pool, its answer back as an httpx.Response whose body streams
from the connection, httpcore's errors raised as httpx's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import httpcore
import httpx

from feeds.net.guard import GuardedBackend
from feeds.net.policy import AddressPolicy

# httpcore's errors and httpx's of the same name, the most specific first.
_ERRORS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """Raise httpcore's errors as httpx's (what httpx.Client expects of a transport); the
    guard's own errors (feeds.net.errors) pass as they are."""
    try:
        yield
    except Exception as e:
        for core, mapped in _ERRORS:
            if isinstance(e, core):
                raise mapped(str(e)) from e
        raise


class _Body(httpx.SyncByteStream):
    """A response body as it comes from the connection, read on demand."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._chunks

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)  # returns the connection to the pool
        if close is not None:
            with _as_httpx_errors():
                close()


class GuardedTransport(httpx.BaseTransport):
    """Sends requests through a connection pool that connects only where the policy allows.

    No proxy: one would connect on our behalf, wherever it likes.
    """

    def __init__(self, policy: AddressPolicy, max_connections: int = 16) -> None:
        self.backend = GuardedBackend(policy)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            network_backend=self.backend,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            answer = self._pool.handle_request(sent)
        assert isinstance(answer.stream, Iterable)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_Body(answer.stream),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        with _as_httpx_errors():
            self._pool.close()
