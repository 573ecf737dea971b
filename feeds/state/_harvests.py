"""arXiv harvests: where each followed category stands (the harvest decider's cursor, as
its text), and which arXiv papers are known."""

from __future__ import annotations

from feeds.state._db import StoreBase, upsert


class HarvestsMixin(StoreBase):
    def harvest_cursor(self, category: str) -> str | None:
        row = self.db.execute(
            "SELECT cursor FROM harvests WHERE category = ?", (category,)
        ).fetchone()
        return None if row is None else str(row[0])

    def put_harvest_cursor(self, category: str, cursor: str) -> None:
        self.db.execute(upsert("harvests", "category", "cursor"), (category, cursor))

    def has_arxiv_paper(self, arxiv_id: str) -> bool:
        """Return True when a paper with this arXiv id is stored (harvested, or found by a
        lookup with what the harvest would give)."""
        row = self.db.execute(
            "SELECT 1 FROM papers WHERE arxiv_id = ? AND abstract IS NOT NULL LIMIT 1",
            (arxiv_id,),
        ).fetchone()
        return row is not None
