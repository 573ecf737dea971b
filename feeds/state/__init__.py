"""The state: what has been ingested, the papers, their links and topic memberships (SQLite).

`public/` can always be rebuilt from this database; the database is the record. Its
storage is split the way lemon24/reader splits its own: the schema and its migrations
(_schema), the connection and transactions (_db), how rows encode values (_rows), the
records queries return (records), and one
module per group of tables, each a mixin of Store: papers, links, memberships, inputs
(digests, files, sources, runs), what is dirty (to publish again), alert destinations,
arXiv harvests, citation keys and the stamps of published files.
"""

from __future__ import annotations

from feeds.state._alerts import AlertsMixin
from feeds.state._db import Batch, Place, exists, place_shown
from feeds.state._harvests import HarvestsMixin
from feeds.state._inputs import InputsMixin
from feeds.state._keys import KeysMixin
from feeds.state._papers import PapersMixin
from feeds.state._published import PublishedMixin
from feeds.state._rows import encode_hits, parse_ts
from feeds.state._schema import MEMBER_INDEXES, SCHEMA_VERSION

# The records its queries return are in feeds.state.records, imported where they are made:
# creating their classes would cost a run that has nothing to do.
__all__ = [
    "MEMBER_INDEXES", "SCHEMA_VERSION", "Batch", "Place", "Store", "encode_hits", "exists",
    "parse_ts", "place_shown",
]  # fmt: skip


class Store(PapersMixin, InputsMixin, AlertsMixin, HarvestsMixin, KeysMixin, PublishedMixin):
    """A connection to the state database; one writer at a time (see feeds.state.lock)."""
