"""Citation keys: the key each paper was given when it was first cited, kept for good.

A key once given stays with its paper (SPEC "Your library"): a reading list rebuilt from
scratch, a topic that lists the paper later, a paper whose title is revised, all show the
key it had. Keys are unique across the state, so they are unique in every file."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from feeds.state._db import StoreBase


class KeysMixin(StoreBase):
    def citation_keys(self, paper_ids: Sequence[str]) -> dict[str, str]:
        """Return the keys of these papers that have one."""
        found: dict[str, str] = {}
        for chunk, among in self.chunks(list(paper_ids)):
            rows = self.db.execute(
                f"SELECT paper_id, key FROM citation_keys WHERE paper_id IN {among}", chunk
            )
            found.update((str(p), str(k)) for p, k in rows)
        return found

    def keyless(self) -> list[str]:
        """Return the papers that have no citation key yet, in arrival order."""
        rows = self.db.execute(
            "SELECT paper_id FROM papers WHERE paper_id NOT IN (SELECT paper_id FROM"
            " citation_keys) ORDER BY first_seen, seq"
        )
        return [str(pid) for (pid,) in rows]

    def keys_taken(self, bases: Iterable[str]) -> set[str]:
        """Return the keys given that begin with one of these base keys: a key is its
        paper's base key, or that with a suffix; and a suffixed key may be another paper's
        base key. (Keys are ASCII letters and digits, so `{` sorts after every key that
        begins with the base: a range of the key's index.)"""
        taken: set[str] = set()
        for base in bases:
            rows = self.db.execute(
                "SELECT key FROM citation_keys WHERE key >= ? AND key < ?", (base, base + "{")
            )
            taken.update(str(k) for (k,) in rows)
        return taken

    def put_citation_keys(self, given: Iterable[tuple[str, str]]) -> None:
        """Keep these (paper id, key) for good."""
        self.db.executemany("INSERT INTO citation_keys VALUES (?, ?)", list(given))
