"""Check links over HTTP: HEAD (then GET), redirects hop by hop, every hop guarded.

The HTTP itself is feeds.net's (the guarded client, `follow`); what the answers mean for a
link is decided here. Results are plain data; the pipeline stores them and decides when to
check again (see policy.py).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from feeds.links.extract import GITHUB_RESERVED
from feeds.model import LinkStatus
from feeds.net import (
    AddressPolicy,
    BlockedAddress,
    ConnectionFailed,
    InvalidURL,
    NameNotResolved,
    NetError,
    RedirectRefused,
    TimedOut,
    deadline,
    follow,
    http_url_problem,
)
from feeds.net.pacing import retry_after_seconds

if TYPE_CHECKING:
    from feeds.net.client import Client, Response

MAX_REDIRECTS = 5
PEEK_BYTES = 64 * 1024  # a GET check reads at most this much of a body
API_BYTES = 1024 * 1024  # an API answer larger than this is cut (and then not JSON)
RETRY_AFTER_WAIT = 5.0  # a 429 asking for at most this long is waited for and retried once
_GITHUB_REPO = re.compile(r"^/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)(?:/|$)")
_HEAD_REFUSED = {403, 405, 501}
_ANY_REDIRECT = range(300, 400)  # a link is followed wherever any 3xx with a Location points
_API_REDIRECTS = frozenset({301, 302, 307, 308})  # a renamed repository


@dataclass(frozen=True)
class CheckResult:
    url: str
    status: LinkStatus
    http_status: int | None = None
    final_url: str | None = None
    note: str | None = None  # why (errors), or what is notable (archived)
    retry_after: float | None = None  # seconds the server asked us to wait
    dns_failure: bool = False
    # No server could be reached (no name, no connection, no answer in time): the host's
    # trouble, or the network's when no host answers (see policy.network_after).
    unreachable: bool = False

    @property
    def responded(self) -> bool:
        """True when a server answered at all (the network is up)."""
        return self.http_status is not None


def status_for(code: int, hops: int) -> LinkStatus:
    """Return a link's status from the final HTTP status code."""
    if 200 <= code < 300:
        return "redirected" if hops else "ok"
    if code in (404, 410):
        return "dead"
    return "error"  # 401/403/429/5xx and the rest: maybe temporary, checked again later


class Checker:
    """Checks URLs with a guarded client; thread-safe."""

    def __init__(
        self,
        client: Client,
        policy: AddressPolicy,
        *,
        total_timeout: float = 20.0,
        github_api: str | None = "https://api.github.com",
        github_token: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.policy = policy
        self.total_timeout = total_timeout
        self.github_api = github_api.rstrip("/") if github_api else None
        self.github_token = github_token
        self.sleep = sleep

    def check(self, url: str) -> CheckResult:
        """Return the state of one URL; never raises for network trouble."""
        problem = self.policy.url_problem(url)
        if problem:
            return CheckResult(url, "blocked", note=problem)
        result = self._check_once(url)
        wait = result.retry_after
        if result.http_status == 429 and wait is not None and wait <= RETRY_AFTER_WAIT:
            self.sleep(wait)
            result = self._check_once(url)
        return result

    def _check_once(self, url: str) -> CheckResult:
        with deadline(self.total_timeout):
            try:
                repo = self._github_repo(url)
                if repo:
                    return self._check_github(url, *repo)
                return self._follow(url)
            except RedirectRefused as e:  # the guarded client's own check of a redirect
                return CheckResult(url, "blocked", e.status, note=str(e))
            except BlockedAddress as e:
                return CheckResult(url, "blocked", note=str(e))
            except NameNotResolved as e:
                note = f"name not resolved: {e}"
                return CheckResult(url, "error", note=note, dns_failure=True, unreachable=True)
            except TimedOut:
                return CheckResult(url, "error", note="timed out", unreachable=True)
            except ConnectionFailed as e:  # refused, reset: nothing that answers HTTP
                return CheckResult(url, "error", note=e.described[:200], unreachable=True)
            except InvalidURL as e:  # the text is not a URL
                return CheckResult(url, "error", note=f"invalid URL: {e}"[:200])
            except NetError as e:
                return CheckResult(url, "error", note=e.described[:200])
            except ValueError as e:
                return CheckResult(url, "error", note=f"invalid URL: {e}"[:200])

    def _follow(self, url: str) -> CheckResult:
        chain = follow(
            self._ask, url, self.policy, max_redirects=MAX_REDIRECTS, codes=_ANY_REDIRECT
        )
        final, target = chain.final, chain.target
        if final is None:  # check() judged the URL already: only if the policy changed
            return CheckResult(url, "blocked", note=chain.problem)
        code = final.status
        if chain.stop == "loop":
            return CheckResult(url, "error", code, target, "redirect loop")
        if chain.stop == "refused":
            # Pages link to final_url: a target that is not an http(s) URL (javascript:,
            # data:) is named by its scheme in the note, never kept.
            kept = None if target is None or http_url_problem(target) else target
            return CheckResult(url, "blocked", code, kept, f"redirect to {chain.problem}")
        if chain.stop == "too many":
            # The last answer's code: servers answered (the network works), only too often.
            return CheckResult(url, "error", code, target, f"more than {MAX_REDIRECTS} redirects")
        hops = len(chain.answers) - 1
        retry = retry_after_seconds(final.headers.get("retry-after"), time.time())
        final_url = final.url if hops else None
        note = None if code < 400 else f"HTTP {code}"
        return CheckResult(url, status_for(code, hops), code, final_url, note, retry)

    def _ask(self, url: str) -> Response:
        """Return the answer to HEAD, or to GET where servers refuse HEAD (body closed)."""
        response = self._request("HEAD", url)
        if response.status in _HEAD_REFUSED:
            response = self._request("GET", url)
        return response

    def _request(self, method: str, url: str) -> Response:
        with self.client.open(method, url) as response:
            if method == "GET":  # a peek is enough to know the server answers; never more
                response.peek(PEEK_BYTES)
        return response

    def _github_repo(self, url: str) -> tuple[str, str] | None:
        if not self.github_api:
            return None
        parts = urlsplit(url)
        if parts.hostname not in ("github.com", "www.github.com"):
            return None
        m = _GITHUB_REPO.match(parts.path)
        if not m or m.group(1) in GITHUB_RESERVED:
            return None
        return m.group(1), m.group(2).removesuffix(".git")

    def _check_github(self, url: str, owner: str, repo: str) -> CheckResult:
        """Ask GitHub's API: it knows renames (canonical name) and archived repositories."""
        api = f"{self.github_api}/repos/{owner}/{repo}"
        api_host = urlsplit(api).netloc

        def ask(target: str) -> Response:
            headers = {"Accept": "application/vnd.github+json"}
            if self.github_token and urlsplit(target).netloc == api_host:
                # The token goes to the GitHub API only: not to a link's host, not to
                # wherever a redirect points.
                headers["Authorization"] = f"Bearer {self.github_token}"
            return self.client.open("GET", target, headers)

        chain = follow(ask, api, self.policy, max_redirects=MAX_REDIRECTS - 1, codes=_API_REDIRECTS)
        with chain:
            response = chain.final
            # After MAX_REDIRECTS answers the API is asked no more: its last answer (a
            # redirect) is judged, wherever that pointed.
            if response is None or (chain.stop == "refused" and len(chain.answers) < MAX_REDIRECTS):
                return CheckResult(url, "blocked", note="GitHub API address is not allowed")
            code = response.status
            remaining = response.headers.get("x-ratelimit-remaining")
            limited = remaining == "0" or "retry-after" in response.headers
            if code == 429 or (code == 403 and limited):
                wait = retry_after_seconds(response.headers.get("retry-after"), time.time())
                reset = response.headers.get("x-ratelimit-reset")
                if wait is None and reset and reset.isdigit():
                    wait = max(0.0, int(reset) - time.time())
                return CheckResult(url, "error", code, note="GitHub rate limit", retry_after=wait)
            if code == 404:
                return CheckResult(url, "dead", code, note="no such GitHub repository")
            if code != 200:
                return CheckResult(url, "error", code, note=f"GitHub API: HTTP {code}")
            body = response.read_capped(API_BYTES) or b""  # too large: not a JSON object
        try:
            data: Any = json.loads(body)
        except (ValueError, RecursionError):  # nested too deep to parse is no JSON either
            data = None
        if not isinstance(data, dict):
            return CheckResult(url, "error", code, note="GitHub API: not a JSON object")
        html_url = data.get("html_url")
        canonical = html_url if isinstance(html_url, str) else ""
        if http_url_problem(canonical):  # it becomes final_url, which pages link to
            canonical = ""
        note = "archived" if data.get("archived") else None
        base = f"https://github.com/{owner}/{repo}"
        if canonical and canonical.lower() != base.lower():
            rest = url[len(base) :] if url.lower().startswith(base.lower()) else ""
            return CheckResult(url, "redirected", code, canonical + rest, note or "renamed")
        return CheckResult(url, "ok", code, note=note)


def check_many(
    checker: Checker,
    urls: Iterable[str],
    *,
    concurrency: int = 8,
    per_host: int = 2,
    give_up_after: int = 8,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[CheckResult]:
    """Check URLs concurrently, at most `per_host` at a time per host; yield results.

    When the first `give_up_after` checks all fail without any server answering (no
    network), the rest is not attempted: those URLs stay due for the next run.
    """
    todo = list(urls)
    hosts: dict[str, threading.Semaphore] = {}
    lock = threading.Lock()
    state = {"answered": 0, "failed": 0}

    def one(url: str) -> CheckResult | None:
        with lock:
            if state["answered"] == 0 and state["failed"] >= give_up_after:
                return None
            gate = hosts.setdefault(urlsplit(url).hostname or "", threading.Semaphore(per_host))
        with gate:
            result = checker.check(url)
        with lock:
            if result.responded:
                state["answered"] += 1
            elif result.status == "error":
                state["failed"] += 1
        return result

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for done, result in enumerate(pool.map(one, todo), start=1):
            if progress:
                progress(done, len(todo))
            if result is not None:
                yield result
