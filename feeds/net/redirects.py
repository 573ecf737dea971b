"""Follow redirects hop by hop, every hop judged by the policy: the one way paperfeeds does.

Link checks, the GitHub API check, remote sources and lookups all ask through `follow`;
each says how to ask one URL (a HEAD, a GET with a token ...), which statuses are redirects
and how many it follows, and turns the chain into its own result.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import urljoin

from feeds.net.closing import Closing
from feeds.net.errors import InvalidURL
from feeds.net.policy import AddressPolicy

if TYPE_CHECKING:
    from feeds.net.client import Response

REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})

Stop = Literal["answered", "loop", "refused", "too many"]


@dataclass(frozen=True)
class Chain(Closing):
    """Where a URL led: the answers in order, one per URL asked, and why it ended there.

    `answered`: the last answer is no redirect (or one without a Location): the end.
    `loop`: the last answer redirects to `target`, a URL asked before.
    `refused`: the policy refuses `target` (`problem` says why); with no answers, the very
    URL asked for.
    `too many`: the last answer redirects to `target` after all the redirects allowed.

    The redirects' bodies are closed unread; the last answer is open when it is no
    redirect: close the chain (or use it as a context manager) when done.
    """

    answers: tuple[Response, ...]
    stop: Stop
    target: str | None = None
    problem: str | None = None

    @property
    def final(self) -> Response | None:
        """Return the last answer (None when the first URL was refused)."""
        return self.answers[-1] if self.answers else None

    def close(self) -> None:
        if self.answers:
            self.answers[-1].close()


def follow(
    ask: Callable[[str], Response],
    url: str,
    policy: AddressPolicy,
    *,
    max_redirects: int,
    codes: Container[int] = REDIRECT_CODES,
) -> Chain:
    """Return the chain of answers `url` leads to, asking each URL with `ask`.

    A URL is asked only if the policy allows it (and the guarded client connects only to
    addresses it allows). A redirect is an answer with a status in `codes` and a Location;
    its target is judged in this order: asked before (a loop), refused by the policy, one
    redirect too many (more than `max_redirects`). Raise a NetError when asking fails.
    """
    problem = policy.url_problem(url)
    if problem:
        return Chain((), "refused", url, problem)
    answers: list[Response] = []
    seen = {url}
    current = url
    while True:
        response = ask(current)
        answers.append(response)
        location = response.headers.get("location")
        if response.status not in codes or not location:
            return Chain(tuple(answers), "answered")
        response.close()  # a redirect's body is never read
        try:
            target = urljoin(current, location)
        except ValueError as e:  # "http://[::1": not even a URL to judge
            raise InvalidURL(str(e), url=current, kind=type(e).__name__) from e
        if target in seen:
            return Chain(tuple(answers), "loop", target)
        problem = policy.url_problem(target)
        if problem:
            return Chain(tuple(answers), "refused", target, problem)
        if len(answers) > max_redirects:
            return Chain(tuple(answers), "too many", target)
        seen.add(target)
        current = target
