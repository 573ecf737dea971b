"""The search index (SPEC.md, "The site"): Pagefind's, sharded by arrival order and kept up
to date for the papers that changed only; never a reason for a run to fail. These run the
real Pagefind binary (no browser: tests/test_browser.py searches in Chromium)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feeds.model import Institution, Link, Paper
from feeds.pipeline import run
from feeds.publish import search
from feeds.publish.search import paper_fingerprint, paper_records, shard_ranges
from feeds.state import Store
from feeds.state.records import PaperPage
from tests.conftest import Workspace, pagefind_env

T0 = datetime(2026, 12, 4, 7, 0, tzinfo=UTC)


@pytest.mark.parametrize("count", [0, 1, 499, 500, 501, 4999, 5000, 5001, 12345])
def test_shards_cover_the_history_once_and_big_ones_stay_put(count: int) -> None:
    ranges = shard_ranges(count)
    assert [r[0] for r in ranges] == [1, *(r[1] for r in ranges[:-1])][: len(ranges)]
    assert (ranges[-1][1] if ranges else 1) == count + 1
    assert all(end - first <= search.BIG for first, end in ranges)
    tail = [r for r in ranges if r[1] - r[0] != search.BIG]
    assert all(end - first <= search.SMALL for first, end in tail)
    assert len(tail) <= search.BIG // search.SMALL
    # A shard of BIG papers is the same however many papers come after it.
    bigs = [r for r in ranges if r[1] - r[0] == search.BIG]
    assert bigs == [r for r in shard_ranges(count + 777) if r[1] <= count + 1][: len(bigs)]


PAPER = Paper(
    "p1",
    'Fast & <b>Bold</b> "Attention"',
    title_zh="快速 & <i>注意力</i>",
    authors=("Ann Lee", "Bo Li"),
    institutions=(Institution("KAIST", "韩国科学技术院"),),
    summary="<script>alert(1)</script> 一种推测解码方法",
    abstract="We draft, then verify.",
    venue="ICML, 2026",
    arxiv_id="2501.00001",
)


def _page(paper: Paper = PAPER, links: tuple[Link, ...] = ()) -> PaperPage:
    return PaperPage(paper, T0, links, [])


def test_a_paper_has_an_english_and_a_chinese_record_escaped() -> None:
    english, chinese = (record.decode() for record in paper_records(_page().paper))
    assert english.startswith('<!DOCTYPE html><html lang="en">')
    assert chinese.startswith('<!DOCTYPE html><html lang="zh">')
    for record in (english, chinese):
        assert "<script>" not in record
        assert "<b>" not in record
        # Shown with a result and searched, never quoted as its line: kept out of the body.
        assert (
            '<div data-pagefind-ignore><p data-pagefind-meta="title">'
            "Fast &amp; &lt;b&gt;Bold&lt;/b&gt; &#34;Attention&#34;</p>"
        ) in record
        assert '<p data-pagefind-meta="authors">Ann Lee, Bo Li</p>' in record  # commas kept
        assert '<p data-pagefind-meta="venue">ICML, 2026</p>' in record
        assert "added" not in record  # metadata is searched: no word every paper has
    # The line a result quotes: the English record's abstract, the Chinese one's summary
    # (its title and institutions follow, to be searched as Chinese words).
    assert english.endswith("</div><p>We draft, then verify.</p></body></html>")
    assert '<p data-pagefind-meta="more">KAIST 2501.00001</p>' in english
    body = chinese.split("</div>", 1)[1]
    assert body == (
        "<p>&lt;script&gt;alert(1)&lt;/script&gt; 一种推测解码方法</p>"
        '<h2 id="more">·</h2><p>快速 &amp; &lt;i&gt;注意力&lt;/i&gt;</p><p>韩国科学技术院</p>'
        "</body></html>"
    )


def test_a_paper_without_chinese_text_has_an_english_record_alone() -> None:
    plain = replace(PAPER, title_zh=None, summary=None, institutions=(Institution("KAIST"),))
    (english,) = paper_records(_page(plain).paper)
    assert english.decode().endswith("</div><p>We draft, then verify.</p></body></html>")
    # No abstract nor summary: its title is the body (Pagefind skips an empty page).
    (bare,) = paper_records(_page(replace(plain, abstract=None)).paper)
    assert bare.decode().endswith(
        "</div><p>Fast &amp; &lt;b&gt;Bold&lt;/b&gt; &#34;Attention&#34;</p></body></html>"
    )


def test_only_what_is_searched_changes_a_record() -> None:
    before = paper_fingerprint(_page().paper)
    linked = (Link("https://github.com/o/r", "code", status="dead"),)
    assert paper_fingerprint(_page(links=linked).paper) == before  # link checks: no
    changed = replace(PAPER, abstract="We draft, then verify, faster.")
    assert paper_fingerprint(_page(changed).paper) != before
    assert paper_fingerprint(_page(replace(PAPER, summary="另一种方法")).paper) != before


# --- the index kept up to date, with the real Pagefind --------------------------------------

NEW_DIGEST = """ICML

Faster Cascades via Speculative Decoding

通过推测解码实现更快的级联

Harikrishna Narasimhan, Wittawat Jitkrittum

AI总结 将级联与推测解码结合，在保持质量的同时降低推理成本。

Comments Accepted at ICLR 2025
"""

# A seed paper again, now with the institutions it lacked: its text changes, and so does
# its shard's index (a link alone would not change it).
MORE_ABOUT_AN_OLD_PAPER = """ICML

A Hypertoroidal Covering for Perfect Color Equivariance

完美颜色等变的超环面覆盖

Yulong Yang, Zhikun Xu, Yaojun Li, Christine Allen-Blanchette

机构 * Princeton University（普林斯顿大学） 纠错

AI总结 一种颜色等变架构。

Comments Code: https://github.com/example/hypertoroidal
"""


@pytest.fixture
def small_shards(monkeypatch: pytest.MonkeyPatch, with_pagefind: None) -> None:
    """Shards of 20 papers, and of 5 for the newest: the seeds' 60 make several."""
    monkeypatch.setattr(search, "BIG", 20)
    monkeypatch.setattr(search, "SMALL", 5)


def _manifest(ws: Workspace) -> dict:  # type: ignore[type-arg]
    return json.loads((ws.public / "search" / "index.json").read_text("utf-8"))


def _indexed(ws: Workspace) -> dict[str, str]:
    return {s["dir"]: s for s in _manifest(ws)["shards"]}  # type: ignore[misc]


def test_a_new_digest_indexes_the_newest_shard_alone(workspace: Workspace, small_shards) -> None:
    config = workspace.config()
    first = run(config, now=lambda: T0)
    assert first.files.search == ""
    manifest = _manifest(workspace)
    assert [(s["first"], s["end"]) for s in manifest["shards"]] == [(1, 21), (21, 41), (41, 61)]
    # Each shard holds an index per language, which the browser merges one by one.
    assert all(s["languages"] == ["en", "zh"] for s in manifest["shards"])
    for shard in manifest["shards"]:
        entry = json.loads(
            (workspace.public / "search" / shard["dir"] / "pagefind-entry.json").read_text()
        )
        assert {lang: i["page_count"] for lang, i in entry["languages"].items()} == {
            "en": 20,
            "zh": 20,
        }
    root = workspace.public / "search"
    assert (root / manifest["primary"] / "pagefind.js").is_file()
    before = set(_indexed(workspace))

    (workspace.inbox / "zz_new.txt").write_text(NEW_DIGEST, "utf-8")
    run(config, now=lambda: T0 + timedelta(days=1))
    after = _indexed(workspace)
    assert set(after) - before == {next(d for d in after if d.startswith("p/61-"))}
    assert before <= set(after)  # the first sixty papers were not indexed again
    assert sorted(p.name for p in (root / "p").iterdir()) == sorted(
        d.removeprefix("p/") for d in after
    )  # nothing left behind

    # Nothing new: nothing indexed, nothing rewritten.
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    run(config, now=lambda: T0 + timedelta(days=2))
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == stamps

    # An old paper's text changes: its shard alone is indexed again.
    (workspace.inbox / "zz_more.txt").write_text(MORE_ABOUT_AN_OLD_PAPER, "utf-8")
    run(config, now=lambda: T0 + timedelta(days=3))
    again = _indexed(workspace)
    assert len(set(again) - set(after)) == 1
    changed = next(iter(set(again) - set(after)))
    store = Store(workspace.state, T0)
    try:
        (paper,) = [p for p in store.papers() if p.title.startswith("A Hypertoroidal")]

        seq = store.seqs_of([paper.paper_id])[paper.paper_id]
    finally:
        store.close()
    shard = again[changed]
    assert shard["first"] <= seq < shard["end"]  # type: ignore[operator]
    assert paper.paper_id in (root / changed / "records.tsv").read_text()


def test_a_lost_index_is_built_again_whole(workspace: Workspace, small_shards) -> None:
    config = workspace.config()
    run(config, now=lambda: T0)
    dirs = set(_indexed(workspace))
    import shutil

    shutil.rmtree(workspace.public / "search")
    run(config, now=lambda: T0 + timedelta(hours=1), repair=True)
    assert set(_indexed(workspace)) == dirs  # the same records give the same folders


def test_without_pagefind_the_site_is_published_and_says_so(workspace: Workspace) -> None:
    summary = run(workspace.config(), now=lambda: T0)  # the suite has no Pagefind
    assert summary.exit_code == 0
    assert "Pagefind was not found" in summary.files.search
    assert not (workspace.public / "search").exists()
    page = (workspace.public / "search.html").read_text("utf-8")
    assert "is not available" in page  # said by its script when the index is missing


def test_a_failing_pagefind_never_fails_a_run_and_is_retried(
    workspace: Workspace, small_shards, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    broken = tmp_path / "pagefind"
    broken.write_text("#!/bin/sh\necho 'pagefind 1.5.2'\n[ \"$1\" = --version ] || exit 3\n")
    broken.chmod(0o755)
    real = os.environ.get("PAGEFIND_BINARY_PATH")
    monkeypatch.setenv("PAGEFIND_BINARY_PATH", str(broken))
    summary = run(workspace.config(), now=lambda: T0)
    assert summary.exit_code == 0
    assert summary.files.search.startswith("the search index was not updated")
    assert (workspace.public / "index.html").is_file()
    # Pagefind works again: the next run compares the whole index with the state, although
    # nothing else is new.
    if real is None:
        monkeypatch.delenv("PAGEFIND_BINARY_PATH")
    else:
        monkeypatch.setenv("PAGEFIND_BINARY_PATH", real)
    again = run(workspace.config(), now=lambda: T0 + timedelta(hours=1))
    assert again.files.search == ""
    assert len(_indexed(workspace)) == 3


def test_a_run_with_nothing_new_does_not_load_search(workspace: Workspace) -> None:
    args = ["-m", "feeds", "run", *workspace.cli_args(), "-q"]
    env = pagefind_env()
    assert subprocess.run([sys.executable, *args], env=env, check=False).returncode == 0
    probe = (
        "import sys\nfrom feeds.cli import cli\n"
        f"try:\n    cli({args[3:]!r})\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if 'pagefind' in m or m.endswith('.search')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()  # fmt: skip
    assert out == "[]"


def test_an_update_stopped_by_a_failed_publish_names_nothing(
    workspace: Workspace, small_shards
) -> None:
    run(workspace.config(), now=lambda: T0)
    import shutil

    root = workspace.public / "search"
    shutil.rmtree(root)
    store = Store(workspace.state, T0)
    try:
        with (
            pytest.raises(RuntimeError),
            search.Update(workspace.public, store, [("topics/all.html", "All papers", "")], None),
        ):
            raise RuntimeError("the publishing failed")  # Pagefind is stopped
    finally:
        store.close()
    assert not (root / "index.json").exists()
    assert not list(root.glob(".build-*"))
    # A shard indexed before the stop stays, whole (sealed), for the next run to keep.
    assert all((d / search.COMPLETE).is_file() for d in root.glob("p/*"))


def test_an_index_of_two_languages_is_the_same_files_each_time(tmp_path: Path) -> None:
    # Pagefind lists the languages of an index in no fixed order (one build in a few put
    # "en" first): written in order, the same records give the same bytes.
    from feeds.publish.pagefind import _write

    languages = {"zh": {"hash": "zh_1", "page_count": 2}, "en": {"hash": "en_1", "page_count": 2}}
    entry = {"version": "1.5.2", "languages": languages, "include_characters": ["_", "‿"]}
    content = base64.b64encode(json.dumps(entry).encode()).decode()
    _write(tmp_path, [{"path": "pagefind-entry.json", "content": content}], lambda _rel: True)
    written = (tmp_path / "pagefind-entry.json").read_text("utf-8")
    assert written == (
        '{"version":"1.5.2","languages":{"en":{"hash":"en_1","page_count":2},'
        '"zh":{"hash":"zh_1","page_count":2}},"include_characters":["_","‿"]}'
    )


def test_records_reach_pagefind_in_memory(
    workspace: Workspace, small_shards, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    run(workspace.config(), now=lambda: T0)
    assert len(_indexed(workspace)) == 3
    assert list(temp.iterdir()) == []  # its working folders removed, no record staged


def test_a_record_that_cannot_be_made_stops_its_pagefind_and_is_raised(
    workspace: Workspace, small_shards, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Records are made as Pagefind reads them, on its sender's thread: an error there
    # must end that Pagefind (not leave it waiting for the rest) and reach the caller.
    run(workspace.config(), now=lambda: T0)
    import shutil

    root = workspace.public / "search"
    shutil.rmtree(root)
    made = 0

    def records(paper: Paper) -> tuple[bytes, ...]:
        nonlocal made
        made += 1
        if made == 27:  # after some records were sent (the shards are made side by side)
            raise RuntimeError("a record that cannot be made")
        return paper_records(paper)

    monkeypatch.setattr(search, "paper_records", records)
    store = Store(workspace.state, T0)
    try:
        update = search.Update(workspace.public, store, [("topics/all.html", "All", "")], None)
        with pytest.raises(RuntimeError, match="cannot be made"):
            update.finish()
    finally:
        store.close()
    assert update.builder is not None
    assert not update.builder.running  # its Pagefind ended
    assert not (root / "index.json").exists()
    assert not list(root.glob(".build-*"))
