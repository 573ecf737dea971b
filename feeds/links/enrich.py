"""Find links a digest did not give: arXiv by title, then Hugging Face's paper page.

Parsing is pure (bytes in, data out); `Enricher` does the fetching, politely and guarded.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from feeds.errors import FeedsError
from feeds.links.extract import classify, normalize_url
from feeds.model import Link, Paper
from feeds.net import (
    AddressPolicy,
    BlockedAddress,
    NetError,
    RedirectRefused,
    Unreachable,
    deadline,
    follow,
    http_url_problem,
)
from feeds.net.pacing import Throttle
from feeds.text import title_key

if TYPE_CHECKING:
    from feeds.net.client import Client, Response

MAX_RESPONSE = 2 * 1024 * 1024  # an API answer larger than this is refused
TITLE_SIMILARITY = 0.97  # near-exact: punctuation and case aside, the same title


class LookupFailed(FeedsError):
    """A lookup failed (network, status, size, format); try again on a later run.

    `unreachable`: no server was reached at all (no name, no connection, no answer in
    time), which may be the network's fault rather than the API's; `answered`: the API
    answered (the network works), if not as hoped; `host` is the API's.
    """

    def __init__(
        self, message: str, *, host: str = "", unreachable: bool = False, answered: bool = True
    ) -> None:
        super().__init__(message)
        self.host = host
        self.unreachable = unreachable
        self.answered = answered and not unreachable


@dataclass(frozen=True)
class Found:
    """What an external source knows of a paper."""

    source: str
    title: str
    arxiv_id: str | None = None
    links: tuple[Link, ...] = ()
    paper: Paper | None = None  # arXiv's entry as a paper: its abstract, categories


def same_title(a: str, b: str) -> bool:
    """Return True when two titles are the same paper's (case, punctuation and spacing aside)."""
    ka, kb = title_key(a), title_key(b)
    return ka == kb or difflib.SequenceMatcher(None, ka, kb).ratio() >= TITLE_SIMILARITY


def parse_huggingface(content: bytes) -> list[Found]:
    """Return the papers in a Hugging Face papers API answer (one paper, or a search list)."""
    try:
        data: Any = json.loads(content)
    except (ValueError, RecursionError) as e:  # nested too deep to parse is no JSON either
        raise LookupFailed(f"Hugging Face answer is not JSON: {e}") from e
    items = data if isinstance(data, list) else [data]
    found = []
    for item in items:
        paper = item.get("paper", item) if isinstance(item, dict) else None
        # A title that is no string is no paper (and str() of a deeply nested list recurses).
        if not isinstance(paper, dict) or not isinstance(paper.get("title"), str):
            continue
        if not paper["title"]:
            continue
        links = []
        repo, page = _http_url(paper.get("githubRepo")), _http_url(paper.get("projectPage"))
        if repo:
            links.append(Link(repo, classify(repo), "huggingface"))
        if page:
            links.append(Link(page, "project", "huggingface"))
        arxiv_id = paper.get("id") if isinstance(paper.get("id"), str) else None
        found.append(Found("huggingface", paper["title"], arxiv_id, tuple(links)))
    return found


def _http_url(value: object) -> str | None:
    """Return an API answer's value as a normalized link URL, or None unless it is an
    http(s) URL with a host: the value is anyone's text, and pages will link to it."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        return None
    url = normalize_url(value)
    return None if http_url_problem(url) else url


class Enricher:
    """Looks papers up on arXiv and Hugging Face through a guarded client."""

    def __init__(
        self,
        client: Client,
        policy: AddressPolicy,
        *,
        arxiv_api: str | None = "https://export.arxiv.org/api/query",
        huggingface_api: str | None = "https://huggingface.co/api",
        arxiv_throttle: Throttle | None = None,
        total_timeout: float = 30.0,
        read_arxiv: Callable[[bytes], list[Found]] | None = None,
    ) -> None:
        self.client = client
        self.policy = policy
        # arXiv's answers are read by feeds.sources.arxiv, which harvests from the same API
        # (one reader of its Atom); handed in, so that links/ needs nothing of sources/.
        self.arxiv_api = arxiv_api if read_arxiv is not None else None
        self.read_arxiv = read_arxiv
        self.huggingface_api = huggingface_api.rstrip("/") if huggingface_api else None
        self.throttle = arxiv_throttle or Throttle(3.0)
        self.total_timeout = total_timeout

    def _get(self, url: str) -> bytes | None:
        """Return the body of a 200 answer, None for a 404; raise LookupFailed otherwise."""
        host = urlsplit(url).hostname or ""
        try:
            # Lookups follow no redirect: an API that moved answers with its status.
            with (
                deadline(self.total_timeout),
                follow(self._ask, url, self.policy, max_redirects=0) as chain,
            ):
                response = chain.final
                if response is None:
                    problem = f"not fetched: {chain.problem}"
                    raise LookupFailed(problem, host=host, answered=False)
                if response.status == 404:
                    return None
                if response.status != 200:
                    raise LookupFailed(f"{host} answered HTTP {response.status}", host=host)
                body = response.read_capped(MAX_RESPONSE)
                if body is None:
                    raise LookupFailed(f"answer larger than {MAX_RESPONSE} bytes", host=host)
                return body
        except Unreachable as e:  # no name, no connection, no answer in time
            raise LookupFailed(e.described[:200], host=host, unreachable=True) from e
        except BlockedAddress as e:  # a redirect refused came from an answer; the rest did not
            answered = isinstance(e, RedirectRefused)
            raise LookupFailed(f"not fetched: {e}"[:200], host=host, answered=answered) from e
        except NetError as e:
            raise LookupFailed(e.described[:200], host=host) from e

    def _ask(self, url: str) -> Response:
        return self.client.open("GET", url)

    def arxiv(self, title: str) -> Found | None:
        """Return the arXiv entry whose title is (near-)exactly this one, or None."""
        if not self.arxiv_api or self.read_arxiv is None:
            return None
        words = re.sub(r"[^\w\s-]", " ", title)
        query = urlencode({"search_query": f'ti:"{" ".join(words.split())}"', "max_results": 5})
        self.throttle.wait()
        body = self._get(f"{self.arxiv_api}?{query}")
        for entry in self.read_arxiv(body) if body else []:
            if same_title(entry.title, title):
                return entry
        return None

    def huggingface(self, title: str, arxiv_id: str | None) -> Found | None:
        """Return Hugging Face's paper record (code repo, project page), or None."""
        if not self.huggingface_api:
            return None
        if arxiv_id:
            url = f"{self.huggingface_api}/papers/{quote(arxiv_id)}"
        else:
            url = f"{self.huggingface_api}/papers/search?{urlencode({'q': title})}"
        body = self._get(url)
        for paper in parse_huggingface(body) if body else []:
            if same_title(paper.title, title):
                return paper
        return None
