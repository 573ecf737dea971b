"""The parser's fast path (one regex match per record of the common shape,
feeds.sources.digest._scan) gives exactly what the line-by-line reference
(feeds.sources.digest._parse_lines) gives: the same papers with the same line numbers, the
same venue, the same diagnostics, the same rejections.

parse() reads what it can with the fast path and the other parts of a file with the line
loop of the reference; these tests compare parse() with the reference on seeds, synthetic
digests and generated texts full of the shapes the fast path must refuse, and check that the
fast path is really taken where it should be.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchmarks.generate import generate_digest
from feeds.errors import DigestRejected
from feeds.model import Institution, ParsedDigest
from feeds.sources import digest
from feeds.sources.digest import (
    _classify,
    _institutions,
    _parse_lines,
    _parse_text,
    _text,
    looks_like_authors,
    parse,
    split_authors,
    split_institutions,
)

HERE = Path(__file__).parent
SEEDS = sorted((HERE.parent / "seeds").glob("*.txt"))
TEST_DIGESTS = sorted((HERE / "data").glob("*/*.txt"))


Outcome = ParsedDigest | tuple[str, str | None, str]


def _outcome(fn: Callable[[bytes, str], ParsedDigest], content: bytes, source: str) -> Outcome:
    try:
        return fn(content, source)
    except DigestRejected as e:
        return ("rejected", e.file, e.message)


def _reference(content: bytes, source: str) -> ParsedDigest:
    return _parse_lines(_text(content, source), source)


def assert_same(content: bytes, source: str = "d.txt") -> Outcome:
    """parse() gives what the reference gives; return that."""
    want = _outcome(_reference, content, source)
    got = _outcome(parse, content, source)
    assert got == want
    return got


def fast_count(text: str) -> int:
    """Return how many papers of text the fast path reads."""
    return _parse_text(text, "d.txt")[1]


# --- real and synthetic digests: the same results, all by the fast path ---------------------


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_seeds_are_read_by_the_fast_path_alone(path: Path) -> None:
    content = path.read_bytes()
    result = assert_same(content, str(path))
    assert isinstance(result, ParsedDigest)
    assert fast_count(_text(content, str(path))) == len(result.papers)


@pytest.mark.parametrize("path", TEST_DIGESTS, ids=lambda p: p.name)
def test_hand_made_digests_give_the_same_results(path: Path) -> None:
    assert_same(path.read_bytes(), str(path))


@pytest.mark.parametrize("seed", range(6))
def test_synthetic_digests_are_read_by_the_fast_path_alone(seed: int) -> None:
    rng = random.Random(seed)
    venue = ("ICML", "NeurIPS", "ICLR")[seed % 3]
    text = generate_digest(rng, seed * 1000, 150, venue)
    result = assert_same(text.encode(), "synthetic.txt")
    assert isinstance(result, ParsedDigest)
    assert len(result.papers) == 150
    assert fast_count(text) == 150


@pytest.mark.parametrize("eol", ["\r\n", "\r"])
def test_other_line_ends_and_a_bom_take_the_fast_path_too(eol: str) -> None:
    text = generate_digest(random.Random(7), 0, 40, "ICML")
    content = b"\xef\xbb\xbf" + text.replace("\n", eol).encode()
    assert assert_same(content) == parse(text.encode(), "d.txt")
    assert fast_count(_text(content, "d.txt")) == 40


def test_white_space_lines_and_padding_take_the_fast_path() -> None:
    text = generate_digest(random.Random(8), 0, 30, "ICML")
    padded = "\n\n  \n" + text.replace("\n\n", " \t\n \u3000\n\n  ")
    plain, result = assert_same(text.encode()), assert_same(padded.encode())
    assert isinstance(plain, ParsedDigest)
    assert isinstance(result, ParsedDigest)
    assert [p for _, p in result.papers] == [p for _, p in plain.papers]
    assert [n for n, _ in result.papers] == [n + 3 + (n - 1) // 2 for n, _ in plain.papers]
    assert fast_count(padded) == 30


# --- a record the fast path cannot vouch for: the line loop reads it and the fast path goes on -


def _synthetic_records(n: int) -> list[str]:
    """Return n synthetic records, each without the blank lines after it."""
    return list(_records(n))


@cache
def _records(n: int) -> tuple[str, ...]:
    records = []
    for i in range(n):
        venue, _, record = generate_digest(random.Random(i), i, 1, "ICML").partition("\n\n")
        assert venue == "ICML"
        records.append(record.rstrip("\n"))
    return tuple(records)


# Text put between two records, and whether the line loop reads the record before it with it
# (when a stray line may belong to it). It also reads the first record after the text: the
# fast path takes over again after that one.
BREAKS = [
    # a stray field line after a complete record: it belongs to that record
    ("Comments one more comment", 1),
    ("AI总结 第二个总结", 1),
    ("机构 * Another University（另一所大学） 纠错", 1),
    ("journal ref: Some Journal 2026", 1),
    # a record cut short: no authors, no summary
    ("A Paper Cut Short: Really\n\n被截断的论文", 1),
    # a title without a Latin letter
    ("没有英文的标题\n\n中文标题\n\nAnn Lee\n\nAI总结 摘要。", 1),
    # `Comments ...` followed by a Chinese line: a paper's English title
    ("Comments on Everything\n\n关于一切的评论\n\nAnn Lee\n\nAI总结 摘要。", 1),
    # a title that is too long
    ("Long " * 101 + "Title\n\n很长的标题\n\nAnn Lee\n\nAI总结 摘要。", 1),
    # a field wrapped onto the next line
    ("Wrapped Paper\n\n换行的论文\n\nAnn Lee, Bob Ray\n\nAI总结 第一行\n第二行", 0),
    # fields out of order, one of them twice
    ("Out of Order\n\n乱序\n\nAnn Lee\n\nComments A\n\nAI总结 摘要。\n\nComments B", 0),
    # a Comments line before a record whose title has Chinese in it
    (
        "Last Words\n\n遗言\n\nAnn Lee\n\nComments ICML\n\n"
        + "LLM 智能体\n\n智能体\n\nBo Li\n\nAI总结 总结",
        0,
    ),
]


@pytest.mark.parametrize("where", [0, 1, 2, 10, 19])
@pytest.mark.parametrize(("stray", "before"), BREAKS)
def test_the_line_loop_reads_what_the_fast_path_refuses_and_no_more(
    stray: str, before: int, where: int
) -> None:
    records = _synthetic_records(20)
    records.insert(where + 1, stray)
    text = "ICML\n\n" + "\n\n".join(records) + "\n"
    assert_same(text.encode())
    after = 1 if where < 19 else 0
    assert fast_count(text) == 20 - before - after


def test_many_refused_records_in_a_file() -> None:
    records = _synthetic_records(60)
    strays = list(zip(range(58, 0, -5), BREAKS * 2, strict=False))
    for where, (stray, _) in strays:
        records.insert(where, stray)
    text = "ICML\n\n" + "\n\n".join(records)
    result = assert_same(text.encode())
    assert isinstance(result, ParsedDigest)
    assert result.diagnostics
    # Between the strays, the line loop reads only the records next to them.
    assert fast_count(text) == 60 - sum(before for _, (_, before) in strays) - len(strays)


def test_records_after_a_refused_one_are_still_all_found() -> None:
    records = _synthetic_records(12)
    records.insert(6, "A Paper Cut Short: Really\n\n被截断的论文")
    text = "ICML\n\n" + "\n\n".join(records)
    result = assert_same(text.encode())
    assert isinstance(result, ParsedDigest)
    assert len(result.papers) == 12
    assert [d.line for d in result.diagnostics] == [result.papers[6][0] - 4]
    assert fast_count(text) == 10  # the one before it and the one after it are not


@pytest.mark.parametrize("cut_after_chain", [False, True])
def test_records_that_may_not_end_a_record_for_the_line_loop(cut_after_chain: bool) -> None:
    # After a record cut short, the line loop may read a title as authors, the Chinese title
    # as a title and Chinese authors as its Chinese title: records without field lines and
    # with Chinese authors do not tell where the fast path can take over again.
    cut = "A Paper Cut Short: Really\n\n被截断的论文"
    chain = [f"Chained Paper {i}: Results\n\n链式论文{i}\n\n张三，李四" for i in range(3)]
    records = _synthetic_records(10)
    middle = [cut, *chain, cut] if cut_after_chain else [cut, *chain]
    text = "ICML\n\n" + "\n\n".join(records[:5] + middle + records[5:])
    result = assert_same(text.encode())
    assert isinstance(result, ParsedDigest)
    assert fast_count(text) == 8  # not the one before the first cut, nor the one after all


# Records and pieces that make the line loop read what follows them in other ways.
TRICKY = [
    "A Paper Cut Short: Really\n\n被截断的论文",
    "Only a Title Here: Yes",
    "Chained Paper: Results\n\n链式论文\n\n张三，李四",
    "LLM 智能体: A Study\n\n智能体研究\n\nAnn Lee, Bob Ray",
    "LLM 智能体: A Study\n\n智能体研究\n\n张三，李四",
    "Deep Learning\n\n深度学习\n\nAnn Lee",
    "Ann Lee\n\n中文标题\n\nBob Ray, Carl Zed\n\nAI总结 摘要",
    "中文标题\n\n另一个中文标题\n\nAnn Lee",
    "智能体\n\nBo Li",
    "Comments A stray comment",
    "AI总结 一个孤立的总结",
    "Comments on Everything\n\n关于一切的评论\n\nAnn Lee",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(TRICKY), st.integers(0, 7)), min_size=1, max_size=14).filter(
        lambda parts: any(isinstance(p, int) for p in parts)
    )
)
def test_records_of_tricky_shapes_between_plain_ones(parts: list[str | int]) -> None:
    plain = _synthetic_records(8)
    text = "\n\n".join(["ICML"] + [plain[p] if isinstance(p, int) else p for p in parts])
    assert_same(text.encode())


# --- the pieces of the fast path agree with the functions they stand for ---------------------

FIELD_STARTS = [
    "机构",
    "机构 ",
    "机构 *",
    "机构＊",
    "机构：",
    "机构 :",
    "AI",
    "AI总结",
    "AI 总结",
    "AI\t总结",
    "Ai总结",
    "Comments",
    "Comments ",
    "Comments:",
    "Comments：",
    "Commentsx",
    "comments",
    "Journal ref",
    "Journal-ref",
    "JOURNAL REF",
    "journal Ref",
    "Journal  ref",
    "Journalref",
]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(FIELD_STARTS),
    st.text(alphabet=" \t\u3000:：*＊xA总", max_size=4),
    st.text(max_size=6).map(lambda s: s.replace("\n", "")),
)
def test_lines_the_fast_path_takes_for_titles_are_no_fields(
    start: str, middle: str, end: str
) -> None:
    line = (start + middle + end).strip()
    if not line:
        return
    guard = re.compile(digest._NOT_FIELD)
    if _classify(line)[0] is not None:
        assert guard.match(line + "\n") is None
        assert guard.match(line) is None


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                ["Ann", "Lee", "van", "de", "Jean-Luc", "-Dash", "O'Neil", "J.", "and", "And"]
            ),
            st.sampled_from(["Guðrún", "Núñez", "Ærø", "张三", "Ann:", "Bob?", "Cy!", "–", "—"]),
            st.text(alphabet="aZ.-'é;,，、 \t\u00a0", min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=16,
    ),
    st.lists(st.sampled_from([" ", ", ", ",", " , ", "; ", "  ", " and "]), max_size=16),
)
@example(["Ann", "Lee", "Bob", "Ray"], [" ", ", ", " "])
@example(["Seunghan", "Lee"], [" "])
def test_plain_authors_lines_are_authors_split_at_commas(words: list[str], seps: list[str]) -> None:
    line = words[0] + "".join(s + w for s, w in zip(seps, words[1:], strict=False))
    line = line.strip()
    names = re.compile(digest._NAMES)
    if line and names.fullmatch(line) and " and " not in line:
        assert looks_like_authors(line)
        assert split_authors(line) == tuple(line.split(", "))


@pytest.mark.parametrize(
    ("line", "plain"),
    [
        ("Anxin Guo, Jingwei Li", True),
        ("Bryan Kian Hsiang Low, Daniela Rus", True),
        ("Guðrún Fjóla Guðmundsdóttir, Jian Lang", True),
        ("Jean-Luc Picard, O'Neil J.", True),
        ("Seunghan Lee", True),
        ("seunghan lee", False),  # one name: looks_like_authors() wants capitals
        ("Vincent van Gogh", False),  # ... or a particle: left to looks_like_authors()
        ("A B C D E F G, H I", False),  # seven words
        ("Ann - Lee, Bob", False),  # ` - ` as in a title
        ("Ann Lee; Bob Ray", False),
        ("张三, 李四", False),
    ],
)
def test_plain_authors_lines(line: str, plain: bool) -> None:
    assert bool(re.compile(digest._NAMES).fullmatch(line)) is plain
    assert_same(f"ICML\n\nA Title\n\n一个标题\n\n{line}\n\nAI总结 摘要\n".encode())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                ["Tsinghua University（清华大学）", "KAIST（韩国科学技术院）", "A（B）C（D）"]
            ),
            st.sampled_from(["（甲）", "A（）", "A (B)（乙）", "A（乙", "A）", " ", "纠错"]),
            st.text(alphabet="Ab （）；纠错 \t", max_size=8),
        ),
        max_size=5,
    ),
    st.sampled_from([" ； ", "；", " ；；", "; "]),
    st.sampled_from([" 纠错", "纠错", "", " 纠错 纠错", "\u3000纠错"]),
)
def test_institutions_split_like_split_institutions(
    entries: list[str], sep: str, tail: str
) -> None:
    value = (sep.join(entries) + tail).rstrip()
    if value:
        known: dict[str, Institution] = {}
        once = _institutions(value, known)
        assert once == split_institutions(value) == institutions_by_definition(value)
        assert _institutions(value, known) == once  # the cache changes nothing


def institutions_by_definition(line: str) -> tuple[Institution, ...]:
    """A `机构` line's institutions as the format says: the page's trailing `纠错` dropped,
    entries split on `；`, each `Name（中文名）` (the closing bracket may be cut off)."""
    text = line.rstrip()
    text = text[: -len("纠错")].rstrip() if text.endswith("纠错") else text
    out = []
    for raw in text.split("；"):
        entry = raw.strip()
        m = re.match(r"^(?P<name>.*?)\s*（(?P<zh>[^（）]*)）?$", entry)
        if not entry:
            continue
        if m and m.group("name"):
            out.append(Institution(m.group("name"), m.group("zh").strip() or None))
        else:
            out.append(Institution(entry))
    return tuple(out)


def test_a_title_of_printable_characters_and_single_spaces_needs_no_white_space_folding() -> None:
    # The fast path keeps such titles as they are instead of " ".join(title.split()).
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if char.isspace():
            assert char == " " or not char.isprintable(), hex(code)


# --- generated digests: every shape the fast path must get right, or refuse ----------------

TITLES = [
    "Scaling Laws Revisited",
    "MineDraft: A Framework for Batch Parallel Speculative Decoding",
    "Clustering as Reasoning: A $k$-Means Interpretation",
    "Comments on the Lottery Ticket Hypothesis",
    "Journal Reflections on Peer Review",
    "AI for Science",
    "Deep  Learning\tAgain",
    'Tokens & <b>Masks</b>: "Quoted" Attention',
    "深度学习没有英文",
    "LLM 智能体的推理",
    "Ann Lee",
    "Seunghan Lee",
    "1234",
    "x" * 501,
]
TITLES_ZH = [
    "幻觉是空间最优性的结果：成员测试的率失真定理",
    "MineDraft: 批量并行推测解码框架",
    "机构投资者如何使用大语言模型",
    "AI总结 看起来像字段",
    "No Chinese Here",
    "<i>中文</i> & 标题",
]
AUTHORS = [
    "Anxin Guo, Jingwei Li",
    "Zhenwei Tang, Arun Verma, Zijian Zhou, Bryan Kian Hsiang Low",
    "Seunghan Lee",
    "seunghan lee",
    "Vincent van Gogh",
    "Guðrún Fjóla Guðmundsdóttir, Jian Lang",
    "Ann Lee and Bob Ray",
    "Ann Lee; Bob Ray",
    "Ann Lee，Bob Ray、张三",
    "Ann - Lee, Bob",
    "Ann Lee, Bob Ray:",
    "A B C D E F G, H I",
    "张三, 李四",
    "李四",
    "Comments Smith, Ann Lee",
    "Jean-Luc Picard, -Dash",
    "Ann  Lee,Bob Ray",
]
INSTITUTIONS = [
    "Tsinghua University（清华大学） 纠错",
    "Northwestern University（西北大学计算机科学系） ； Columbia University（哥伦比亚大学） 纠错",
    "City University of Hong Kong ； Tencent 纠错",
    "A（B）C（D） ；；（甲） 纠错",
    "纠错",
    "KAIST（韩国科学技术院）",
]
SUMMARIES = [
    "提出一种方法，显著提升性能。",
    "：以冒号开头",
    "<b>HTML</b> & 文本",
    "Comments 不是字段",
]
COMMENTS = ["ICML 2026", "Accepted at ICML 2026. Code: https://github.com/a/b", ": colon first"]
JOURNAL_REFS = ["ICML 2026", "Proceedings of the 43rd ICML"]
FIELDS = {  # canonical prefix first
    "institutions": (
        ["机构 * "],
        ["机构 *", "机构*", "机构：", "机构 ＊ ", "机构 * ："],
        INSTITUTIONS,
    ),
    "summary": (["AI总结 "], ["AI 总结：", "AI总结", "AI总结 ：", "AI总结："], SUMMARIES),
    "comments": (["Comments "], ["Comments: ", "Comments", "Comments：", "comments "], COMMENTS),
    "journal_ref": (
        ["Journal ref "],
        ["Journal-ref: ", "journal ref ", "JOURNAL REF:"],
        JOURNAL_REFS,
    ),
}
SEPARATORS = ["\n\n", "\n", "\n\n\n", "\n \n", " \n\n", "\n\n  ", "\n\t\u3000\n", "\u2028\n\n"]


def _pick(draw: st.DrawFn, odds: int, canonical: list[str], others: list[str]) -> str:
    """One of the canonical choices, or (one time in `odds`) one of the others."""
    if others and draw(st.integers(0, odds - 1)) == 0:
        return draw(st.sampled_from(others))
    return draw(st.sampled_from(canonical))


@st.composite
def records(draw: st.DrawFn, odds: int) -> list[str]:
    """The lines of one record: well-formed, but at each choice (one time in `odds`) not."""
    lines = [
        _pick(draw, odds, TITLES[:3], TITLES[3:]),
        _pick(draw, odds, TITLES_ZH[:3], TITLES_ZH[3:]),
        _pick(draw, odds, AUTHORS[:3], AUTHORS[3:]),
    ]
    for canonical, others, values in FIELDS.values():
        if draw(st.booleans()):
            lines.append(_pick(draw, odds, canonical, others) + draw(st.sampled_from(values)))
    mutation = _pick(draw, odds, ["none"], ["drop", "swap", "twice", "wrap", "text"])
    if mutation == "drop" and len(lines) > 1:  # a field missing
        del lines[draw(st.integers(0, len(lines) - 1))]
    elif mutation == "swap" and len(lines) > 4:  # two fields swapped
        i, j = draw(st.integers(3, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    elif mutation == "twice":  # a field twice
        lines.append(draw(st.sampled_from(lines)))
    elif mutation == "wrap":  # a line wrapped without a blank line
        i = draw(st.integers(0, len(lines) - 1))
        lines[i] = lines[i].replace(" ", "\n", 1).replace("，", "\n", 1)
    elif mutation == "text":  # any text
        lines.insert(draw(st.integers(0, len(lines))), draw(st.text(max_size=12)))
    return lines


@st.composite
def digests(draw: st.DrawFn) -> bytes:
    """Digests of well-formed records with, from none to many, the shapes of broken ones."""
    odds = draw(st.sampled_from([1000, 60, 15, 4]))
    venue = _pick(draw, odds, ["ICML", "NeurIPS"], ["", "机构 * X", "A" * 61, "中文会议", " ICLR "])
    parts = [venue]
    for record in draw(st.lists(records(odds), max_size=8)):
        parts.extend(record)
    text = ""
    for part in parts:
        text += part + _pick(draw, odds, ["\n\n"], SEPARATORS)
    if draw(st.booleans()):
        text = text.rstrip("\n")
    eol = _pick(draw, odds, ["\n"], ["\r\n", "\r"])
    content = text.replace("\n", eol).encode()
    if _pick(draw, odds, ["plain"], ["bom"]) == "bom":
        content = b"\xef\xbb\xbf" + content
    return content


@settings(max_examples=600, deadline=None)
@given(digests())
def test_generated_digests_give_the_same_results(content: bytes) -> None:
    assert_same(content)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["\n\n", "\n", " ", "\t", "\x0b", "\x1c", "\u3000", "\u2028", "："]),
            st.integers(0, 10**6),
        ),
        max_size=6,
    )
)
def test_control_and_white_space_characters_give_the_same_results(
    inserts: list[tuple[str, int]],
) -> None:
    text = generate_digest(random.Random(11), 0, 6, "ICML")
    for insert, where in inserts:
        i = where % (len(text) + 1)
        text = text[:i] + insert + text[i:]
    assert_same(text.encode())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=30),
            st.sampled_from(["", "ICML", "A Title", "中文标题", "Ann Lee, Bob Ray", "<html>"]),
            st.builds(
                "{}{}".format,
                st.sampled_from(["机构 * ", "AI总结 ", "Comments ", "Journal ref ", "AI 总结："]),
                st.text(max_size=20),
            ),
        ),
        max_size=25,
    ),
    st.sampled_from(["\n", "\n\n", "\r\n"]),
)
def test_digest_shaped_text_gives_the_same_results(lines: list[str], eol: str) -> None:
    assert_same(eol.join(lines).encode())
