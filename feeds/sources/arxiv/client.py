"""Ask the arXiv API for a category's newest submissions: politely, guarded, never in a loop.

The network edge of arXiv harvesting; harvest.py decides what to ask and what is new,
atom.py reads the answers. arXiv's terms ask for one request every three seconds on a
single connection and a User-Agent that names the client; a 429 or 503 ends the cycle's
harvesting (the source backs off, see harvest.after_harvest), it is never retried here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

from feeds.net import AddressPolicy, NetError, TimedOut, deadline
from feeds.net.pacing import Throttle, retry_after_seconds
from feeds.sources.arxiv.atom import ApiError, ArxivError, BadAnswer, Entry, Page, parse
from feeds.sources.arxiv.harvest import (
    BACKFILL,
    LOOKBACK,
    PAGE_SIZE,
    Cursor,
    HarvestResult,
    Request,
    after_page,
    next_request,
    valid_category,
)
from feeds.sources.remote import unreachable_words

if TYPE_CHECKING:
    from feeds.net.client import Client

DELAY = 3.0  # seconds between requests, as arXiv asks
MAX_PAGES = 10  # requests per category and cycle: a long backfill spreads over cycles
TIMEOUT = 60.0  # total seconds for one page (big pages are slow to come)
# A page of 100 entries is ~300 kB; a physics paper with a thousand authors is ~100 kB alone.
MAX_PAGE_BYTES = 16 * 1024 * 1024


class FetchFailed(ArxivError):
    """The API could not be asked, or answered with a failure (network, HTTP status, size)."""


class RateLimited(ArxivError):
    """The API answered 429 or 503: it asks for a pause, `retry_after` seconds if it said."""

    def __init__(self, message: str, status: int, retry_after: float | None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def query_url(api_url: str, category: str, request: Request) -> str:
    """Return the URL that asks for one page of a category, newest submissions first."""
    query = urlencode({
        "search_query": f"cat:{category}",
        "sortBy": "submittedDate",
        "sortOrder": "descending",
        "start": request.start,
        "max_results": request.max_results,
    })  # fmt: skip
    return f"{api_url}{'&' if '?' in api_url else '?'}{query}"


def fetch_page(
    client: Client,
    api_url: str,
    category: str,
    request: Request,
    *,
    policy: AddressPolicy | None = None,
    timeout: float = TIMEOUT,
) -> Page:
    """Return one page of a category's submissions, asked for once.

    Raise RateLimited (429, 503), ApiError (arXiv's error feed), BadAnswer (not its Atom)
    or FetchFailed (the rest): all ArxivError. `client` is a guarded client (see
    feeds.net.guarded_client); `policy`, when given, also judges the URL itself.
    """
    if not valid_category(category):
        raise ArxivError(f"{category!r} is not an arXiv category (like cs.CL or hep-th)")
    url = query_url(api_url, category, request)
    host = urlsplit(url).hostname or api_url
    problem = policy.url_problem(url) if policy is not None else None
    if problem:
        raise FetchFailed(f"{host} not asked: {problem}")
    try:
        with deadline(timeout), client.open("GET", url) as response:
            status = response.status
            if status in (429, 503):
                wait = retry_after_seconds(response.headers.get("retry-after"), time.time())
                asked = f"; it asks to wait {wait:.0f} s" if wait is not None else ""
                raise RateLimited(f"{host} answered HTTP {status}{asked}", status, wait)
            if 300 <= status < 400:
                moved = response.headers.get("location", "")[:200]
                raise FetchFailed(f"{host} answered HTTP {status} to {moved or 'nowhere'}")
            body = response.read_capped(MAX_PAGE_BYTES)
    except TimedOut as e:
        raise FetchFailed(f"{host} did not answer within {timeout:.0f} s") from e
    except NetError as e:
        raise FetchFailed(f"{host}: {unreachable_words(e)}"[:300]) from e
    if body is None:
        raise FetchFailed(f"{host} answered more than {MAX_PAGE_BYTES} bytes")
    if status != 200:
        try:
            parse(body)  # arXiv says what was wrong with a query in its error feed (a 400)
        except ApiError:
            raise
        except ArxivError:
            pass
        raise FetchFailed(f"{host} answered HTTP {status}")
    page = parse(body)
    if page.start != request.start:
        raise BadAnswer(f"{host} answered results from {page.start}, not {request.start}")
    return page


class Harvester:
    """Harvests arXiv categories through a guarded client, one request at a time, paced.

    Share `throttle` with the enricher's arXiv lookups (links.enrich.Enricher) so that
    the pace holds for everything a run asks arXiv.
    """

    def __init__(
        self,
        client: Client,
        api_url: str,
        *,
        policy: AddressPolicy | None = None,
        backfill: timedelta = BACKFILL,
        lookback: timedelta = LOOKBACK,
        page_size: int = PAGE_SIZE,
        max_pages: int = MAX_PAGES,
        timeout: float = TIMEOUT,
        delay: float = DELAY,
        sleep: Callable[[float], None] = time.sleep,
        throttle: Throttle | None = None,
    ) -> None:
        self.client = client
        self.api_url = api_url
        self.policy = policy
        self.backfill = backfill
        self.lookback = lookback
        self.page_size = page_size
        self.max_pages = max_pages
        self.timeout = timeout
        self.throttle = throttle or Throttle(delay, sleep=sleep)

    def harvest(self, cursor: Cursor, now: datetime, seen: Callable[[str], bool]) -> HarvestResult:
        """Return what one cycle's harvest of `cursor`'s category brought: the entries that
        are new (not `seen`, by arXiv id) and the cursor to go on from, whatever happened."""
        return self._harvest(cursor, now, seen)[0]

    def harvest_all(
        self, cursors: Sequence[Cursor], now: datetime, seen: Callable[[str], bool]
    ) -> tuple[HarvestResult, ...]:
        """Return each category's harvest, a cross-listed paper in the first one's only.

        When the API fails (rate limit, network, an answer that is not its Atom), the
        categories after it are not asked this cycle: their results carry the same error.
        A refused query (ApiError) is the category's own trouble.
        """
        results: list[HarvestResult] = []
        brought: set[str] = set()
        failed: HarvestResult | None = None

        def known(arxiv_id: str) -> bool:
            return arxiv_id in brought or seen(arxiv_id)

        for cursor in cursors:
            if failed is not None:  # not asked, for the same cause: said in the same words
                results.append(
                    HarvestResult(cursor, error=failed.error, retry_after=failed.retry_after)
                )
                continue
            result, error = self._harvest(cursor, now, known)
            brought.update(e.arxiv_id for e in result.entries)
            results.append(result)
            if isinstance(error, FetchFailed | RateLimited | BadAnswer):
                failed = result
        return tuple(results)

    def _harvest(
        self, cursor: Cursor, now: datetime, seen: Callable[[str], bool]
    ) -> tuple[HarvestResult, ArxivError | None]:
        got: list[Entry] = []
        ids: set[str] = set()  # returned, not stored yet: pages overlap by an entry
        problems: list[str] = []
        requests = 0

        def result(done: bool = False, error: ArxivError | None = None) -> HarvestResult:
            wait = error.retry_after if isinstance(error, RateLimited) else None
            said = None if error is None else str(error)
            named = tuple(dict.fromkeys(problems))  # an entry read twice is named once
            return HarvestResult(cursor, tuple(got), requests, done, said, wait, named)

        while requests < self.max_pages:
            request = next_request(
                cursor, now, self.backfill, self.page_size, lookback=self.lookback
            )
            if request is None:
                break
            self.throttle.wait()
            requests += 1
            try:
                page = fetch_page(
                    self.client,
                    self.api_url,
                    cursor.category,
                    request,
                    policy=self.policy,
                    timeout=self.timeout,
                )
            except ArxivError as e:
                return result(error=e), e
            problems += page.problems
            step = after_page(cursor, request, page, now, lambda i: i in ids or seen(i))
            got += step.new
            ids.update(e.arxiv_id for e in step.new)
            if step.cursor == cursor and not step.done:  # never ask the same again now
                stuck = BadAnswer(f"no readable entry at {page.start} of {page.total} results")
                return result(error=stuck), stuck
            cursor = step.cursor
            if step.done:
                return result(done=True), None
        return result(), None
