"""Publish to a bucket: the site is published as ever into a local mirror (Settings'
public_dir, derived from `public_dir: s3://bucket/prefix`), then `sync` brings the bucket
level with it.

    local mirror ──walk + manifest──▶ what changed ──plan──▶ batches of PUTs, then DELETEs

The manifest (beside the mirror, `<mirror>.tsv`) says what was uploaded: key, MD5, and the
size and mtime of the file it came from (a file whose size and mtime are unchanged is not
read again). It is a log: one line a key after each batch that went up, one line a key
after each batch deleted; the last line of a key wins, and it is rewritten whole at the end
of a sync. A run killed mid-upload leaves it true to what the bucket holds (but for the
batch in flight, which is uploaded again), and the next run completes the upload.

Order, so that a reader of the bucket never follows a link to an object not yet there:
the search index's folders (new names, see search.py) and the paper pages first, then the
reading lists' archive pages and the feeds, then search/index.json (which names the new
index folders), the topics' pages and last the pages at the root (index.html, search.html,
feeds.opml). Objects no longer wanted (a removed topic's, the old index folders) are
deleted only after all of that.

Lost the manifest (a new machine, the mirror deleted)? The bucket is listed: what it holds
with the same MD5 as the mirror's file is kept, and what it holds in paperfeeds' folders
(feeds/, topics/, papers/, search/) that the mirror does not is deleted. Objects of your own
at the top of the prefix (robots.txt, say) are never touched.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from feeds.publish.formats import ALL_FORMATS

if TYPE_CHECKING:
    from feeds.publish.s3 import Bucket

BATCH = 200  # objects a batch: the manifest is brought up to date after each
THREADS = 16  # PUTs in flight (measured: 500 small PUTs to SeaweedFS, 0.70 s one by one,
#               0.29-0.44 s on 16 threads)
MANAGED = ("feeds/", "topics/", "papers/", "search/")  # ours, in the bucket as in public/
SEARCH_INDEX = "search/index.json"

SHORT = "public, max-age=300"  # pages and feeds: a new digest shows within five minutes
# The search index's folders are written once under a new name (see search.py): cached
# for good. index.json, which names them, is checked each time (search.html asks so too).
FOREVER = "public, max-age=31536000, immutable"
CHECK = "no-cache"

_TYPES = (  # besides the feeds' own, which formats.py names
    (".html", "text/html; charset=utf-8"),
    (".opml", "text/x-opml; charset=utf-8"),
    (".json", "application/json"),
    (".js", "text/javascript; charset=utf-8"),
    (".css", "text/css; charset=utf-8"),
    (".svg", "image/svg+xml"),
    (".xml", "application/xml; charset=utf-8"),
    (".tsv", "text/tab-separated-values; charset=utf-8"),
    (".txt", "text/plain; charset=utf-8"),
    (".wasm", "application/wasm"),
)


def content_type(key: str) -> str:
    """Return the Content-Type of a published file, by its key (as `feeds serve` sends)."""
    for f in ALL_FORMATS:
        if key.startswith(f.folder + "/") and key.endswith("." + f.suffix):
            return f"{f.media_type}; charset=utf-8"
    for suffix, ctype in _TYPES:
        if key.endswith(suffix):
            return ctype
    # Pagefind's own files (.pagefind, .pf_fragment, .pf_index, .pf_meta, .pf_filter) are
    # gzip it inflates itself: bytes to the browser, with no Content-Encoding.
    return "application/octet-stream"


def cache_control(key: str) -> str:
    if key == SEARCH_INDEX:
        return CHECK
    return FOREVER if key.startswith("search/") else SHORT


def tier(key: str) -> int:
    """Return when a changed object goes up: lower first (see the module's docstring)."""
    if key == SEARCH_INDEX:
        return 4
    if "/" not in key:
        return 6  # index.html, search.html, feeds.opml: what a reader opens first
    folder, _, rest = key.partition("/")
    if folder == "topics" and "/" not in rest:
        return 5  # a topic's page, which links its archive pages and feeds
    return {"search": 0, "papers": 1, "feeds": 3}.get(folder, 2)


@dataclass(frozen=True)
class Plan:
    puts: tuple[tuple[str, ...], ...]  # batches, in order: each is whole before the next
    deletes: tuple[tuple[str, ...], ...]  # batches, after every put


def plan(local: Mapping[str, str], uploaded: Mapping[str, str], batch: int = BATCH) -> Plan:
    """Return what to put and delete to bring the bucket (`uploaded`: key to MD5, as the
    manifest knows it) level with the mirror (`local`: key to MD5)."""
    changed = sorted((k for k, md5 in local.items() if uploaded.get(k) != md5),
                     key=lambda k: (tier(k), k))  # fmt: skip
    puts: list[tuple[str, ...]] = []
    for t in sorted({tier(k) for k in changed}):
        keys = [k for k in changed if tier(k) == t]  # a batch never spans two tiers
        puts += [tuple(keys[i : i + batch]) for i in range(0, len(keys), batch)]
    gone = sorted(k for k in uploaded if k not in local)
    deletes = [tuple(gone[i : i + batch]) for i in range(0, len(gone), batch)]
    return Plan(tuple(puts), tuple(deletes))


@dataclass(frozen=True)
class Entry:
    md5: str
    size: int
    mtime_ns: int  # of the mirror's file when it was uploaded; 0 when learnt from a listing


@dataclass(frozen=True)
class Synced:
    put: int  # objects uploaded
    deleted: int
    unchanged: int  # files of the mirror already in the bucket


_HEADER = "# paperfeeds bucket manifest 1\t"


def read_manifest(path: Path, url: str) -> dict[str, Entry] | None:
    """Return what the manifest says was uploaded to url, or None without one (for
    another URL, or of another version)."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    lines = text.split("\n")
    if lines[0] != _HEADER + url:
        return None
    entries: dict[str, Entry] = {}
    try:
        for line in lines[1:-1]:  # the last is empty, or a line cut short by a kill
            key, md5, *stat = line.split("\t")
            if md5 == "-":
                entries.pop(key, None)
            else:
                size, mtime_ns = stat
                entries[key] = Entry(md5, int(size), int(mtime_ns))
    except ValueError:  # damaged: the bucket's listing says what it holds
        return None
    return entries


class Manifest:
    """The manifest's log, appended to after each batch (and synced: what it says went up
    did)."""

    def __init__(self, path: Path, url: str, entries: Mapping[str, Entry], fresh: bool) -> None:
        self.path, self.url, self.entries = path, url, dict(entries)
        if fresh:
            self.rewrite()

    def record(self, put: Iterable[tuple[str, Entry]] = (), deleted: Iterable[str] = ()) -> None:
        lines = []
        for key, e in put:
            self.entries[key] = e
            lines.append(f"{key}\t{e.md5}\t{e.size}\t{e.mtime_ns}\n")
        for key in deleted:
            self.entries.pop(key, None)
            lines.append(f"{key}\t-\n")
        with self.path.open("a", encoding="utf-8") as f:
            f.write("".join(lines))
            f.flush()
            os.fsync(f.fileno())

    def rewrite(self) -> None:
        """Write the manifest whole (atomically): the log's lines folded."""
        body = "".join(
            f"{k}\t{e.md5}\t{e.size}\t{e.mtime_ns}\n" for k, e in sorted(self.entries.items())
        )
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(f"{_HEADER}{self.url}\n{body}", "utf-8")
        os.replace(tmp, self.path)


def walk(root: Path) -> dict[str, os.stat_result]:
    """Return every file of the mirror by key (`/`-separated), with its stat; dotfiles (a
    publish's temp files, the search index's `.complete.json`) are not the site's."""
    found: dict[str, os.stat_result] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = os.path.relpath(folder, root)
        for name in files:
            if not name.startswith("."):
                key = name if rel == "." else f"{rel}/{name}".replace(os.sep, "/")
                found[key] = os.stat(os.path.join(folder, name))
    return found


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


def local_state(root: Path, known: Mapping[str, Entry]) -> dict[str, Entry]:
    """Return each file of the mirror's MD5, size and mtime; a file whose size and mtime
    are those the manifest knows is not read."""
    out = {}
    for key, st in walk(root).items():
        e = known.get(key)
        if e is not None and e.size == st.st_size and e.mtime_ns == st.st_mtime_ns:
            out[key] = e
        else:
            out[key] = Entry(_md5(root / key), st.st_size, st.st_mtime_ns)
    return out


def from_listing(bucket: Bucket, local: Mapping[str, Entry]) -> dict[str, Entry]:
    """Return a manifest learnt from what the bucket holds: the objects the mirror also
    has, and those in paperfeeds' own folders (to delete if the mirror has them not)."""
    return {
        o.key: Entry(o.etag, o.size, 0)
        for o in bucket.listing()
        if o.key in local or o.key.startswith(MANAGED)
    }


def sync(
    root: Path, url: str, progress: Callable[[str], None] = lambda _m: None,
    bucket: Bucket | None = None,
) -> Synced:  # fmt: skip
    """Upload what changed in the mirror at root to url, then delete what it no longer
    has; return how many objects were put and deleted. Raise PublishError if the bucket
    cannot be reached or written: the manifest keeps what went up, and the next run goes on."""
    if bucket is None:
        from feeds.publish.s3 import Bucket

        bucket = Bucket(url)
    path = root.with_name(root.name + ".tsv")
    known = read_manifest(path, url)
    local = local_state(root, known or {})
    if known is None:
        progress(f"uploading: listing {url}")
        known = from_listing(bucket, local)
    manifest = Manifest(path, url, known, fresh=True)
    todo = plan({k: e.md5 for k, e in local.items()}, {k: e.md5 for k, e in known.items()})
    total, put = sum(map(len, todo.puts)), 0
    with ThreadPoolExecutor(THREADS) as pool:
        for keys in todo.puts:
            progress(f"uploading: {put + 1:,}-{put + len(keys):,} of {total:,} to {url}")

            def upload(key: str) -> None:
                data = (root / key).read_bytes()
                bucket.put(key, data, content_type(key), cache_control(key))

            # list(): the first error is raised here, once the batch's other PUTs ended.
            list(pool.map(upload, keys))
            manifest.record(put=[(k, local[k]) for k in keys])
            put += len(keys)
    deleted = 0
    for keys in todo.deletes:
        progress(f"uploading: deleting {deleted + len(keys):,} objects no longer published")
        bucket.delete(keys)
        manifest.record(deleted=keys)
        deleted += len(keys)
    # Files whose mtime changed but not their content: remembered, so not read next time.
    manifest.entries.update(local)
    manifest.rewrite()
    return Synced(put, deleted, len(local) - put)
