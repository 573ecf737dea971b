"""A run SIGKILLed in the middle of publishing: every file in public/ is still whole, and the
next run finishes the job (public/ then equals a fresh publish from the same state)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import bibtexparser
import pytest
import rispy
from lxml import etree

from tests.conftest import ROOT, Workspace, make_workspace, run_feeds, slow_feeds

SEEDS = sorted((ROOT / "seeds").glob("*.txt"))

USER_FILES = {"CNAME": b"papers.example.org\n", "feeds/README.txt": b"not ours\n"}
PLANTED_TMP = {  # what earlier killed runs may have left: half-written temp files
    ".index.html.k3j2h1.tmp": b"<!doctype html><html><body><p>half",
    "feeds/.all.json.a8s7d6.tmp": b'{"version": "https://jsonfeed.org/version/1.1", "ite',
    "feeds/.all.atom.xml.q1w2e3.tmp": b"<?xml version='1.0'?><feed><entry><title>Hal",
    "papers/.cdea5075e025521a.html.z9x8c7.tmp": b"<html><body>",
    "topics/.icml-2026.html.p0o9i8.tmp": b"",
}


def papers_published(public: Path) -> int:
    return sum(1 for p in (public / "papers").glob("*.html") if not p.name.startswith("."))


def leftovers(public: Path) -> list[str]:
    return sorted(str(p.relative_to(public)) for p in public.rglob("*") if p.name.endswith(".tmp"))


def published_files(public: Path) -> dict[str, bytes]:
    """Return every file paperfeeds published (not temp files, not the user's own files)."""
    return {
        rel: p.read_bytes()
        for p in sorted(public.rglob("*"))
        if p.is_file()
        and not p.name.startswith(".")
        and (rel := str(p.relative_to(public))) not in USER_FILES
    }


def assert_all_whole(public: Path) -> None:
    """Every file under its final name parses: none is half-written."""
    files = published_files(public)
    for rel, data in files.items():
        if rel.endswith((".xml", ".opml", ".svg")):
            etree.fromstring(data)  # raises on a truncated document
        elif rel.endswith(".json"):
            json.loads(data)
        elif rel.endswith(".html"):
            assert data.rstrip().endswith(b"</html>"), f"{rel} is cut short"
        elif rel.endswith(".bib"):  # every entry read back, none cut short
            library = bibtexparser.parse_string(data.decode())
            assert not library.failed_blocks, rel
            starts = sum(1 for line in data.splitlines() if line.startswith(b"@"))
            assert len(library.entries) == starts, rel
        elif rel.endswith(".ris"):
            assert len(rispy.loads(data.decode())) == data.count(b"TY  - "), rel
        else:
            pytest.fail(f"unexpected file in public/: {rel}")
    for name in leftovers(public):  # a temp file is never taken for a feed or a page
        assert Path(name).name.startswith("."), f"{name}: a temp file under a visible name"
        for rel, data in files.items():
            assert Path(name).name.encode() not in data, f"{rel} refers to {name}"


def assert_same_as_a_fresh_publish(ws: Workspace, fresh: Path) -> None:
    """The same state published into an empty folder gives the very same files."""
    args = [
        "--subscriptions", str(ws.subscriptions), "--inbox", str(ws.inbox),
        "--public", str(fresh), "--state", str(ws.state), "--offline",
    ]  # fmt: skip
    r = run_feeds(ws.root, "run", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 new" in r.stdout  # nothing left to ingest: only published again
    recovered, clean = published_files(ws.public), published_files(fresh)
    assert sorted(recovered) == sorted(clean)
    differ = [rel for rel in clean if recovered[rel] != clean[rel]]
    assert not differ, f"differ from a fresh publish: {differ[:5]}"


def run_slowly_and_kill(ws: Workspace, tmp_path: Path, at_least: int) -> int:
    """Start a slowed `feeds run`, SIGKILL it once `at_least` papers are published; return
    how many were published by then."""
    script = slow_feeds(tmp_path, 0.01)
    err = tmp_path / "killed.err"
    with err.open("w") as e:
        proc = subprocess.Popen(
            [sys.executable, str(script), "run", *ws.cli_args()],
            cwd=ws.root,
            stdout=subprocess.DEVNULL,
            stderr=e,
        )
    try:
        deadline = time.monotonic() + 20
        while papers_published(ws.public) < at_least:
            assert proc.poll() is None, f"the run ended first:\n{err.read_text()}"
            assert time.monotonic() < deadline, "publishing never got under way"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return papers_published(ws.public)


@pytest.mark.parametrize("earlier", [False, True], ids=["first-publish", "update"])
def test_sigkill_mid_publish_leaves_whole_files_and_the_next_run_finishes(
    tmp_path: Path, earlier: bool
) -> None:
    ws = make_workspace(tmp_path / "ws")
    if earlier:  # public/ already holds one digest's feeds; the killed run adds the other
        held = tmp_path / "held"
        held.mkdir()
        shutil.move(ws.inbox / SEEDS[1].name, held / SEEDS[1].name)
        r = run_feeds(ws.root, "run", *ws.cli_args())
        assert r.returncode == 0, r.stderr
        shutil.move(held / SEEDS[1].name, ws.inbox / SEEDS[1].name)
    before = papers_published(ws.public)
    killed_at = run_slowly_and_kill(ws, tmp_path, at_least=before + 3)
    assert killed_at < 60, "the run finished before it was killed: slow publishing down more"
    assert_all_whole(ws.public)

    for rel, data in {**USER_FILES, **PLANTED_TMP}.items():
        (ws.public / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.public / rel).write_bytes(data)
    assert_all_whole(ws.public)

    r = run_feeds(ws.root, "run", *ws.cli_args())
    assert r.returncode == 0, r.stdout + r.stderr
    assert leftovers(ws.public) == [], "temp files of killed runs were left behind"
    for rel, data in USER_FILES.items():  # files paperfeeds does not own are kept
        assert (ws.public / rel).read_bytes() == data
    assert_all_whole(ws.public)
    assert (ws.public / "index.html").is_file()

    items = json.loads((ws.public / "feeds" / "all.json").read_bytes())["items"]
    ids = [item["_paperfeeds"]["paper_id"] for item in items]
    assert len(ids) == len(set(ids)) == 60
    for pid in ids:
        assert (ws.public / "papers" / f"{pid}.html").is_file()
    assert papers_published(ws.public) == 60

    assert_same_as_a_fresh_publish(ws, tmp_path / "fresh")


def test_unwritable_public_is_a_clear_error_and_the_next_run_finishes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    held = tmp_path / "held"
    held.mkdir()
    shutil.move(ws.inbox / SEEDS[1].name, held / SEEDS[1].name)
    r = run_feeds(ws.root, "run", *ws.cli_args())
    assert r.returncode == 0, r.stderr
    before = published_files(ws.public)

    # The all-papers feed cannot be replaced (a folder stands where it goes), so publishing
    # the second digest fails part-way.
    blocked = ws.public / "feeds" / "all.json"
    blocked.unlink()
    blocked.mkdir()
    shutil.move(held / SEEDS[1].name, ws.inbox / SEEDS[1].name)
    r = run_feeds(ws.root, "run", *ws.cli_args())
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: cannot write {ws.public / 'feeds' / 'all.json'}: Is a directory"
    ), r.stderr
    assert "Traceback" not in r.stderr
    assert leftovers(ws.public) == []
    assert_all_whole(ws.public)
    now = published_files(ws.public)
    old_pages = [rel for rel in before if rel.startswith("papers/")]
    assert old_pages
    assert all(now[rel] == before[rel] for rel in old_pages)

    blocked.rmdir()
    r = run_feeds(ws.root, "run", *ws.cli_args())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 new" in r.stdout  # ingested by the failed run; only its publishing was missing
    assert papers_published(ws.public) == 60
    assert_same_as_a_fresh_publish(ws, tmp_path / "fresh")
