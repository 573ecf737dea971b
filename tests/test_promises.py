"""Promises a run keeps about what it publishes and says: citation keys given once and
kept; a revised English title is the same paper; a run tells the truth about what it read
and about a config that can publish nothing."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess

import feedparser
import pytest

from feeds.config import load
from feeds.pipeline import run
from tests.conftest import Workspace, offline

Cli = Callable[..., CompletedProcess[str]]
T0 = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)


def _record(title: str, zh: str, authors: str, summary: str) -> str:
    return f"{title}\n\n{zh}\n\n{authors}\n\nAI总结 {summary}\n"


def _digest(*records: str) -> str:
    return "ICML\n\n" + "\n".join(records)


def _project(root: Path, topics: str) -> Workspace:
    inbox = root / "inbox"
    inbox.mkdir(parents=True)
    (root / "config").mkdir()
    subscriptions = root / "config" / "subscriptions.yaml"
    subscriptions.write_text(topics, encoding="utf-8")
    return Workspace(root, inbox, subscriptions, root / "public", root / "state.sqlite3")


def _run(ws: Workspace, when: datetime) -> None:
    config = offline(ws.config())
    run(config, now=lambda: when)


SPECULATIVE = """\
topics:
  - id: spec
    title: Speculative
    any: [speculative]
"""


def _keys(text: str, fmt: str) -> dict[str, str]:
    """Return paper page URL -> citation key, for a BibTeX or RIS file."""
    found: dict[str, str] = {}
    if fmt == "bib":
        for entry in text.split("\n\n"):
            key = re.search(r"^@\w+\{([^,]+),", entry, re.MULTILINE)
            url = re.search(r"papers/([0-9a-f]+)\.html", entry)
            if key and url:
                found[url.group(1)] = key.group(1)
    else:
        for entry in text.split("ER  - "):
            key = re.search(r"^ID  - (.+)$", entry, re.MULTILINE)
            url = re.search(r"papers/([0-9a-f]+)\.html", entry)
            if key and url:
                found[url.group(1)] = key.group(1)
    return found


def _all_keys(public: Path) -> dict[str, dict[str, str]]:
    return {
        f"{topic}.{fmt}": _keys((public / "topics" / f"{topic}.{fmt}").read_text("utf-8"), fmt)
        for topic in ("all", "spec")
        for fmt in ("bib", "ris")
    }


def test_citation_keys_are_given_once_and_kept_through_a_rebuild(tmp_path: Path) -> None:
    ws = _project(tmp_path / "p", SPECULATIVE)
    smith = "Ann Smith, Bo Li"
    first = [
        _record(f"Speculative work number {i}", f"推测工作第{i}号", smith, f"推测解码研究{i}。")
        for i in range(28)
    ]
    (ws.inbox / "a.txt").write_text(_digest(*first), encoding="utf-8")
    _run(ws, T0)
    later = [
        _record(f"Speculative later work {i}", f"推测后续工作{i}", smith, f"推测解码后续{i}。")
        for i in range(5)
    ]
    # And one paper of the first digest again, with a code link now: it changed.
    code = "推测解码研究3。\n\nComments Code: github.com/ann/spec3"
    again = first[3].replace("推测解码研究3。", code)
    (ws.inbox / "b.txt").write_text(_digest(again, *later), encoding="utf-8")
    _run(ws, T0 + timedelta(days=1))
    incremental = _all_keys(ws.public)
    shutil.rmtree(ws.public)
    _run(ws, T0 + timedelta(days=2))
    rebuilt = _all_keys(ws.public)
    assert rebuilt == incremental  # each paper keeps the key it was given
    every = incremental["all.bib"]
    assert len(every) == 33
    assert len(set(every.values())) == 33  # unique
    for name, keys in incremental.items():  # a paper has one key, whatever the file
        assert all(every[pid] == key for pid, key in keys.items()), name
    page = (ws.public / "papers" / f"{next(iter(every))}.html").read_text("utf-8")
    assert f"{{{every[next(iter(every))]}," in page  # the page's BibTeX: the same key


def test_a_revised_english_title_is_the_same_paper_under_its_new_title(tmp_path: Path) -> None:
    ws = _project(tmp_path / "p", SPECULATIVE)
    old = _record("Speculative Decoding with Tiny Drafts", "用微型草稿模型的推测解码",
                  "Ann Smith, Bo Li", "提出微型草稿模型。")  # fmt: skip
    (ws.inbox / "a.txt").write_text(_digest(old), encoding="utf-8")
    _run(ws, T0)
    [page] = (ws.public / "papers").glob("*.html")
    key = _keys((ws.public / "topics" / "all.bib").read_text("utf-8"), "bib")
    new = _record("Speculative Decoding with Very Small Draft Models", "用微型草稿模型的推测解码",
                  "Bo Li, Ann Smith", "提出微型草稿模型。")  # fmt: skip
    (ws.inbox / "b.txt").write_text(_digest(new), encoding="utf-8")
    _run(ws, T0 + timedelta(days=1))
    assert [p.name for p in (ws.public / "papers").glob("*.html")] == [page.name]  # its id
    assert "Very Small Draft Models" in page.read_text("utf-8")  # the newer title
    feed = (ws.public / "feeds" / "spec.rss.xml").read_text("utf-8")
    assert feed.count("<item>") == 1
    assert "Very Small Draft Models" in feed
    assert _keys((ws.public / "topics" / "all.bib").read_text("utf-8"), "bib") == key


def test_a_different_paper_with_the_same_chinese_title_stays_apart(tmp_path: Path) -> None:
    ws = _project(tmp_path / "p", SPECULATIVE)
    one = _record("Speculative Decoding A", "推测解码", "Ann Smith", "一。")
    two = _record("Speculative Decoding B", "推测解码", "Carl Jones", "二。")
    (ws.inbox / "a.txt").write_text(_digest(one), encoding="utf-8")
    _run(ws, T0)
    (ws.inbox / "b.txt").write_text(_digest(two), encoding="utf-8")
    _run(ws, T0 + timedelta(days=1))
    assert len(list((ws.public / "papers").glob("*.html"))) == 2


def test_a_run_counts_contents_and_tells_rejected_files_apart(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    first = next(iter(sorted(workspace.inbox.glob("*.txt"))))
    shutil.copy(first, workspace.inbox / "copy-of-the-first.txt")  # the same content again
    (workspace.inbox / "broken.txt").write_bytes(b"\x00\x01\x02 not a digest")
    args = ["run", *workspace.cli_args()]
    once = feeds_cli(workspace.root, *args)
    assert once.returncode == 3, once.stderr
    assert "digests: 2 new, 1 already ingested, 1 rejected\n" in once.stdout
    again = feeds_cli(workspace.root, *args)
    assert again.returncode == 0, again.stderr
    assert "digests: 0 new, 2 already ingested, 0 rejected (1 rejected before)\n" in again.stdout


def test_a_run_with_no_topics_or_nothing_to_read_says_so(tmp_path: Path, feeds_cli: Cli) -> None:
    ws = _project(tmp_path / "p", "topics: []\n")
    r = feeds_cli(ws.root, "run", *ws.cli_args())
    assert r.returncode == 0, r.stderr
    assert "subscriptions.yaml has no topics: only the all-papers feed is published" in r.stderr
    assert "nothing to read: no digest file in the inbox" in r.stderr
    assert "`feeds init` writes an example" in r.stderr
    checked = feeds_cli(ws.root, "check", "--subscriptions", str(ws.subscriptions))
    assert "subscriptions.yaml: warning: no topics: add one" in checked.stdout + checked.stderr


def test_init_writes_an_example_digest_that_a_first_run_publishes(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    made = feeds_cli(tmp_path, "init")
    assert made.returncode == 0, made.stderr
    assert "example-digest.txt" in made.stdout
    r = feeds_cli(tmp_path, "run", "--offline")
    assert r.returncode == 0, r.stderr
    assert "papers: 5 new" in r.stdout
    assert "warning" not in r.stderr
    config = load(tmp_path / "config" / "subscriptions.yaml", tmp_path / "config" / "settings.yaml")
    assert config.topics  # the example topics


def test_the_opml_title_is_the_site_title(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    ws = _project(tmp_path / "p", SPECULATIVE)
    settings = ws.root / "config" / "settings.yaml"
    settings.write_text("site:\n  title: My ML paper feeds\n", encoding="utf-8")
    run(offline(ws.config(settings=settings)), now=lambda: T0)
    head = ET.parse(ws.public / "feeds.opml").getroot().find("head")
    assert head is not None
    assert head.findtext("title") == "My ML paper feeds"


def test_a_damaged_published_file_is_written_anew_not_built_upon(workspace: Workspace) -> None:
    config = workspace.config()
    run(config, now=lambda: T0)
    feeds = workspace.public / "feeds"
    spec_json = feeds / "speculative-decoding.json"
    spec_atom = feeds / "speculative-decoding.atom.xml"
    spec_bib = workspace.public / "topics" / "speculative-decoding.bib"
    # Damaged by hand, a disk or a sync tool, inside an item a new paper would keep: an
    # unescaped quote, an unclosed tag, an entry cut short.
    text = spec_json.read_text("utf-8")
    at = text.index('"content_html": "', text.index('"content_html": "') + 1) + 17
    spec_json.write_text(text[:at] + 'say "hi' + text[at:], encoding="utf-8")
    atom = spec_atom.read_text("utf-8")
    at = atom.index("<content", atom.index("<content") + 1)
    spec_atom.write_text(atom[:at] + "<unclosed>" + atom[at:], encoding="utf-8")
    bib = spec_bib.read_text("utf-8")
    spec_bib.write_text(bib.replace("booktitle = {", "booktitle = {{", 1), encoding="utf-8")
    (workspace.inbox / "later.txt").write_text(
        _digest(
            _record(
                "A Later Paper on Speculative Decoding",
                "推测解码的后续论文",
                "Ann Bell, Bo Chen",
                "又一篇推测解码论文。",
            )
        ),
        encoding="utf-8",
    )
    run(config, now=lambda: T0 + timedelta(hours=1))
    doc = json.loads(spec_json.read_text("utf-8"))  # valid again
    assert doc["items"][0]["title"] == "A Later Paper on Speculative Decoding"
    parsed = feedparser.parse(spec_atom.read_bytes())
    assert not parsed.bozo, parsed.bozo_exception
    assert parsed.entries[0].title == "A Later Paper on Speculative Decoding"
    assert "booktitle = {{" not in spec_bib.read_text("utf-8")
    assert spec_bib.read_text("utf-8").count("@") == len(doc["items"])
    # And what it wrote is what the same state gives in an empty folder.
    fresh = workspace.root / "fresh"
    s = config.settings
    run(replace(config, settings=replace(s, public_dir=fresh)), now=lambda: T0 + timedelta(hours=2))
    for path in (spec_json, spec_atom, spec_bib):
        assert path.read_bytes() == (fresh / path.relative_to(workspace.public)).read_bytes()


def test_watch_says_each_summary_line_with_its_time(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    from feeds.cli.run import print_summary

    config = workspace.config()
    summary = run(config, now=lambda: T0)
    print_summary(summary, config, quiet=False, offline=True, timed=True)
    out = capsys.readouterr()
    lines = (out.out + out.err).splitlines()
    assert len(lines) >= 5
    assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d ", line) for line in lines), lines
    print_summary(summary, config, quiet=False, offline=True)  # `feeds run`: as before
    assert capsys.readouterr().out.startswith("digests: ")


def test_a_trailing_star_on_a_chinese_term_is_a_prefix_as_on_any_term(tmp_path: Path) -> None:
    ws = _project(tmp_path / "p", "topics:\n  - id: zh\n    title: ZH\n    any: [推测*]\n")
    (ws.inbox / "a.txt").write_text(
        _digest(_record("Drafts and Checks", "推测解码的新方法", "Ann Smith", "一种方法。")),
        encoding="utf-8",
    )
    _run(ws, T0)
    feed = json.loads((ws.public / "feeds" / "zh.json").read_text("utf-8"))
    assert [i["title"] for i in feed["items"]] == ["Drafts and Checks"]


def test_every_unknown_example_is_an_error_line_of_its_own(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    ran = feeds_cli(workspace.root, "run", *workspace.cli_args())
    assert ran.returncode == 0, ran.stderr
    workspace.subscriptions.write_text(
        "topics:\n  - id: bad\n    title: Bad\n    like:\n"
        "      - arXiv:2612.99999\n      - doi:10.9999/nothing\n",
        encoding="utf-8",
    )
    r = feeds_cli(workspace.root, "run", *workspace.cli_args())
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert [line.split(": topic 'bad': ")[0].rsplit(":", 1)[1] for line in lines] == ["5", "6"]
    assert all(line.startswith("error: ") for line in lines), lines
