"""The files our publishes wrote into public/ that a later publish builds on (feeds,
reading lists, BibTeX and RIS files), each with its stamp (size and modification time) as
it was written: a file whose stamp differs now was changed since, by hand, a disk or a sync
tool, and is rendered anew instead of built upon."""

from __future__ import annotations

from feeds.state._db import StoreBase, upsert


class PublishedMixin(StoreBase):
    def published_stamps(self) -> dict[str, tuple[int, int]]:
        """Return the stamp of each file written, by its path under public/."""
        rows = self.db.execute("SELECT path, size, mtime_ns FROM published")
        return {str(p): (int(n), int(t)) for p, n, t in rows}

    def put_published_stamps(self, stamps: dict[str, tuple[int, int]], *, whole: bool) -> None:
        """Keep the stamps of the files a publish wrote or found unchanged; `whole`: the
        publish wrote every file, and what it did not write is no longer ours to build on."""
        if whole:
            self.db.execute("DELETE FROM published")
        self.db.executemany(
            upsert("published", "path", "size", "mtime_ns"),
            [(path, size, mtime) for path, (size, mtime) in stamps.items()],
        )
