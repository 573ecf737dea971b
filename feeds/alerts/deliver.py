"""Send an alert message through Apprise: the network edge of alerts, and the only module
of paperfeeds that imports Apprise.

A destination's URL holds its secrets (passwords, tokens, webhook paths, `+Header=`
values), so nothing here ever shows it: a destination is shown by `describe` (service and
host), and what Apprise says about a failure is shown only with every part of the URL
that describe does not show blanked out. Apprise's own log records never reach the
application's handlers: its privacy form of a URL still shows `+Header=` values.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from html import escape
from typing import Self
from urllib.parse import unquote, unquote_plus

from apprise import LOGGER_NAME, Apprise, AppriseAsset, NotifyBase, NotifyFormat, OverflowMode
from apprise.plugins.custom_form import NotifyForm
from apprise.plugins.custom_json import NotifyJSON
from apprise.plugins.custom_xml import NotifyXML
from apprise.plugins.email import NotifyEmail

from feeds.alerts.env import AlertsConfigError
from feeds.alerts.message import Message

# Webhooks take whatever they are given: plain text unless the URL asks (`?format=`).
_WEBHOOKS: dict[type[NotifyBase], str] = {NotifyJSON: "json", NotifyXML: "xml", NotifyForm: "form"}
_USUAL_PORTS = {25, 80, 443, 465, 587}  # left out of a description
_HOST_NAME = re.compile(r"(?=.*[A-Za-z])[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})+\.?")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,30})://")
_OVERFLOW = re.compile(r"[?&]overflow=", re.IGNORECASE)
_TIMEOUTS = re.compile(r"[?&](cto|rto)=", re.IGNORECASE)  # Apprise's socket timeouts
_TIMED_OUT = re.compile(r"^Socket Exception: .*\bRead timed out\b")
_SHORTEST_SECRET = 3  # shorter parts of a URL are not blanked out of messages
_MOST_SAID = 300  # characters of Apprise's words in an error

# Apprise's records stay with Apprise: its results capture what we show (see _said), and
# the level is set here so that they do whatever level the application logs at. DEBUG:
# the reason behind its "A Connection error occurred" (a timeout) is a debug record.
_apprise_log = logging.getLogger(LOGGER_NAME)
_apprise_log.propagate = False
_apprise_log.setLevel(logging.DEBUG)


@dataclass(frozen=True)
class Delivery:
    """What became of one message: `error` is safe to print (no secret of the URL)."""

    ok: bool
    error: str | None = None


def describe(url: str) -> str:
    """Return a destination as users see it: its service and host, never its secrets.

    E.g. "email via smtp.example.org", "ntfy at ntfy.example.org", "Discord",
    "webhook (json) at hooks.example.org:8443". Raises AlertsConfigError for a URL
    Apprise cannot use.
    """
    return _describe(_load(url))


def deliver(url: str, message: Message, *, timeout: float) -> Delivery:
    """Return how sending `message` to `url` went, waiting `timeout` seconds for it (or
    as long as the URL's own `cto` / `rto` ask).

    The body is in the format the service takes: HTML for email (and Telegram), Markdown
    for chat services that render it, plain text otherwise. A service that has not
    answered in time is given up ("timed out"); its thread may still finish later, but
    its outcome is dropped, so a late success can at most repeat a message, never lose one.
    """
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    try:
        plugin = _load(url)
    except AlertsConfigError as e:
        return Delivery(ok=False, error=e.message)
    limit = _wait_for(plugin, url, timeout)
    shown = _describe(plugin)
    fmt = _format(plugin)
    body = {NotifyFormat.HTML: message.html, NotifyFormat.MARKDOWN: message.markdown}.get(
        fmt, message.text
    )

    def send() -> Delivery:
        ours = ""  # our own words: nothing of the URL in them, nothing to blank out
        try:
            delivery, ours = _notify(plugin, message.subject, body, fmt)
        except Exception as e:  # noqa: BLE001 -- a plugin's bug must not end the cycle
            delivery = Delivery(ok=False, error=f"{type(e).__name__}: {e}")
        if delivery.error:
            return Delivery(ok=delivery.ok, error=_redact(delivery.error, url, shown) + ours)
        return delivery

    return _within(limit, send)


def _wait_for(plugin: NotifyBase, url: str, timeout: float) -> float:
    """Set how long the service's sockets wait (connect, then the answer) and return how
    long the whole delivery may take.

    Apprise gives up on an answer after 4 s: a receiver that takes 10 s got the message,
    yet the try failed and every later try posted it again. So its sockets wait as long as
    we do, a second longer (a hang is then said in our words, "timed out after 30 s"),
    unless the URL sets `cto` / `rto` itself; then the whole may take what those allow.
    """
    if _TIMEOUTS.search(url):
        return max(timeout, plugin.socket_connect_timeout + plugin.socket_read_timeout)
    plugin.socket_connect_timeout = plugin.socket_read_timeout = timeout + 1
    return timeout


def send_test(url: str, timeout: float, *, sender: str = "paperfeeds") -> Delivery:
    """Return how a short test message to `url` went (`feeds alerts --test`)."""
    try:
        shown = describe(url)
    except AlertsConfigError as e:
        return Delivery(ok=False, error=e.message)
    said = f"This is a test message from {sender}: its alerts reach {shown}."
    test = Message(f"{sender}: test message", f"<p>{escape(said)}</p>", said, said)
    return deliver(url, test, timeout=timeout)


def _asset() -> AppriseAsset:
    """Return the settings Apprise works with: no disk, no time limit of its own (ours is
    `_within`, so that its notify runs in our thread), paperfeeds named as the sender."""
    return AppriseAsset(
        app_id="paperfeeds",
        app_desc="paperfeeds alerts",
        app_url="https://pypi.org/project/paperfeeds/",
        storage_mode="memory",
        service_timeout=0,
        secure_logging=True,
    )


def _load(url: str) -> NotifyBase:
    """Return the Apprise service for a URL; AlertsConfigError, without the URL, if none."""
    with _Heard() as heard:
        try:
            plugin = Apprise.instantiate(url, asset=_asset())
        except Exception as e:  # noqa: BLE001 -- a plugin's bug is a URL it cannot use
            heard.said.append(type(e).__name__)
            plugin = None
    if plugin is not None:
        if not _OVERFLOW.search(url):
            # A message longer than the service takes (Discord 2,000 characters, Telegram
            # 4,096) is sent in parts: Apprise's default hands it over whole, the service
            # refuses it, and it would fail again on every retry.
            plugin.overflow_mode = OverflowMode.SPLIT
        return plugin
    scheme = _SCHEME.match(url)
    if not scheme:
        raise AlertsConfigError(
            "alerts: a destination is an Apprise URL, starting with its service "
            "(e.g. mailto://, ntfy://, json://)"
        )
    text = f"alerts: the {scheme.group(1).lower()}:// URL is not one Apprise can use"
    if heard.said:
        text += ": " + _redact(_said(heard.said), url, "")
    raise AlertsConfigError(text)


class _Heard(logging.Handler):
    """Collects what Apprise warns about in this thread while it reads a URL (its reasons
    for refusing one)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread and record.levelno == logging.WARNING:
            self.said.append(record.getMessage())

    def __enter__(self) -> Self:
        _apprise_log.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _apprise_log.removeHandler(self)


def _describe(plugin: NotifyBase) -> str:
    if isinstance(plugin, NotifyEmail):
        server = _server(plugin.smtp_host, plugin.port)
        return f"email via {server}" if server else "email"
    name = _WEBHOOKS.get(type(plugin))
    service = f"webhook ({name})" if name else str(plugin.service_name)
    # Where a service's URL has no host (Slack, Discord, Telegram...), what stands in its
    # place is a token.
    host = _server(plugin.host, plugin.port) if "host" in plugin.template_tokens else None
    return f"{service} at {host}" if host else service


def _server(host: object, port: object) -> str | None:
    """Return `host[:port]` when host is a server's name or address (else None: a token in
    a host's place); usual ports are left out."""
    if not isinstance(host, str) or not host:
        return None
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        if host != "localhost" and not _HOST_NAME.fullmatch(host):
            return None
        shown = host
    else:
        shown = f"[{address}]" if address.version == 6 else str(address)
    if isinstance(port, int) and port not in _USUAL_PORTS:
        shown += f":{port}"
    return shown


def _format(plugin: NotifyBase) -> NotifyFormat:
    """Return the format to write for a service: the URL's `?format=`, else the service's
    own first format (HTML for email, Markdown for Slack, text for ntfy and webhooks),
    except that a chat service that also takes Markdown gets Markdown (Discord, Matrix)."""
    chosen = plugin.resolve_format(None)
    if chosen == NotifyFormat.TEXT and type(plugin) not in _WEBHOOKS:
        return plugin.resolve_format(NotifyFormat.MARKDOWN)
    return chosen


def _notify(plugin: NotifyBase, title: str, body: str, fmt: NotifyFormat) -> tuple[Delivery, str]:
    """Return how one Apprise notify call went (blocking: see _within), and what we add to
    Apprise's words about a failure."""
    apobj = Apprise(asset=plugin.asset)
    apobj.add(plugin)
    # The body is already in the service's format: Apprise converts nothing, and applies
    # only the service's own dialect (Slack mrkdwn, Telegram's HTML subset...).
    with apobj.notify(body=body, title=title, body_format=fmt, log_level=logging.DEBUG) as result:
        if result:
            return Delivery(ok=True), ""
        bad = ("WARNING", "ERROR", "CRITICAL")
        logs = list(result.logs())
        said = _said(entry.message for entry in logs if entry.level in bad)
        failed = Delivery(ok=False, error=said or f"failed ({result.status.name.lower()})")
        # Apprise says "A Connection error occurred" of a timeout too; the reason is in its
        # debug record of the exception.
        if any(_TIMED_OUT.search(entry.message) for entry in logs):
            return failed, f" (no answer within {plugin.socket_read_timeout:g} s)"
        return failed, ""


def _said(messages: Iterable[str]) -> str:
    """Return Apprise's words about a failure: each once, the last few, cut short."""
    said = "; ".join(list(dict.fromkeys(messages))[-3:])
    return said if len(said) <= _MOST_SAID else said[: _MOST_SAID - 1] + "…"


def _within(timeout: float, work: Callable[[], Delivery]) -> Delivery:
    """Return what `work` gives, or "timed out" when it takes longer than `timeout`.

    Apprise's calls block (SMTP, HTTP), so work runs in a daemon thread we stop waiting
    for: a hanging server holds neither the cycle nor the process's exit. The thread's
    outcome goes to a box only this call reads, and only before it returns.
    """
    box: list[Delivery] = []
    thread = threading.Thread(
        target=lambda: box.append(work()), name="paperfeeds-alert", daemon=True
    )
    thread.start()
    thread.join(timeout)
    if box:
        return box[0]
    return Delivery(ok=False, error=f"timed out after {timeout:g} s")


def _redact(text: str, url: str, shown: str) -> str:
    """Return text with every part of `url` blanked out that `shown` (its description)
    does not show: user, password, path, query values, a token in a host's place.

    A part is left where it lies inside what `shown` shows (a recipient's domain inside
    the SMTP server's name), and blanked wherever else it stands.
    """
    kept = [span for word in re.split(r"[\s()\[\]:]+", shown) for span in _spans(text, word)]
    found = [
        (start, end)
        for secret in _secrets(url)
        for start, end in _spans(text, secret)
        if not any(s <= start and end <= e for s, e in kept)
    ]
    secret_at = {i for start, end in found for i in range(start, end)}
    blank = [False] * len(text)
    for start, end in found:
        if not _in_word(text, start, end, secret_at):
            blank[start:end] = [True] * (end - start)
    out: list[str] = []
    for i, c in enumerate(text):
        if not blank[i]:
            out.append(c)
        elif i == 0 or not blank[i - 1]:
            out.append("***")
    return "".join(out)


def _in_word(text: str, start: int, end: int, secret_at: set[int]) -> bool:
    """Return True when text[start:end] is the inside of a longer word (a secret "err" in
    "error"): letters that are no secret's go on past it, on a side where it begins or
    ends with one. A secret stands apart, by a separator or a digit (`%20` before a token),
    or beside another secret, wherever Apprise quotes it; blanking "Internal server ***or"
    hid the words and said that "err" was a secret."""
    before = start > 0 and text[start].isalpha() and text[start - 1].isalpha()
    after = end < len(text) and text[end - 1].isalpha() and text[end].isalpha()
    return (before and start - 1 not in secret_at) or (after and end not in secret_at)


def _spans(text: str, part: str) -> list[tuple[int, int]]:
    """Return where `part` occurs in text."""
    return [(m.start(), m.end()) for m in re.finditer(re.escape(part), text)] if part else []


def _secrets(url: str) -> list[str]:
    """Return the parts of a URL that may be secret, longest first, decoded and not."""
    rest = url.partition("://")[2] or url
    head, _, query = rest.partition("?")
    parts = re.split(r"[/@:#]", head)
    parts += [value for _, _, value in (item.partition("=") for item in query.split("&"))]
    found: set[str] = set()
    for part in parts:
        for form in {part, unquote(part), unquote_plus(part)}:
            # A value may hold several: `Bearer <token>`, `a@b.org,c@d.org`.
            found.update([form, *re.split(r"[\s,;:@]+", form)])
    return sorted((s for s in found if len(s) >= _SHORTEST_SECRET), key=len, reverse=True)
