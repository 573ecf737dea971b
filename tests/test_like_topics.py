"""Topics by example (`like:`, `unlike:`, `min_similarity:`) through whole runs on the seeds:
what they take, how items explain it, what `feeds check` shows, mistakes, and that
decisions made when a paper enters do not flap on later runs."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess

import feedparser
import pytest

from feeds.errors import ConfigError
from feeds.pipeline import run
from tests.conftest import Workspace

Cli = Callable[..., CompletedProcess[str]]
T0 = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)
MINEDRAFT = "MineDraft: A Framework for Batch Parallel Speculative Decoding"
LK = "LK Losses: Direct Acceptance Rate Optimization for Speculative Decoding"
DAPD = "DAPD: Dependency-Aware Parallel Decoding via Attention for Diffusion LLMs"


def _topics(ws: Workspace, *topics: str) -> Path:
    ws.subscriptions.write_text("topics:\n" + "".join(topics), encoding="utf-8")
    return ws.subscriptions


def _titles(ws: Workspace, topic: str) -> dict[str, str]:
    """Return the topic's Atom entries: title -> the item's `matched:` line."""
    feed = feedparser.parse(ws.public / "feeds" / f"{topic}.atom.xml")
    out = {}
    for e in feed.entries:
        found = re.search(r"matched: ([^<]*)", e.content[0].value)
        out[e.title] = found.group(1) if found else ""
    return out


BY_EXAMPLE = f"""\
  - id: spec
    title: Speculative decoding, by example
    like: ["{MINEDRAFT}", "{LK.lower()}"]
"""
BY_DESCRIPTION = """\
  - id: spec-zh
    title: 推测解码
    like: [推测解码的草稿与验证]
"""


def test_two_papers_find_their_kind_and_items_say_which_and_how_much(
    workspace: Workspace,
) -> None:
    _topics(workspace, BY_EXAMPLE, BY_DESCRIPTION)
    summary = run(workspace.config(), now=lambda: T0)
    assert summary.new_matches == {"spec": 3, "spec-zh": 2}
    spec = _titles(workspace, "spec")
    assert set(spec) == {MINEDRAFT, LK, DAPD}  # a title names its paper, case aside
    assert spec[MINEDRAFT].startswith("similar to MineDraft (1.00): ")
    # The words that weighed most, Chinese bigrams said as the word they make.
    assert re.fullmatch(r"similar to MineDraft \(0\.1\d\): [^,]+(, [^,]+){0,2}", spec[DAPD])
    zh = _titles(workspace, "spec-zh")
    assert set(zh) == {MINEDRAFT, LK}  # a description in Chinese finds them too
    assert re.fullmatch(r"similar to 推测解码的草稿与验证 \(0\.\d\d\): .*推测.*", zh[MINEDRAFT])
    doc = json.loads((workspace.public / "feeds" / "spec.json").read_bytes())
    [item] = [i for i in doc["items"] if i["title"] == DAPD]
    [hit] = item["_paperfeeds"]["matched"]
    assert hit["field"] == "similar"
    assert hit["term"].startswith("MineDraft (0.1")


def test_unlike_keeps_a_paper_away_and_terms_narrow(workspace: Workspace) -> None:
    _topics(
        workspace,
        BY_EXAMPLE.replace("id: spec", "id: spec-unlike") + f'    unlike: ["{DAPD}"]\n',
        BY_EXAMPLE.replace("id: spec", "id: spec-narrow") + "    any: [batch]\n",
        BY_EXAMPLE.replace("id: spec", "id: spec-none") + "    none: [LK]\n",
        BY_EXAMPLE.replace("id: spec", "id: spec-strict") + "    min_similarity: 0.5\n",
    )
    run(workspace.config(), now=lambda: T0)
    assert set(_titles(workspace, "spec-unlike")) == {MINEDRAFT, LK}
    narrow = _titles(workspace, "spec-narrow")
    assert set(narrow) == {MINEDRAFT}
    assert narrow[MINEDRAFT].startswith("batch in title")
    assert "similar to MineDraft (1.00): " in narrow[MINEDRAFT]
    assert set(_titles(workspace, "spec-none")) == {MINEDRAFT, DAPD}
    assert set(_titles(workspace, "spec-strict")) == {MINEDRAFT, LK}


def test_a_paper_is_decided_when_it_enters_and_an_edit_of_the_examples_rematches(
    workspace: Workspace,
) -> None:
    later = sorted(workspace.inbox.glob("*.txt"))[1]
    held = workspace.root / later.name
    shutil.move(later, held)
    _topics(workspace, BY_EXAMPLE)
    first = run(workspace.config(), now=lambda: T0)
    members = _members(workspace, "spec")
    shutil.move(held, later)  # a new digest: new papers change the document frequencies
    second = run(workspace.config(), now=lambda: T0 + timedelta(hours=1))
    again = _members(workspace, "spec")
    assert {pid: row for pid, row in again.items() if pid in members} == members  # no flap
    third = run(workspace.config(), now=lambda: T0 + timedelta(hours=2))
    assert _members(workspace, "spec") == again
    assert third.new_matches == {"spec": 0}
    assert first.papers_total < second.papers_total == 60
    _topics(workspace, BY_EXAMPLE.replace(f', "{LK.lower()}"', ""))  # one example less
    run(workspace.config(), now=lambda: T0 + timedelta(hours=3))
    # Matched again: LK Losses stays (it is like MineDraft too), and says so now.
    assert _titles(workspace, "spec")[LK].startswith("similar to MineDraft (0.14): ")


def _members(ws: Workspace, topic: str) -> dict[str, tuple[str, str]]:
    db = sqlite3.connect(ws.state)
    try:
        rows = db.execute("SELECT * FROM members WHERE topic_id = ?", (topic,)).fetchall()
    finally:
        db.close()
    return {str(r[1]): tuple(map(str, r[2:])) for r in rows}  # type: ignore[misc]


def test_an_unknown_arxiv_id_is_a_config_error_with_its_line_and_the_closest_titles(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    _topics(workspace, BY_EXAMPLE, "  - id: bad\n    title: Bad\n    like: [2612.99999]\n")
    with pytest.raises(ConfigError) as caught:
        run(workspace.config(), now=lambda: T0)
    assert caught.value.line == 7  # the example's own line
    assert "no stored paper has the arXiv id '2612.99999'" in caught.value.message
    r = feeds_cli(workspace.root, "run", *workspace.cli_args())
    assert r.returncode == 2
    assert f"{workspace.subscriptions}:7: topic 'bad'" in r.stderr


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ("    unlike: [x]\n", "unlike needs like"),
        ("    min_similarity: 0\n", "min_similarity must be above 0 and at most 1"),
        ("    min_similarity: high\n", "min_similarity must be a whole number or a number"),
    ],
)
def test_mistakes_in_a_topic_by_example_are_config_errors(
    workspace: Workspace, extra: str, said: str
) -> None:
    from feeds.config import load_subscriptions

    like = "" if extra.startswith("    unlike") else "    like: [x]\n"
    _topics(workspace, "  - id: a\n    title: A\n    any: [y]\n" + like + extra)
    with pytest.raises(ConfigError, match=said):
        load_subscriptions(workspace.subscriptions)


def test_check_shows_the_scores_and_the_papers_just_below(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    _topics(workspace, BY_EXAMPLE)
    run(workspace.config(), now=lambda: T0)
    args = ("--subscriptions", str(workspace.subscriptions), "--state", str(workspace.state))
    r = feeds_cli(workspace.root, "check", *args)
    assert r.returncode == 0, r.stderr
    assert "spec: 3 papers like MineDraft, LK Losses (min_similarity 0.1)" in r.stdout
    assert re.search(r"just below 0\.1:\n      0\.0\d  ", r.stdout), r.stdout
    doc = json.loads(feeds_cli(workspace.root, "check", "--json", *args).stdout)
    assert [p["title"] for p in doc["like"]["spec"]["papers"]][:2] == [MINEDRAFT, LK]
    assert all(p["score"] < 0.1 for p in doc["like"]["spec"]["just_below"])
    explain = feeds_cli(workspace.root, "check", "--explain", "spec", *args)
    assert "spec: 3 papers like" in explain.stdout


def test_every_unknown_name_is_an_error_at_its_own_line_with_the_closest(
    workspace: Workspace,
) -> None:
    from feeds.text import paper_id

    typo = "0" + paper_id(MINEDRAFT)[1:]  # MineDraft's id, one digit off
    bad = (f"  - id: bad\n    title: Bad\n    like:\n      - 2612.99999\n      - {typo}\n"
           "    unlike:\n      - 10.9999/nothing\n")  # fmt: skip
    _topics(workspace, BY_EXAMPLE, bad)
    with pytest.raises(ConfigError) as caught:
        run(workspace.config(), now=lambda: T0)
    said = str(caught.value)
    where = str(workspace.subscriptions)
    assert said.startswith(f"{where}:8: topic 'bad': no stored paper has the arXiv id")
    assert f"\n{where}:9: topic 'bad': no stored paper has the paper id '{typo}'" in said
    assert f"the closest: {paper_id(MINEDRAFT)} (MineDraft" in said  # the one meant
    assert f"\n{where}:11: topic 'bad': no stored paper has the DOI '10.9999/nothing'" in said


def test_check_warns_of_an_example_one_letter_off_a_stored_title(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    off = MINEDRAFT.replace("Parallel", "Paralel")
    _topics(workspace, f'  - id: typo\n    title: Typo\n    like: ["{off}"]\n')
    run(workspace.config(), now=lambda: T0)
    args = ("--subscriptions", str(workspace.subscriptions), "--state", str(workspace.state))
    r = feeds_cli(workspace.root, "check", *args)
    found = re.search(
        rf"{re.escape(str(workspace.subscriptions))}:4: warning: topic 'typo': '{off}' is no "
        rf"stored title; did you mean '{re.escape(MINEDRAFT)}'\? \(as a description it scores "
        r"0\.\d\d against that paper\)",
        r.stdout,
    )
    assert found, r.stdout


def test_check_says_which_papers_unlike_removed_and_why(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    _topics(workspace, BY_EXAMPLE.replace("like: [", f'unlike: ["{DAPD}"]\n    like: ['))
    run(workspace.config(), now=lambda: T0)
    args = ("--subscriptions", str(workspace.subscriptions), "--state", str(workspace.state))
    r = feeds_cli(workspace.root, "check", *args)
    assert "removed by unlike (more like an unlike example):" in r.stdout, r.stdout
    assert re.search(r"      0\.1\d  DAPD: .*: more like DAPD \(1\.00\)", r.stdout), r.stdout
    below = r.stdout.partition("just below")[2]
    assert "DAPD" not in below  # removed by unlike, not "just below" the threshold
    doc = json.loads(feeds_cli(workspace.root, "check", "--json", *args).stdout)
    (removed,) = doc["like"]["spec"]["removed_by_unlike"]
    assert (removed["title"], removed["unlike"]) == (DAPD, "DAPD")


def test_a_long_example_is_quoted_briefly_in_every_item(workspace: Workspace) -> None:
    short = "推测解码的草稿与验证 speculative decoding draft models"
    sizes = {}
    for name, text in (("short", short), ("long", short + " padding" * 130_000)):  # ~1 MB
        _topics(workspace, f"  - id: spec-zh\n    title: Z\n    like: [{json.dumps(text)}]\n")
        run(workspace.config(), now=lambda: T0)
        feeds_dir = workspace.public / "feeds"
        sizes[name] = sum(p.stat().st_size for p in feeds_dir.glob("spec-zh.*"))
        assert "padding padding padding padding padding padding padding" not in (
            feeds_dir / "spec-zh.json"
        ).read_text("utf-8")
    assert sizes["long"] < sizes["short"] * 1.2, sizes


def test_a_lone_letter_is_no_word() -> None:
    from feeds.match import similar as S

    assert S.tokens("Don't t a X: it's LLM-based") == ["don", "llm", "based"]


def test_scores_use_frequencies_fitted_anew_once_the_papers_grew_by_a_tenth(
    workspace: Workspace,
) -> None:
    from feeds.cache import cache_dir

    _topics(workspace, BY_EXAMPLE)
    first = run(workspace.config(), now=lambda: T0)
    assert first.notes == ()  # the first fit: nothing to tell
    assert list(cache_dir().glob("examples-*.pickle"))  # the examples' vectors, kept
    papers = "".join(
        f"Drafting Method {i} for Speculative Decoding\n\nAnn Bell\n\nAI总结 推测解码方法{i}。\n\n"
        for i in range(7)
    )
    (workspace.inbox / "more.txt").write_text("ICML\n\n" + papers, encoding="utf-8")
    later = run(workspace.config(), now=lambda: T0 + timedelta(days=1))
    assert later.notes == (
        "topics by example: document frequencies fitted anew on 67 papers (were 60)",
    )
    assert later.new_matches["spec"] >= 5  # scored with the new fit
    (workspace.inbox / "one.txt").write_text(
        "ICML\n\nOne More Drafting Method\n\nAnn Bell\n\nAI总结 推测解码。\n", encoding="utf-8"
    )
    assert run(workspace.config(), now=lambda: T0 + timedelta(days=2)).notes == ()
