"""A topic as the subscriptions file defines it: its id, title and matching criteria."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a run that reads the config from the cache does not load feeds.model
    from feeds.model import Diagnostic, Library

# The fields of a paper that terms are looked for in (see feeds.match.fields).
FIELDS = ("title", "summary", "authors", "institutions", "comments", "venue", "categories")
DEFAULT_FIELDS = ("title", "summary")


@dataclass(frozen=True)
class Criteria:
    """A topic's matching rules, as validated config gives them."""

    any: tuple[str, ...] = ()
    all: tuple[tuple[str, ...], ...] = ()
    none: tuple[str, ...] = ()
    fields: tuple[str, ...] = DEFAULT_FIELDS
    authors: tuple[str, ...] = ()
    institutions: tuple[str, ...] = ()
    venues: tuple[str, ...] = ()
    # Topics by example (see feeds.match.likes): papers, or descriptions, to be like ...
    like: tuple[str, ...] = ()
    unlike: tuple[str, ...] = ()  # ... and not like
    min_similarity: float | None = None  # None: similar.DEFAULT_MIN_SIMILARITY
    # A reference manager's export: its items are examples, as `like:` ones (see
    # feeds.config.library), and the papers in it are not listed.
    library: tuple[Library, ...] = ()

    @property
    def by_example(self) -> bool:
        """True for a topic by example: papers like its `like:` or library's examples."""
        return bool(self.like or self.library)

    @property
    def positive(self) -> bool:
        return bool(
            self.any or self.all or self.authors or self.institutions or self.venues
            or self.by_example
        )  # fmt: skip


@dataclass(frozen=True)
class Topic:
    id: str
    title: str
    criteria: Criteria
    description: str | None = None
    max_items: int | None = None
    line: int = 0
    # What is valid but likely not meant (see comma_warning), at its file and line.
    warnings: tuple[Diagnostic, ...] = field(default=(), compare=False)
    # The lines of its `like:` examples, then of its `unlike:` ones (for their messages).
    examples: tuple[int, ...] = field(default=(), compare=False)

    # Both are kept in the state and compared on every run; computed once and cached with
    # the config. The repr of a frozen dataclass of tuples of strings is stable.
    @cached_property
    def fingerprint(self) -> str:
        """A hash of what decides the topic's papers (not its title or size)."""
        import hashlib  # hashlib loads OpenSSL (~3 ms): not on a run that reads the cache

        text = repr(self.criteria)
        c = self.criteria
        if not c.library:  # and a topic without a library the one it had before libraries
            text = text.replace(", library=()", "")
        if not (c.like or c.unlike or c.min_similarity is not None):
            # A topic of terms keeps the fingerprint it had before topics by example: an
            # upgrade does not match every topic again.
            text = text.replace(", like=(), unlike=(), min_similarity=None", "")
        from feeds.text import has_cjk

        terms = (*c.any, *(t for group in c.all for t in group), *c.none, *c.institutions)
        if any(t.rstrip().endswith("*") and has_cjk(t) for t in terms):
            # `推测*` matched nothing before it was a prefix: such a topic is matched again.
            text += " cjk-prefix"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @cached_property
    def looks(self) -> str:
        """A hash of what the topic's pages show besides its papers (title, size)."""
        import hashlib
        import json

        data = [self.title, self.description, self.max_items]
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:16]
