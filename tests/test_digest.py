"""Tests of the digest parser (feeds.sources.digest) against golden files and hand-made digests.

The expected values in tests/data/expected/*.json were written independently of the parser,
from the raw seed text and the digest format in the spec (SPEC.md, "The digest format").
A file tests/data/expected/<stem>.json belongs to seeds/<stem>.txt or
tests/data/digests/<stem>.txt; besides "venue" and "papers" it may hold "diagnostic_lines",
the line numbers the parser must report (default: none).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeds.errors import DigestRejected
from feeds.model import Diagnostic, Institution, Paper, ParsedDigest
from feeds.sources.digest import parse
from feeds.text import paper_id

HERE = Path(__file__).parent
ROOT = HERE.parent
SEEDS = ROOT / "seeds"
DIGESTS = HERE / "data" / "digests"
EXPECTED = HERE / "data" / "expected"

PAPER_FIELDS = ("title", "title_zh", "summary", "comments", "journal_ref")

# Characters XML 1.0 does not allow (Char production), plus the C1 controls the
# parser promises to drop as well.
XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _digests_with_expected() -> list[Path]:
    files = sorted(SEEDS.glob("*.txt")) + sorted(DIGESTS.glob("*.txt"))
    return [f for f in files if (EXPECTED / f"{f.stem}.json").exists()]


DIGEST_FILES = _digests_with_expected()


def _load_expected(stem: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXPECTED / f"{stem}.json").read_text(encoding="utf-8"))
    return data


def _parse_file(path: Path) -> ParsedDigest:
    return parse(path.read_bytes(), str(path))


def _as_dict(line: int, paper: Paper) -> dict[str, Any]:
    return {
        "line": line,
        "title": paper.title,
        "title_zh": paper.title_zh,
        "authors": list(paper.authors),
        "institutions": [{"name": i.name, "name_zh": i.name_zh} for i in paper.institutions],
        "summary": paper.summary,
        "comments": paper.comments,
        "journal_ref": paper.journal_ref,
    }


def _strings(value: object) -> list[str]:
    """Return every string inside a parse result (dataclasses, tuples, strings)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, tuple):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, ParsedDigest | Paper | Institution | Diagnostic):
        return [s for item in vars(value).values() for s in _strings(item)]
    return []


# --- golden files --------------------------------------------------------------------------


def test_the_golden_files_cover_every_seed() -> None:
    seeds = sorted(SEEDS.glob("*.txt"))
    assert seeds, "no seed digests found"
    for seed in seeds:
        assert (EXPECTED / f"{seed.stem}.json").exists(), f"no expected file for {seed.name}"
    for expected in EXPECTED.glob("*.json"):
        owners = [SEEDS / f"{expected.stem}.txt", DIGESTS / f"{expected.stem}.txt"]
        assert any(p.exists() for p in owners), f"{expected.name} belongs to no digest"


def test_the_seeds_hold_sixty_papers() -> None:
    seeds = sorted(SEEDS.glob("*.txt"))
    total = sum(len(_load_expected(s.stem)["papers"]) for s in seeds)
    assert total == 60
    assert sum(len(_parse_file(s).papers) for s in seeds) == 60


@pytest.mark.parametrize("path", DIGEST_FILES, ids=lambda p: p.name)
def test_digest_matches_expected(path: Path) -> None:
    expected = _load_expected(path.stem)
    parsed = _parse_file(path)

    assert parsed.venue == expected["venue"]
    got_lines = [line for line, _ in parsed.papers]
    assert got_lines == [p["line"] for p in expected["papers"]]
    assert len(parsed.papers) == len(expected["papers"])
    for (line, paper), want in zip(parsed.papers, expected["papers"], strict=True):
        got = _as_dict(line, paper)
        for key, value in want.items():
            assert got[key] == value, f"{path.name}:{want['line']}: {key}"
        assert paper.venue == expected["venue"]
        assert paper.paper_id == paper_id(want["title"])

    assert sorted(d.line for d in parsed.diagnostics) == expected.get("diagnostic_lines", [])
    for diagnostic in parsed.diagnostics:
        assert diagnostic.file == str(path)
        assert diagnostic.message


def test_paper_ids_are_unique_within_the_seeds() -> None:
    ids = [p.paper_id for s in sorted(SEEDS.glob("*.txt")) for _, p in _parse_file(s).papers]
    assert len(ids) == len(set(ids))


# --- paper identity ------------------------------------------------------------------------


def test_paper_id_ignores_case_punctuation_and_whitespace() -> None:
    variants = [
        "Attention Is All You Need",
        "attention is all you need",
        "ATTENTION IS ALL YOU NEED",
        "Attention  is\tall you need.",
        "  Attention: Is All-You Need?! ",
        "Attention, is all you need",
    ]
    ids = {paper_id(v) for v in variants}
    assert len(ids) == 1
    assert re.fullmatch(r"[0-9a-f]{16}", ids.pop())


def test_paper_id_differs_for_different_titles() -> None:
    titles = [
        "Attention Is All You Need",
        "Attention Is Not All You Need",
        "Attention Is All You Need 2",
        "Attentions Is All You Need",
        "MineDraft: A Framework for Batch Parallel Speculative Decoding",
    ]
    assert len({paper_id(t) for t in titles}) == len(titles)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Transformers ≥ RNNs on Long Sequences", "Transformers ≤ RNNs on Long Sequences"),
        ("P = NP", "P ≠ NP"),
        ("C++ X", "C X"),
        ("A+", "A"),
        ("C# for Scientists", "C for Scientists"),
        ("x < y", "x > y"),
    ],
)
def test_symbols_that_tell_titles_apart_keep_papers_apart(one: str, other: str) -> None:
    assert paper_id(one) != paper_id(other)
    assert paper_id(one) == paper_id(one.upper().replace(" ", "  "))


def test_paper_id_is_stable_across_versions() -> None:
    # A fixed value: ids are used in file names and URLs and must never change.
    assert paper_id("Attention Is All You Need") == paper_id("attention is all you need")
    # uuid5(PAPER_NAMESPACE, "attention is all you need"), first 16 hex digits
    assert paper_id("Attention Is All You Need") == "eedad3dc20345ee4"


# --- robustness: encodings, line ends, missing parts -----------------------------------------


def test_bom_and_crlf_parse_like_plain_lf() -> None:
    plain = (DIGESTS / "small_lf.txt").read_bytes()
    windows = (DIGESTS / "small_bom_crlf.txt").read_bytes()
    assert windows.startswith(b"\xef\xbb\xbf")
    assert b"\r\n" in windows
    assert b"\r" not in plain
    assert parse(windows, "x.txt") == parse(plain, "x.txt")


@pytest.mark.parametrize("seed", sorted(SEEDS.glob("*.txt")), ids=lambda p: p.name)
def test_bom_and_other_line_ends_of_a_seed_parse_like_the_seed(seed: Path) -> None:
    plain = seed.read_bytes()
    windows = b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n")
    old_mac = plain.replace(b"\n", b"\r")
    assert parse(windows, "seed") == parse(plain, "seed")
    assert parse(old_mac, "seed") == parse(plain, "seed")


def test_missing_optional_fields_are_none_or_empty() -> None:
    parsed = _parse_file(DIGESTS / "missing_optional.txt")
    assert not parsed.diagnostics
    first = parsed.papers[0][1]
    assert first.title_zh is None
    assert first.institutions == ()
    assert first.comments is None
    assert first.journal_ref is None
    assert first.authors == ("Dana Fox", "Eli Stone")


def test_truncated_last_record_is_reported_and_skipped() -> None:
    path = DIGESTS / "truncated_end.txt"
    parsed = _parse_file(path)
    assert [p.title for _, p in parsed.papers] == ["First Complete Paper", "Second Complete Paper"]
    assert len(parsed.diagnostics) == 1
    diagnostic = parsed.diagnostics[0]
    assert diagnostic.file == str(path)
    assert diagnostic.line == 21
    assert str(diagnostic).startswith(f"{path}:21: ")


def test_truncated_record_in_the_middle_is_reported_and_skipped() -> None:
    # SPEC: "A record that cannot be understood is reported with its file and line number
    # and skipped; the rest of the file still counts." The record at line 3 stops after its
    # Chinese title; the next record (line 7) must not be swallowed into it.
    path = DIGESTS / "truncated_middle.txt"
    parsed = _parse_file(path)
    assert [(line, p.title) for line, p in parsed.papers] == [
        (7, "Beta: A Complete Paper"),
        (15, "Gamma Complete Paper"),
    ]
    assert [(d.file, d.line) for d in parsed.diagnostics] == [(str(path), 3)]


def test_orphan_field_lines_are_reported_with_their_lines() -> None:
    path = DIGESTS / "orphan_field.txt"
    parsed = _parse_file(path)
    assert [(d.file, d.line) for d in parsed.diagnostics] == [(str(path), 3), (str(path), 5)]
    assert "AI总结" in parsed.diagnostics[0].message
    assert "Comments" in parsed.diagnostics[1].message
    assert [(line, p.title) for line, p in parsed.papers] == [(7, "The Paper After the Orphans")]
    assert parsed.papers[0][1].summary == "正文。"


def test_chinese_title_starting_with_jigou_is_a_title() -> None:
    # 机构 ("institution") at the start of a Chinese title is not the `机构 *` field.
    parsed = _parse_file(DIGESTS / "zh_title_jigou.txt")
    assert not parsed.diagnostics
    [(line, paper)] = parsed.papers
    assert line == 3
    assert paper.title == "How Institutional Investors Use Large Language Models"
    assert paper.title_zh == "机构投资者如何使用大语言模型"
    assert paper.authors == ("Ann Lee",)


def test_english_title_starting_with_comments_is_a_title() -> None:
    parsed = _parse_file(DIGESTS / "comments_title.txt")
    assert not parsed.diagnostics
    assert [(line, p.title) for line, p in parsed.papers] == [
        (3, "Scaling Laws Revisited"),
        (13, "Comments on the Lottery Ticket Hypothesis"),
    ]
    assert parsed.papers[0][1].comments == "ICML 2026"


# --- robustness: control characters and markup ----------------------------------------------


def test_control_characters_are_removed_and_markup_is_kept() -> None:
    raw = (DIGESTS / "control_chars.txt").read_bytes()
    for control in (b"\x01", b"\x0b", b"\x1f", b"\x7f"):
        assert control in raw
    [(_, paper)] = _parse_file(DIGESTS / "control_chars.txt").papers
    assert paper.title == 'Tokens & <Masks>: "Quoted" Attention Is All You Need'
    assert paper.summary == '总结中的 & < > " 字符保持原样。'
    for text in _strings(paper):
        assert not XML_FORBIDDEN.search(text), repr(text)


def test_control_characters_built_at_test_time() -> None:
    content = (
        "ICML\n\n"
        'A\x01 Title\x0b with\x1f Controls\x7f & <b>"bold"</b>\n\n'
        "带\x01控制字符的标题\n\n"
        "Ann Lee\n\n"
        'AI总结 摘要\x0b里有\x1f控制字符 & <i> "引号"\x7f\n'
    ).encode()
    [(line, paper)] = parse(content, "ctrl.txt").papers
    assert line == 3
    assert paper.title == 'A Title with Controls & <b>"bold"</b>'
    assert paper.title_zh == "带控制字符的标题"
    assert paper.summary == '摘要里有控制字符 & <i> "引号"'


# --- whole-file rejections --------------------------------------------------------------------


def _rejected(content: bytes, source: str = "bad.txt") -> DigestRejected:
    with pytest.raises(DigestRejected) as info:
        parse(content, source)
    assert info.value.file == source
    assert "\n" not in str(info.value)
    return info.value


def test_html_error_page_is_rejected() -> None:
    error = _rejected((DIGESTS / "error_page.txt").read_bytes())
    assert "HTML" in error.message


def test_html_page_without_doctype_is_rejected() -> None:
    error = _rejected(b"\n  <html>\n<body>Service Unavailable</body></html>\n")
    assert "HTML" in error.message


def test_binary_data_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "digest.txt"
    path.write_bytes(b"ICML\n\n\x00\x01\x02\xff\xfe PNG\x00\x00 data " + bytes(range(256)))
    error = _rejected(path.read_bytes(), str(path))
    assert "binary" in error.message


def test_gbk_encoded_digest_is_rejected(tmp_path: Path) -> None:
    text = "ICML\n\nA Title\n\n一个标题\n\nAnn Lee\n\nAI总结 这是用GBK编码的摘要。\n"
    path = tmp_path / "gbk.txt"
    path.write_bytes(text.encode("gbk"))
    error = _rejected(path.read_bytes(), str(path))
    assert "UTF-8" in error.message


def test_latin1_encoded_digest_is_rejected() -> None:
    text = "ICML\n\nÉtude des réseaux\n\nJosé Núñez, Émile Zola\n\nAI总结 résumé\n"
    error = _rejected(text.encode("latin-1", errors="replace"))
    assert "UTF-8" in error.message


def test_empty_file_is_rejected() -> None:
    assert (DIGESTS / "empty.txt").read_bytes() == b""
    assert "empty" in _rejected((DIGESTS / "empty.txt").read_bytes()).message


@pytest.mark.parametrize("content", [b"   \n\n\t\r\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\r\n\r\n"])
def test_blank_file_is_rejected(content: bytes) -> None:
    _rejected(content)


def test_venue_only_file_is_rejected() -> None:
    error = _rejected((DIGESTS / "venue_only.txt").read_bytes())
    assert "no paper records" in error.message


def test_file_of_only_broken_records_is_rejected_with_the_first_problem() -> None:
    error = _rejected("ICML\n\nAI总结 孤儿\n\n第一个中文标题\n".encode())
    assert "no paper records" in error.message
    assert "line 3" in error.message


# --- property: parse never fails in an unexpected way -----------------------------------------


def _check_result_or_rejection(content: bytes) -> None:
    try:
        parsed = parse(content, "prop.txt")
    except DigestRejected as e:
        rejection: DigestRejected | None = e
    else:
        rejection = None
    if rejection is not None:
        assert rejection.message
        return
    assert isinstance(parsed, ParsedDigest)
    assert parsed.papers
    for text in _strings(parsed):
        assert not XML_FORBIDDEN.search(text), repr(text)
    for line, paper in parsed.papers:
        assert line >= 1
        assert paper.title
        assert paper.paper_id == paper_id(paper.title)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parse_arbitrary_text(text: str) -> None:
    _check_result_or_rejection(text.encode("utf-8"))


_LINE = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "ICML", "A Title", "中文标题", "Ann Lee, Bob Ray", "<html>"]),
    st.builds(
        "{}{}".format,
        st.sampled_from(["机构 * ", "AI总结 ", "Comments ", "Journal ref ", "机构", "AI 总结："]),
        st.text(max_size=20),
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=25), st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
def test_parse_digest_shaped_text(lines: list[str], eol: str, bom: bool) -> None:
    content = eol.join(lines).encode("utf-8")
    _check_result_or_rejection((b"\xef\xbb\xbf" if bom else b"") + content)


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_non_utf8_byte_is_reported_where_it_is_in_the_file(bom: bytes) -> None:
    content = bom + b"ICML\n\nCaf\xe9 Models\n\nA B\n"
    with pytest.raises(DigestRejected) as e:
        parse(content, "x.txt")
    at = content.index(b"\xe9")
    assert e.value.message == f"not UTF-8 text (byte 0xe9 at offset {at})"
