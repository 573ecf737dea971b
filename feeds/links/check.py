"""Check links over HTTP: HEAD (then GET), redirects hop by hop, every hop guarded.

The only network code of paperfeeds lives in this package. Results are plain data; the
pipeline stores them and decides when to check again (see policy.py).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from feeds.links.guard import (
    AddressPolicy,
    BlockedAddress,
    NameNotResolved,
    RedirectRefused,
    deadline,
    http_url_problem,
    read_capped,
)
from feeds.model import LinkStatus

MAX_REDIRECTS = 5
PEEK_BYTES = 64 * 1024  # a GET check reads at most this much of a body
API_BYTES = 1024 * 1024  # an API answer larger than this is cut (and then not JSON)
RETRY_AFTER_WAIT = 5.0  # a 429 asking for at most this long is waited for and retried once
_GITHUB_REPO = re.compile(r"^/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)(?:/|$)")
_HEAD_REFUSED = {403, 405, 501}


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


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """Return the wait a Retry-After header asks for (seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return None


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
        client: httpx.Client,
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
            except httpx.TimeoutException:
                return CheckResult(url, "error", note="timed out", unreachable=True)
            except httpx.NetworkError as e:  # refused, reset: nothing that answers HTTP
                note = f"{type(e).__name__}: {e}"[:200]
                return CheckResult(url, "error", note=note, unreachable=True)
            except httpx.HTTPError as e:
                return CheckResult(url, "error", note=f"{type(e).__name__}: {e}"[:200])
            except (httpx.InvalidURL, UnicodeError, ValueError) as e:  # text is not a URL
                return CheckResult(url, "error", note=f"invalid URL: {e}"[:200])

    def _follow(self, url: str) -> CheckResult:
        seen = {url}
        current = url
        code: int | None = None
        for hops in range(MAX_REDIRECTS + 1):
            response = self._request("HEAD", current)
            if response.status_code in _HEAD_REFUSED:
                response = self._request("GET", current)
            code = response.status_code
            location = response.headers.get("location")
            if 300 <= code < 400 and location:
                target = urljoin(current, location)
                if target in seen:
                    return CheckResult(url, "error", code, target, "redirect loop")
                problem = self.policy.url_problem(target)
                if problem:
                    # Pages link to final_url: a target that is not an http(s) URL
                    # (javascript:, data:) is named by its scheme in the note, never kept.
                    final = None if http_url_problem(target) else target
                    return CheckResult(url, "blocked", code, final, f"redirect to {problem}")
                seen.add(target)
                current = target
                continue
            retry = retry_after_seconds(response.headers.get("retry-after"), time.time())
            final = current if hops else None
            note = None if code < 400 else f"HTTP {code}"
            return CheckResult(url, status_for(code, hops), code, final, note, retry)
        # The last answer's code: servers answered (the network works), only too often.
        return CheckResult(url, "error", code, current, f"more than {MAX_REDIRECTS} redirects")

    def _request(self, method: str, url: str) -> httpx.Response:
        request = self.client.build_request(method, url)
        response = self.client.send(request, stream=True)
        try:
            if method == "GET":  # a peek is enough to know the server answers; never more
                taken = 0
                for chunk in response.iter_raw():
                    taken += len(chunk)
                    if taken >= PEEK_BYTES:
                        break
        finally:
            response.close()
        return response

    def _get_capped(self, url: str, headers: dict[str, str]) -> tuple[httpx.Response, bytes]:
        """GET with at most API_BYTES of body read."""
        with self.client.stream("GET", url, headers=headers) as response:
            body = read_capped(response, API_BYTES)
        return response, body or b""  # too large: empty, so "not a JSON object"

    def _github_repo(self, url: str) -> tuple[str, str] | None:
        if not self.github_api:
            return None
        parts = urlsplit(url)
        if parts.hostname not in ("github.com", "www.github.com"):
            return None
        m = _GITHUB_REPO.match(parts.path)
        if not m or m.group(1) in ("orgs", "topics", "features", "sponsors", "settings"):
            return None
        return m.group(1), m.group(2).removesuffix(".git")

    def _check_github(self, url: str, owner: str, repo: str) -> CheckResult:
        """Ask GitHub's API: it knows renames (canonical name) and archived repositories."""
        api = f"{self.github_api}/repos/{owner}/{repo}"
        api_host = urlsplit(api).netloc
        for _hop in range(MAX_REDIRECTS):
            if self.policy.url_problem(api):
                return CheckResult(url, "blocked", note="GitHub API address is not allowed")
            headers = {"Accept": "application/vnd.github+json"}
            if self.github_token and urlsplit(api).netloc == api_host:
                # The token goes to the GitHub API only: not to a link's host, not to
                # wherever a redirect points.
                headers["Authorization"] = f"Bearer {self.github_token}"
            response, body = self._get_capped(api, headers)
            if response.status_code in (301, 302, 307, 308) and "location" in response.headers:
                api = urljoin(api, response.headers["location"])  # a renamed repository
                continue
            break
        code = response.status_code
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
        try:
            data: Any = json.loads(body)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return CheckResult(url, "error", code, note="GitHub API: not a JSON object")
        canonical = str(data.get("html_url") or "")
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
