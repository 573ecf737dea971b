"""The matcher kept between runs (in the cache folder, see feeds.cache): building one for
a thousand topics costs several times as much as loading it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from feeds.cache import CACHE_FORMAT, cache_dir, cache_read, cache_write, code_stamp

if TYPE_CHECKING:
    from feeds.match.fast import Matcher
    from feeds.topics import Criteria


def cached_matcher(topics: Sequence[tuple[str, Criteria]]) -> Matcher:
    """Return Matcher(topics), loaded from the cache folder when one was built before for
    the same topics by the same code, else built and saved there.

    Building one for a thousand topics (~130 ms) costs several times as much as loading it
    (~20 ms), a large part of a run that adds one digest. One file per working folder,
    overwritten, so the cache cannot grow.
    """
    import hashlib
    import os
    import sys
    import zlib

    from feeds.match.fast import Matcher  # the automaton's module: only when matching

    # The environment too: the automaton is pyahocorasick's own pickle, and one cache
    # folder may serve several virtual environments with different versions of it.
    where = (sys.version, sys.prefix)
    made_of = repr((CACHE_FORMAT, where, code_stamp(), list(topics)))
    key = hashlib.sha256(made_of.encode()).hexdigest()
    path = cache_dir() / f"matcher-{zlib.crc32(os.getcwd().encode()):08x}.pickle"
    matcher = cache_read(path, key)
    if isinstance(matcher, Matcher):
        return matcher
    matcher = Matcher(topics)  # before any paper: its memo tables are empty when saved
    cache_write(path, key, matcher)
    return matcher
