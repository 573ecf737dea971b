"""What `feeds check` prints of topics by example: `--explain` of a topic whose example has
a long name lists every paper the topic takes with its score and its words (the name is
quoted briefly instead), and `-q` says nothing of libraries that gave every item."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.test_library import (
    CHECKED_BIB,
    MINEDRAFT_BIB,
    Cli,
    _check,
    _line_of,
    _paper,
    _project,
    _store,
)

# An example's name far longer than a line has room for: a library item's title without a
# short name before a colon, and a description.
LONG_TITLE = (
    "Speculative Decoding with Small Draft Models and Parallel Verification for Faster"
    " Inference of Large Language Models in Batched Serving"
)
LONG_BIB = (
    "@misc{long_2026,\n"
    f"\ttitle = {{{LONG_TITLE}}},\n"
    "\tabstract = {A small draft model proposes tokens that the target model verifies in"
    " parallel, which makes speculative decoding faster.},\n"
    "}\n"
)
LONG_DESCRIPTION = (
    "speculative decoding where a small draft model proposes tokens and the target large"
    " language model verifies them in parallel to make inference faster"
)
TOPICS = {
    "library": "topics:\n  - id: long\n    title: Long\n    library: refs.bib\n"
    "    min_similarity: 0.05\n",
    "like": f"topics:\n  - id: long\n    title: Long\n    like: [{LONG_DESCRIPTION}]\n"
    "    min_similarity: 0.05\n",
}

# More papers like the example than `feeds check` shows without `--explain` (10).
SPECULATIVE = [
    _paper(f"Speculative Decoding Study {n}: {what}", f"草稿模型 推测解码 {what}")
    for n, what in enumerate(
        [
            "draft model tokens verified in parallel",
            "parallel verification of draft tokens",
            "faster inference with a small draft model",
            "draft tokens for large language models",
            "batched serving with speculative decoding",
            "tree drafting and verification",
            "acceptance rate of draft tokens",
            "early exit draft layers",
            "adaptive draft length",
            "verification of tokens in batched inference",
            "small draft model distillation",
            "lossless acceleration of language model inference",
            "draft model alignment with the target model",
            "speculative sampling with parallel verification",
        ]
    )
]
OTHERS = [
    _paper("Protein Structure Prediction with Evolutionary Coupling Attention", "蛋白质结构"),
    _paper("Global Weather Forecasting with Fourier Neural Operators", "天气预报"),
]
SCORED = re.compile(r"      (\d\.\d\d)  (.+) — similar to (.+) \((\d\.\d\d)\): (\S.*)")


@pytest.mark.parametrize("kind", ["library", "like"])
def test_explain_lists_every_paper_with_its_score_and_words_quoting_a_long_example_briefly(
    tmp_path: Path, feeds_cli: Cli, kind: str
) -> None:
    ws = _project(tmp_path, TOPICS[kind], {"refs.bib": LONG_BIB})
    _store(ws.state, *SPECULATIVE, *OTHERS).close()
    doc = json.loads(_check(feeds_cli, ws, "--explain", "long", "--json").stdout)
    taken = doc["long"]["papers"]
    assert len(taken) > 10, taken  # more than check shows without --explain
    out = _check(feeds_cli, ws, "--explain", "long").stdout
    assert f"long: {len(taken)} papers like " in out, out
    assert "… and" not in out, out  # every paper, none summed up
    lines = out.split(f"long: {len(taken)} papers like ", 1)[1].splitlines()[1:]
    lines = [line for line in lines if not line.startswith("    library ")]
    scored = [SCORED.fullmatch(line) for line in lines[: len(taken)]]
    assert all(scored), lines
    name = LONG_TITLE if kind == "library" else LONG_DESCRIPTION
    for m, paper in zip(scored, taken, strict=True):
        assert m is not None
        said = re.fullmatch(r"(.+) \((\d\.\d\d)\): (.+)", paper["why"])  # as items say it
        assert said, paper
        assert m.group(1) == m.group(4) == said.group(2)  # the score, twice
        assert paper["title"].startswith(m.group(2).removesuffix(" …"))
        quoted = m.group(3)  # the example, quoted briefly
        assert len(quoted) <= 60, quoted
        assert quoted.endswith(" …"), quoted
        assert name.startswith(quoted.removesuffix(" …")), quoted
        assert m.group(5) == said.group(3)  # the words, all of them


def test_check_without_explain_still_shows_ten_papers_and_says_how_many_more(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    ws = _project(tmp_path, TOPICS["like"], {})
    _store(ws.state, *SPECULATIVE, *OTHERS).close()
    out = _check(feeds_cli, ws).stdout
    m = re.search(r"long: (\d+) papers like ", out)
    assert m, out
    assert f"      … and {int(m.group(1)) - 10:,} more" in out, out


LIBRARY_TOPIC = "topics:\n  - id: mine\n    title: Mine\n    library: refs.bib\n"


@pytest.mark.parametrize("stored", [False, True], ids=["before-the-first-run", "with-papers"])
def test_check_quiet_says_nothing_of_a_library_that_gave_every_item(
    tmp_path: Path, feeds_cli: Cli, stored: bool
) -> None:
    ws = _project(tmp_path, LIBRARY_TOPIC, {"refs.bib": MINEDRAFT_BIB})
    if stored:
        _store(ws.state, *SPECULATIVE, *OTHERS).close()
    quiet = _check(feeds_cli, ws, "-q")
    assert quiet.stdout == "", quiet.stdout  # all is well: cron mails nothing
    said = _check(feeds_cli, ws).stdout  # without -q, as before
    assert "library refs.bib: 1 item read, 1 used, 0 skipped" in said, said


@pytest.mark.parametrize("stored", [False, True], ids=["before-the-first-run", "with-papers"])
def test_check_quiet_still_says_each_skipped_library_item_as_a_warning(
    tmp_path: Path, feeds_cli: Cli, stored: bool
) -> None:
    ws = _project(tmp_path, LIBRARY_TOPIC, {"refs.bib": CHECKED_BIB})
    if stored:
        _store(ws.state, *SPECULATIVE, *OTHERS).close()
    untitled = _line_of(CHECKED_BIB, "@misc{untitled")
    quiet = _check(feeds_cli, ws, "-q").stdout
    assert quiet == f"mine: warning: library refs.bib: skipped refs.bib:{untitled}: no title\n"
    said = _check(feeds_cli, ws).stdout
    assert "library refs.bib: 2 items read, 1 used, 1 skipped" in said, said
    assert f"skipped refs.bib:{untitled}: no title" in said
