"""Tuning topics: `feeds check --explain TOPIC` says why each stored paper is in (or kept
out by `none`), a term with a comma is said to be one term, YAML syntax errors are said in
words, `feeds status` forgets rejections that no longer stand, and a schedule under a
minute shows its seconds."""

from __future__ import annotations

import json
import random
import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from feeds.config import Settings, Topic, load_subscriptions
from feeds.errors import ConfigError
from feeds.match.fields import paper_fields
from feeds.match.reference import TopicMatcher
from feeds.match.report import explain_topic
from feeds.model import Hit
from feeds.schedule import in_seconds, say_when
from tests.conftest import ROOT, Workspace, make_workspace
from tests.test_match_equivalence import random_topics, seed_papers

Cli = Callable[..., CompletedProcess[str]]


def y(*lines: str) -> str:
    """Return the YAML text whose line N (1-based) is the N-th argument."""
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A workspace after one `feeds run` over the seeds."""
    from tests.conftest import run_feeds

    ws = make_workspace(tmp_path_factory.mktemp("tuning"))
    r = run_feeds(ws.root, "run", *ws.cli_args())
    assert r.returncode == 0, r.stderr
    return ws


def _check(ws: Workspace, feeds_cli: Cli, subscriptions: Path, *more: str) -> CompletedProcess[str]:
    return feeds_cli(ws.root, "check", "--subscriptions", str(subscriptions),
                     "--state", str(ws.state), *more)  # fmt: skip


# --- a. --explain ----------------------------------------------------------------------------

SPEC = y(
    "topics:",
    "  - id: speculative-decoding",
    "    title: Speculative decoding",
    "    any: [speculative decoding, 推测解码]",
    "    none: [MineDraft]",
)


def test_explain_lists_the_matches_with_why_and_the_papers_none_excluded(
    stored: Workspace, feeds_cli: Cli, tmp_path: Path
) -> None:
    subs = tmp_path / "subscriptions.yaml"
    subs.write_text(SPEC, encoding="utf-8")
    r = _check(stored, feeds_cli, subs, "--explain", "speculative-decoding")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "speculative-decoding: matches 1 paper of 60 stored"
    assert lines[1:3] == [
        "  LK Losses: Direct Acceptance Rate Optimization for Speculative Decoding",
        "      matched: speculative decoding in title; 推测解码 in title, summary",
    ]
    assert lines[3:] == [
        "excluded by its none terms: 1 paper",
        "  MineDraft: A Framework for Batch Parallel Speculative Decoding",
        "      excluded: MineDraft in title, summary",
    ]

    as_json = _check(stored, feeds_cli, subs, "--explain", "speculative-decoding", "--json")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["topic"] == "speculative-decoding"
    assert doc["papers"] == 60
    assert [p["title"][:9] for p in doc["matched"]] == ["LK Losses"]
    (excluded,) = doc["excluded"]
    assert excluded["hits"] == [{"term": "MineDraft", "field": "title"},
                                {"term": "MineDraft", "field": "summary"}]  # fmt: skip
    assert excluded["why"] == "MineDraft in title, summary"


def test_explain_of_an_unknown_topic_is_a_usage_error_with_a_suggestion(
    stored: Workspace, feeds_cli: Cli, tmp_path: Path
) -> None:
    subs = tmp_path / "subscriptions.yaml"
    subs.write_text(SPEC, encoding="utf-8")
    r = _check(stored, feeds_cli, subs, "--explain", "speculative-decodin")
    assert r.returncode == 2
    assert "no topic 'speculative-decodin'" in r.stderr
    assert "did you mean 'speculative-decoding'?" in r.stderr
    assert r.stdout == ""


def test_explain_agrees_with_the_reference_matcher() -> None:
    """What --explain lists is what the straightforward matcher says: the topic's papers
    with their hits; the papers the topic without `none` takes and the topic does not, with
    every none-term found in the topic's fields."""
    papers = seed_papers()
    fields = [paper_fields(p) for p in papers]
    rng = random.Random(7)
    seen_excluded = 0
    for tid, criteria in random_topics(rng, 60):
        words = sorted({w for p in papers[:20] for w in p.title.split()[:3] if w.isalpha()})
        c = replace(criteria, none=(*criteria.none, rng.choice(words)))
        got = explain_topic(Topic(tid, tid, c), iter(papers))
        whole, without = TopicMatcher(c), TopicMatcher(replace(c, none=()))
        matched = [(p.paper_id, whole.match(p, f)) for p, f in zip(papers, fields, strict=True)]
        expected = [(pid, hits) for pid, hits in matched if hits is not None][::-1]
        assert [(p.paper_id, p.hits) for p in got.matched] == expected
        excluded = [
            (p.paper_id, tuple(Hit(t.text, n) for t in whole.none for n in c.fields
                               if t.search(f[n])))
            for p, f in zip(papers, fields, strict=True)
            if without.match(p, f) is not None and whole.match(p, f) is None
        ][::-1]  # fmt: skip
        assert [(p.paper_id, p.hits) for p in got.excluded] == excluded
        seen_excluded += len(excluded)
    assert seen_excluded  # the case was met


# --- b. a comma in a term ----------------------------------------------------------------


def test_a_comma_in_a_term_is_one_term_and_said_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "subscriptions.yaml"
    path.write_text(
        y(
            "topics:",
            "  - id: hallucination",
            "    title: Hallucination",
            "    any: 幻觉, hallucinat*",
            '    none: [a, "b, c"]',
            "  - id: fine",
            "    title: Fine",
            "    any: [幻觉, hallucinat*, '/x{1,3}/']",
            "    institutions: [University of California, Berkeley]",
            "    authors: [Low, Bryan]",
        ),
        encoding="utf-8",
    )
    hallucination, fine = load_subscriptions(path)
    assert hallucination.criteria.any == ("幻觉, hallucinat*",)  # valid: one term
    assert [(w.file, w.line) for w in hallucination.warnings] == [(str(path), 4), (str(path), 5)]
    first, second = (w.message for w in hallucination.warnings)
    assert "'幻觉, hallucinat*' is one term" in first
    assert "[幻觉, hallucinat*]" in first
    assert "'b, c' is one term" in second
    assert "[a, b, c]" in second
    assert fine.warnings == ()  # lists, a regular expression, names that hold commas


def test_check_shows_the_comma_warnings(stored: Workspace, feeds_cli: Cli, tmp_path: Path) -> None:
    subs = tmp_path / "subscriptions.yaml"
    subs.write_text(y("topics:", "  - id: h", "    title: H", "    any: 幻觉, hallucinat*"),
                    encoding="utf-8")  # fmt: skip
    r = _check(stored, feeds_cli, subs)
    assert r.returncode == 0, r.stderr
    assert f"{subs}:4: warning: '幻觉, hallucinat*' is one term" in r.stdout
    doc = json.loads(_check(stored, feeds_cli, subs, "--json").stdout)
    assert doc["warnings"][0].startswith(f"{subs}:4: warning: '幻觉, hallucinat*' is one term")


# --- c. YAML syntax in words ---------------------------------------------------------------

IN_WORDS = [
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any:", "    - x", "   - y"),
        6, "a list item ('- ') at the wrong indentation", "found '<block sequence start>'",
        id="list-item-indentation",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: x", "    - y"),
        5, "a list item ('- ') at the wrong indentation", "found '-'", id="list-item-after-value",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "   any: [x]"),
        4, "a key at the wrong indentation", "expected <block end>", id="key-indentation",
    ),
    pytest.param(
        y("topics:", "  - id: a", "     title: A"),
        3, "this line is indented more than the keys it belongs with", "mapping values",
        id="deeper",
    ),
    pytest.param(
        y("topics:", "  - id: a", "\ttitle: A"),
        3, "a tab; YAML indents with spaces only", "found character '\\t'", id="tab",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", '    any: ["x, y]'),
        4, "a quote opened here is never closed", "noticed at line 5", id="unclosed-quote",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: [x, y", "  - id: b", "    title: B"),
        4, "a list opened with '[' here is not closed with ']'", "noticed at line 5",
        id="unclosed-bracket",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: Position: a paper"),
        3, 'a colon inside a value that is not quoted; put the value in quotes'
        ' (title: "Position: a paper")', "mapping values are not allowed here",
        id="colon-in-value",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: [x]]"),
        4, "a ']' that closes nothing", "found ']'", id="stray-bracket",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: @x"),
        4, "a value cannot start with '@'; put the value in quotes", "cannot start any token",
        id="reserved-character",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", '    any: ["/\\d+B/"]'),
        4, "an unknown backslash escape in double quotes; use single quotes", "character 'd'",
        id="backslash-in-double-quotes",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "line", "words", "detail"), IN_WORDS)
def test_yaml_syntax_errors_are_said_in_words(
    tmp_path: Path, text: str, line: int, words: str, detail: str
) -> None:
    path = tmp_path / "subscriptions.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_subscriptions(path)
    e = info.value
    assert (e.file, e.line) == (str(path), line), e.message
    assert e.message.startswith(f"YAML syntax: {words}"), e.message
    assert "(PyYAML: " in e.message  # the parser's own words stay, as detail
    assert detail in e.message, e.message


# --- d. status forgets rejections that no longer stand ---------------------------------------


def _status(ws: Workspace, feeds_cli: Cli) -> dict[str, Any]:
    r = feeds_cli(ws.root, "status", "--subscriptions", str(ws.subscriptions),
                  "--state", str(ws.state), "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def test_status_drops_rejections_of_files_ingested_whole_or_deleted(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    ws = make_workspace(tmp_path / "ws")
    seeds = sorted(ws.inbox.glob("*.txt"))
    shutil.move(seeds[1], tmp_path / "later.txt")
    half = ws.inbox / "growing.txt"  # read while it was being written: no record in it yet
    half.write_bytes((tmp_path / "later.txt").read_bytes()[:20])
    (ws.inbox / "junk.txt").write_bytes(b"<html><body>Not found</body></html>\n")
    (ws.inbox / "gone.txt").write_bytes(b"\x00\x01\x02 binary\n")
    assert feeds_cli(ws.root, "run", *ws.cli_args()).returncode == 3

    before = _status(ws, feeds_cli)
    names = {Path(r["name"]).name for r in before["rejected_digests"]}
    assert names == {"growing.txt", "junk.txt", "gone.txt"}
    assert before["rejected"] == 3

    shutil.copyfile(tmp_path / "later.txt", half)  # now whole
    (ws.inbox / "gone.txt").unlink()
    r = feeds_cli(ws.root, "run", *ws.cli_args())
    assert r.returncode == 0, r.stderr  # junk.txt is still there, unchanged: not read again
    assert "growing.txt" not in r.stderr

    after = _status(ws, feeds_cli)
    assert [Path(r["name"]).name for r in after["rejected_digests"]] == ["junk.txt"]
    assert after["rejected"] == 1
    assert after["digests"] == 2
    text = feeds_cli(ws.root, "status", "--subscriptions", str(ws.subscriptions),
                     "--state", str(ws.state)).stdout  # fmt: skip
    assert "digests: 2 ingested, 1 rejected" in text
    assert "growing.txt" not in text
    assert "gone.txt" not in text


# --- e. seconds when the schedule is under a minute ------------------------------------------


def test_times_have_seconds_only_when_the_schedule_needs_them() -> None:
    when = datetime(2026, 12, 7, 7, 0, 30, tzinfo=UTC)
    assert say_when(when) == "2026-12-07 07:00 UTC (Mon)"
    assert say_when(when, seconds=True) == "2026-12-07 07:00:30 UTC (Mon)"
    assert in_seconds(Settings(schedule_every=30))
    assert in_seconds(Settings(schedule_every=90))
    assert not in_seconds(Settings(schedule_every=900))
    assert not in_seconds(Settings(schedule_every=None, schedule_cron="0 7 * * *"))


@pytest.mark.parametrize(("every", "shape"), [("30s", r"\d\d:\d\d:\d\d"), ("15m", r"\d\d:\d\d")])
def test_check_shows_seconds_for_a_schedule_under_a_minute(
    stored: Workspace, feeds_cli: Cli, tmp_path: Path, every: str, shape: str
) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"schedule:\n  every: {every}\n", encoding="utf-8")
    r = _check(stored, feeds_cli, ROOT / "config" / "subscriptions.yaml", "--settings",
               str(settings))  # fmt: skip
    assert r.returncode == 0, r.stderr
    times = [x.strip() for x in r.stdout.splitlines() if x.strip().startswith("next: ")]
    assert len(times) == 3
    for line in times:
        assert re.fullmatch(rf"next: \d{{4}}-\d\d-\d\d {shape} UTC \(\w\w\w\)", line), line
