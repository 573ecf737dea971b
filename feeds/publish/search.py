"""Search on the static site: Pagefind's index of the papers and topics, in public/search/.

Pagefind builds the index and answers queries in the browser from static files; its binary
comes with the `pagefind[extended]` package, whose extended build splits Chinese text into
words. Pagefind cannot add to an index it wrote, so the papers are indexed in shards by
arrival order (the state's seq) and the browser merges them at query time (mergeIndex): a
new digest indexes again only the last, small shard, whatever the size of the history.

    search/index.json   what search.js reads: Pagefind's version, the primary index, shards
    search/t-<tag>/     the primary: the topics' index (English), with Pagefind's runtime
                        (pagefind.js, its worker and WebAssembly)
    search/p/<first>-<last>-<tag>/   the papers of seqs first..last, indexed as Chinese
                        (English words are words there too); records.tsv: each paper's id
                        and the fingerprint of what was indexed of it

A folder is written once under a new name; index.json is then switched to the new set and
the folders it no longer names are removed: a browser never reads half an index. A folder
is trusted only with its `.complete.json`, written last, once every file Pagefind wrote
was read back whole (a full disk may cut them short while Pagefind says all went well),
and only while its files are still the ones listed there: any other is indexed again.

Pagefind runs in a child process that ends with the run (see feeds.parallel), its records
staged in a temp folder named with the run's process id: a run that finds the folder of a
run no longer alive (killed with SIGKILL) removes it, and the `.build-*` folders of one.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feeds.errors import FeedsError
from feeds.publish.content import esc

if TYPE_CHECKING:
    from feeds.state import Store
    from feeds.state.records import PaperPage

FORMAT = 1  # of the records and the layout: another format indexes everything again
BIG = 5000  # papers in a shard of the history; ~2 s and ~400 MB of Pagefind's to index
SMALL = 500  # papers in a shard of the newest part, not yet BIG together: ~0.4 s
TIMEOUT = 1800.0  # seconds one Pagefind run may take before it is given up
NOT_FOUND = (
    "Pagefind was not found (install paperfeeds with its dependencies, or set "
    "PAGEFIND_BINARY_PATH): the site is published, and its search page says search is "
    "not available"
)
# What a shard keeps of Pagefind's output: its index alone (the runtime is the primary's).
_INDEX_FILES = ("pagefind-entry.json", "index", "fragment", "filter")
_RUNTIME = ("pagefind.js", "pagefind-worker.js")
COMPLETE = ".complete.json"  # in a folder written whole: each of its files and its size
_STAGING = "paperfeeds-search-"  # + the run's process id + "-": a temp folder of records
_GZIP = (".pf_meta", ".pf_index", ".pf_fragment", ".pf_filter", ".pagefind")


class SearchError(FeedsError):
    """The search index could not be brought up to date (Pagefind failed or was stopped).

    The site is published all the same; the index stays as it was, whole."""


@dataclass(frozen=True)
class Indexed:
    """What an update of the search index did."""

    shards: int = 0  # shards of papers indexed again
    papers: int = 0  # papers indexed (all of those shards')
    topics: bool = False  # the topics' index was written again
    note: str = ""  # why search is not available, when it is not


def shard_ranges(count: int) -> list[tuple[int, int]]:
    """Return the shards of a history of `count` papers: [first, end) ranges of seqs.

    Every BIG papers from the first make a shard that never changes again (unless one of its
    papers does); the rest, the newest, are cut every SMALL, so that a new paper costs at
    most a shard of SMALL to index. Once they add up to BIG they are indexed as one."""
    big = count // BIG
    ranges = [(k * BIG + 1, (k + 1) * BIG + 1) for k in range(big)]
    start = big * BIG + 1
    while start <= count:
        end = min(start + SMALL, count + 1)
        ranges.append((start, end))
        start = end
    return ranges


def paper_record(page: PaperPage) -> bytes:
    """Return what Pagefind indexes of a paper: a small HTML page of its texts (both
    titles, authors, institutions, the AI summary, the abstract, venue and arXiv id), its
    result's title, Chinese title and a line saying where and when it was added."""
    p = page.paper
    texts = [", ".join(p.authors)]
    texts += [f"{i.name} {i.name_zh or ''}".strip() for i in p.institutions]
    texts += [p.summary or "", p.abstract or "", " ".join(filter(None, (p.venue, p.arxiv_id)))]
    texts.append(" ".join(p.categories))
    info = " · ".join(filter(None, (p.venue, f"added {page.first_seen.strftime('%Y-%m-%d')}")))
    body = "".join(f"<p>{esc(t)}</p>" for t in texts if t)
    if p.title_zh:
        body = f'<p data-pagefind-meta="zh">{esc(p.title_zh)}</p>{body}'
    # Meta in an attribute is shown with a result, not searched; Pagefind splits its
    # "key:value" pairs at commas.
    info = esc(info.replace(",", " "))
    html = (
        '<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"></head><body>'
        f'<h1 data-pagefind-meta="title">{esc(p.title)}</h1>{body}'
        f'<span data-pagefind-meta="info:{info}"></span></body></html>'
    )
    return html.encode("utf-8")


def topic_record(title: str, description: str) -> bytes:
    """Return what Pagefind indexes of a topic: its title and description."""
    html = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"></head><body>'
        f'<h1 data-pagefind-meta="title">{esc(title)}</h1><p>{esc(description)}</p>'
        '<span data-pagefind-meta="info:Topic: every paper that matches it"></span>'
        "</body></html>"
    )
    return html.encode("utf-8")


def fingerprint(record: bytes) -> str:
    """Return what tells whether a record changed since it was indexed."""
    return f"{zlib.crc32(record):08x}{len(record):x}"


def pagefind_binary() -> Path | None:
    """Return Pagefind's binary, found where Pagefind's own Python wrapper looks for it
    (PAGEFIND_BINARY_PATH, the pagefind_bin_extended then pagefind_bin package, then
    `pagefind_extended` or `pagefind` on the PATH), or None when there is none that runs.

    Not through the wrapper's own function: importing it loads asyncio (~60 ms of a run
    that adds a digest)."""
    named = os.environ.get("PAGEFIND_BINARY_PATH")
    exe: Path | None = Path(named) if named is not None else None
    if named is None:
        for package in ("pagefind_bin_extended", "pagefind_bin"):
            try:
                exe = Path(importlib.import_module(package).get_executable())
            except (ImportError, OSError, AttributeError):
                continue
            break
        else:
            found = shutil.which("pagefind_extended") or shutil.which("pagefind")
            exe = Path(found) if found else None
    if exe is None or not exe.is_file() or not os.access(exe, os.X_OK):
        return None
    return exe


def _run(cmd: list[str], what: str) -> str:
    from feeds.parallel import ends_with_this_process

    try:
        done = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT,
            check=False, preexec_fn=ends_with_this_process(),
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as e:
        raise SearchError(f"{what}: Pagefind did not run: {e}") from e
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise SearchError(f"{what}: Pagefind failed (exit {done.returncode}): {' '.join(said)}")
    return done.stdout


def _tag(*parts: object) -> str:
    return f"{zlib.crc32(json.dumps(parts).encode()):08x}"


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _files(folder: Path) -> dict[str, int]:
    """Return every file under folder (its completion mark aside): size by relative path."""
    found: dict[str, int] = {}
    for top, _dirs, names in os.walk(folder):
        rel = os.path.relpath(top, folder)
        for name in names:
            if rel != "." or name != COMPLETE:
                size = os.stat(os.path.join(top, name)).st_size
                found[name if rel == "." else f"{rel}/{name}"] = size
    return found


def _whole_gzip(path: Path) -> bool:
    """Return True when a gzip file decompresses to its end (a file cut short does not)."""
    inflate = zlib.decompressobj(31)
    try:
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                inflate.decompress(chunk, 1 << 24)  # what it inflates to is not kept
                while inflate.unconsumed_tail:
                    inflate.decompress(inflate.unconsumed_tail, 1 << 24)
    except (OSError, zlib.error):
        return False
    return inflate.eof


def _seal(folder: Path, name: str, runtime: bool) -> None:
    """Check that Pagefind's output in folder is whole, then mark it complete (last).

    Raise SearchError when it is not: a file cut short or empty, the index its entry file
    names missing, or (`runtime`, the primary) the runtime missing."""
    files = _files(folder)
    problem = ""
    try:
        entry = json.loads((folder / "pagefind-entry.json").read_bytes())
        wanted = [f"pagefind.{lang['hash']}.pf_meta" for lang in entry["languages"].values()]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        problem = "pagefind-entry.json is missing or cut short"
        wanted = []
    wanted += list(_RUNTIME) if runtime else []
    for rel in wanted:
        if not files.get(rel):
            problem = problem or f"{rel} is missing"
    for rel in files:
        if problem:
            break
        if rel.endswith(_GZIP) and not _whole_gzip(folder / rel):
            problem = f"{rel} is cut short"
    if problem:
        raise SearchError(f"search index {name}: {problem} (a full disk?)")
    (folder / COMPLETE).write_text(json.dumps(files, sort_keys=True), "utf-8")


def _complete(folder: Path, deep: bool) -> bool:
    """Return True when folder was sealed and still holds the files it was sealed with, of
    the same sizes: every file when `deep`, else those at its top level (what a browser
    loads first: the entry, the metadata, the runtime), a few stats whatever its size."""
    try:
        sealed = json.loads((folder / COMPLETE).read_bytes())
        if deep:
            return isinstance(sealed, dict) and sealed == _files(folder)
        with os.scandir(folder) as entries:
            top = {e.name: e.stat().st_size for e in entries if e.is_file()}
    except (OSError, ValueError):
        return False
    top.pop(COMPLETE, None)
    if not isinstance(sealed, dict):
        return False
    return top == {rel: size for rel, size in sealed.items() if "/" not in rel}


def _alive(pid: int) -> bool:
    """Return True while a process of that id runs (a zombie has ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: alive as far as we can tell
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _pid_in(name: str, prefix: str) -> int | None:
    """Return the process id in `<prefix><pid>-...`, or None."""
    pid, dash, _rest = name.removeprefix(prefix).partition("-")
    return int(pid) if dash and pid.isdigit() else None


def _listed(folder: Path, prefix: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return [e.name for e in entries if e.name.startswith(prefix)]
    except OSError:
        return []


def remove_leftovers(root: Path, now: float) -> None:
    """Remove what runs that died left: their staging folders in the temp folder (which
    other projects' runs share: only those of a process no longer alive, or, named
    without one by an earlier version, untouched for a day) and the `.build-*` folders
    in root, public/search (any but this process's: the caller holds the state's lock)."""
    temp = Path(tempfile.gettempdir())
    for name in _listed(temp, _STAGING):
        pid = _pid_in(name, _STAGING)
        if pid is None:
            try:
                dead = now - (temp / name).stat().st_mtime > 86400
            except OSError:
                continue
        else:
            dead = not _alive(pid)
        if dead:
            shutil.rmtree(temp / name, ignore_errors=True)
    for name in _listed(root, ".build-"):
        if _pid_in(name, ".build-") != os.getpid():
            shutil.rmtree(root / name, ignore_errors=True)


def _records_of(folder: Path) -> dict[str, str]:
    """Return a shard's records.tsv: fingerprint by paper id ({} when unreadable)."""
    try:
        lines = (folder / "records.tsv").read_text("utf-8").splitlines()
    except OSError:
        return {}
    return dict(line.split("\t", 1) for line in lines if "\t" in line)


class _Builder:
    """Runs Pagefind over staged records, two at a time (it works on one core), each into
    a folder of its own beside the final ones."""

    def __init__(self, exe: Path, root: Path) -> None:
        self.exe = exe
        self.root = root
        self.workers = max(1, min(2, os.cpu_count() or 1))
        self.pool = ThreadPoolExecutor(max_workers=self.workers)
        self.pending: list[Future[str]] = []

    def submit(self, name: str, records: dict[str, bytes], language: str, keep: Sequence[str],
               tsv: str | None) -> Future[str]:  # fmt: skip
        """Stage records (file name: HTML) and index them into root/name; return the
        future of `name`. Waits while two others are being indexed (memory stays bounded)."""
        while sum(not f.done() for f in self.pending) >= self.workers:
            next(f for f in self.pending if not f.done()).exception()  # waits for it
        staging = Path(tempfile.mkdtemp(prefix=f"{_STAGING}{os.getpid()}-"))
        try:
            for rel, data in records.items():
                path = staging / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        future = self.pool.submit(self._index, staging, name, language, keep, tsv)
        self.pending.append(future)
        return future

    def _index(self, staging: Path, name: str, language: str, keep: Sequence[str],
               tsv: str | None) -> str:  # fmt: skip
        final = self.root / name
        build = self.root / f".build-{os.getpid()}-{name.replace('/', '-')}"
        old = self.root / f".build-{os.getpid()}-old-{name.replace('/', '-')}"
        try:
            shutil.rmtree(build, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
            cmd = [str(self.exe), "--site", str(staging), "--output-path", str(build),
                   "--force-language", language, "--silent"]  # fmt: skip
            _run(cmd, f"search index {name}")
            for entry in build.iterdir():  # Pagefind's UI files: search.js draws the results
                if entry.name in keep or entry.name.endswith((".pf_meta", ".pagefind")):
                    continue
                if entry.is_dir():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            if tsv is not None:
                (build / "records.tsv").write_text(tsv, "utf-8")
            _seal(build, name, runtime=_RUNTIME[0] in keep)
            if _complete(final, deep=True):  # the same records indexed before: that one stays
                shutil.rmtree(build)
            elif final.exists():  # the same records, incomplete: replaced, never merged
                os.replace(final, old)
                os.replace(build, final)
            else:
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(build, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(build, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
        return name

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def _pages(store: Store, first: int, end: int) -> Iterator[PaperPage]:
    return store.paper_pages(seqs=(first, end))


def _stale_shards(
    store: Store, root: Path, kept: dict[tuple[int, int], str], changed: Collection[str] | None
) -> set[tuple[int, int]]:
    """Return the kept shards holding a paper whose record is not what was indexed: of the
    changed papers, or (None) of all papers, each shard read through."""

    stale: set[tuple[int, int]] = set()
    if changed is None:
        for (first, end), folder in kept.items():
            indexed = _records_of(root / folder)
            for page in _pages(store, first, end):
                if indexed.get(page.paper.paper_id) != fingerprint(paper_record(page)):
                    stale.add((first, end))
                    break
        return stale
    by_shard: dict[tuple[int, int], list[str]] = {}
    ranges = sorted(kept)
    for pid, seq in store.seqs_of(changed).items():
        for first, end in ranges:  # a few dozen shards, a few changed papers
            if first <= seq < end:
                by_shard.setdefault((first, end), []).append(pid)
                break
    for shard, ids in by_shard.items():
        indexed = _records_of(root / kept[shard])
        for page in store.paper_pages(ids):
            if indexed.get(page.paper.paper_id) != fingerprint(paper_record(page)):
                stale.add(shard)
                break
    return stale


def update_search(
    public: Path,
    store: Store,
    topics: Sequence[tuple[str, str, str]],
    changed: Collection[str] | None,
    progress: Callable[[str], None] = lambda _m: None,
) -> Indexed:
    """Bring public/search/ up to date with the state; return what was indexed.

    `topics`: (page path, title, description) of each reading list. `changed`: the papers
    that changed since the last publish, or None to compare every paper with what was
    indexed (a full build). Raise SearchError when Pagefind fails: the index stays whole
    as it was, and the caller publishes all the same."""
    exe = pagefind_binary()
    if exe is None:
        return Indexed(note=NOT_FOUND)
    version = _run([str(exe), "--version"], "Pagefind's version").split()[-1]
    root = public / "search"
    remove_leftovers(root, time.time())
    old = _read_manifest(root / "index.json") or {}
    same = old.get("format") == FORMAT and old.get("pagefind") == version
    kept: dict[tuple[int, int], str] = {}
    if same:
        # A full build (--repair, or after a failed update) compares every file of each
        # folder; an update the top levels alone, not a fragment a paper.
        for s in old.get("shards", ()):
            if _complete(root / s["dir"], deep=changed is None):
                kept[int(s["first"]), int(s["end"])] = str(s["dir"])
    wanted = shard_ranges(store.paper_count())
    kept = {r: d for r, d in kept.items() if r in wanted}
    todo = [r for r in wanted if r not in kept]
    todo += sorted(_stale_shards(store, root, kept, changed))
    topic_records = {path: topic_record(title, about) for path, title, about in topics}
    prints = sorted((path, fingerprint(record)) for path, record in topic_records.items())
    primary = f"t-{_tag(FORMAT, version, prints)}"
    whole = _complete(root / primary, deep=True)  # a few files: the topics'
    if not todo and same and old.get("primary") == primary and whole:
        return Indexed()
    root.mkdir(parents=True, exist_ok=True)
    builder = _Builder(exe, root)
    dirs = dict(kept)
    papers = 0
    try:
        futures: dict[tuple[int, int], Future[str]] = {}
        for n, (first, end) in enumerate(todo, 1):
            progress(f"search index: papers {first:,}–{end - 1:,} ({n} of {len(todo)})")
            records, lines = {}, []
            for page in _pages(store, first, end):
                record = paper_record(page)
                records[f"papers/{page.paper.paper_id}.html"] = record
                lines.append(f"{page.paper.paper_id}\t{fingerprint(record)}\n")
            tsv = "".join(lines)
            name = f"p/{first}-{end - 1}-{_tag(FORMAT, version, first, end, tsv)}"
            futures[first, end] = builder.submit(name, records, "zh", _INDEX_FILES, tsv)
            papers += len(lines)
        if not whole:
            progress("search index: topics")
            keep = (*_INDEX_FILES, *_RUNTIME)
            builder.submit(primary, topic_records, "en", keep, None).result()
        for shard, future in futures.items():
            dirs[shard] = future.result()
    finally:
        builder.close()
    shards = [{"dir": dirs[r], "first": r[0], "end": r[1]} for r in wanted]
    manifest = {"format": FORMAT, "pagefind": version, "primary": primary, "shards": shards}
    tmp = root / f".index.json.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1) + "\n", "utf-8")
    os.replace(tmp, root / "index.json")
    named = {primary, *(dirs[r] for r in wanted)}
    for folder in [*root.glob("t-*"), *root.glob("p/*")]:
        if folder.relative_to(root).as_posix() not in named:
            shutil.rmtree(folder, ignore_errors=True)
    return Indexed(len(todo), papers, old.get("primary") != primary)
