"""The fast matcher's shortcuts, each against what it stands for, and the fast matcher against
the straightforward one on papers and topics built to reach every path: regular expressions
and their literals, twins of ASCII letters, prefixes, Chinese terms, exclusions, fields in any
order, authors and institutions with accents, venues, and text holding the field separator."""

from __future__ import annotations

import random
import re
import unicodedata
import warnings

from hypothesis import example, given, settings
from hypothesis import strategies as st

from feeds.match.fast import _FIELD_SEP, Matcher
from feeds.match.reference import TopicMatcher, match_papers
from feeds.match.terms import IGNORECASE_ASCII_TWINS as _IGNORECASE_ASCII_TWINS
from feeds.match.terms import WORD as _WORD
from feeds.match.terms import WORD_CHARS as _WORD_CHARS
from feeds.match.terms import collapse_separators, compile_term, normalize, required_literal
from feeds.model import Institution, Paper
from feeds.text import CJK_CLASS
from feeds.topics import FIELDS, Criteria
from tests.test_match_equivalence import random_topics, seed_papers

# -- the pieces ------------------------------------------------------------------------------


def test_word_characters_are_those_of_the_word_class() -> None:
    word = re.compile(_WORD)
    for code in range(0x110000):
        char = chr(code)
        assert (char in _WORD_CHARS) == bool(word.match(char)), hex(code)


def test_twins_are_every_non_ascii_character_a_regex_takes_for_ascii_ignoring_case() -> None:
    ascii_class = re.compile("[A-Za-z0-9 ]", re.IGNORECASE)
    twins = [c for c in map(chr, range(0x80, 0x110000)) if ascii_class.fullmatch(c)]
    assert sorted(twins) == sorted(_IGNORECASE_ASCII_TWINS)
    for twin in twins:  # and a literal ignoring case takes them as the class does
        assert any(re.fullmatch(a, twin, re.IGNORECASE) for a in "iks")


_SEPARATORS = " \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u200a\u2028\u202f\u3000-_\u2010\u2015"
_separated = st.text(alphabet=st.sampled_from([*_SEPARATORS, "a", "b", "é", "扩"]), max_size=30)


@settings(max_examples=1000, deadline=None)
@given(_separated)
@example(" a")
@example("a - b")
@example("a \u3000b ")
@example("a      b")
def test_separator_runs_become_one_space(text: str) -> None:
    assert collapse_separators(text) == re.sub(r"[\s\-_\u2010-\u2015]+", " ", text)


def test_separator_runs_of_every_single_character() -> None:
    plain = re.compile(r"[\s\-_\u2010-\u2015]+")
    for code in range(0x110000):
        for text in (f"a{chr(code)} b", f" {chr(code)}"):
            assert collapse_separators(text) == plain.sub(" ", text), hex(code)


# Text where normalizing fields together could go wrong: combining marks and Hangul vowels
# that could join what ends the field before, full-width forms, separators, LaTeX dollars.
_TRICKY = [
    *"aAé É\u0301\u0308\u0338<\u1100\u1161\u11a8가ｌＬＭ，（）：\u3000$-_‐ı\u0130ſ\u212akK扩散",
    "LLM",
    "llm",
    "ab",
    "c++",
]
_tricky = st.lists(st.sampled_from(_TRICKY), max_size=12).map("".join)


@settings(max_examples=1000, deadline=None)
@given(st.lists(_tricky, min_size=1, max_size=6))
@example(["e", "\u0301x"])
@example(["\u1100", "\u1161"])
@example(["a ", " b", "-"])
def test_fields_normalized_together_as_apart(fields: list[str]) -> None:
    together = normalize(_FIELD_SEP.join(fields)).split(_FIELD_SEP)
    assert together == [normalize(f) for f in fields]


def test_every_single_character_normalizes_the_same_next_to_the_field_separator() -> None:
    for code in range(0x110000):
        if code == 0:
            continue
        char = chr(code)
        fields = [f"a{char}", f"{char}b"]
        assert normalize(_FIELD_SEP.join(fields)).split(_FIELD_SEP) == [
            normalize(f) for f in fields
        ], hex(code)


LITERALS = [
    ("reinforcement[- ]?(model|network)s?", "reinforcement"),
    ("^monitoring", "monitoring"),
    ("Diffusion", "diffusion"),
    ("abc(x|y)", "abc"),
    ("abc[|]", "abc"),
    (r"abc\|d", "abc"),
    ("abcd?", "abc"),
    ("abcd*", "abc"),
    ("abcd+", "abc"),
    ("abcd{2}", "abc"),
    ("abc d", "abc d"),
    ("abc|x", None),
    ("x|abc", None),
    ("(abc)", None),
    ("abc(?#)|x", None),
    ("abc(?#(|)x", None),
    ("ab", None),
    ("abc?", None),
    (r"\babc", None),
    ("(?i)abc", None),
    ("[abc]def", None),
    ("abc[]|]x|y", None),
    ("abc[^]|]x|y", None),
    ("abc(x)|y", None),
]


def test_required_literals() -> None:
    for source, literal in LITERALS:
        re.compile(source)
        assert required_literal(source) == literal, source


_pieces = st.sampled_from(
    [*("abc", "ab", "x", "|", "(", ")", "?", "*", "+", "{2}", "[", "]", "^", "[^", "(?:", "(?#"),
     *("\\|", "\\b", "\\", " ", ".")]
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(_pieces, min_size=1, max_size=8).map("".join), _tricky)
@example("abc", "ıabc")
@example("abcx|y", "y")
def test_a_regex_matches_only_text_holding_its_literal_or_a_twin(source: str, text: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # "possible nested set"
            pattern = re.compile(source, re.IGNORECASE)
    except re.error:
        return
    literal = required_literal(source)
    normalized = normalize(text)
    if literal is not None and pattern.search(normalized):
        assert literal in normalized or any(t in normalized for t in _IGNORECASE_ASCII_TWINS)


# -- the fast matcher against the straightforward one ------------------------------------------


def both(topics: list[tuple[str, Criteria]], papers: list[Paper]) -> tuple[list, list]:  # type: ignore[type-arg]
    slow = list(match_papers([(tid, TopicMatcher(c)) for tid, c in topics], papers))
    matcher = Matcher(topics)
    fast = [(tid, p.paper_id, hits) for p in papers for tid, hits in matcher.match(p)]
    return slow, fast


TERMS = [
    *("llm", "LLM*", "ll", "ab", "a b", "a-b", "ab*", "c++", "é", "e", "k", "ı", "Éa", "$a"),
    *("扩散", "扩散 模型", "模型LLM", "ＬＬＭ"),
    *("/l+m/", "/abc/", "/^ab/", "/ab?c/", "/llm|ab/", "/Kab/", "/IAB/", "/sab/", "/a\\x00b/"),
    *("/ab(c|d)/", "/^$/", "/x*/"),
]
NAMES = ["Émile Durand", "Emile Durand", "Zoë Ångström", "zoe angstrom", "A-B C", "a b c"]
VENUES = ["ICML", "icml ", " ICML", "NeurIPS", "ＩＣＭＬ", ""]
INSTITUTIONS = ["ETH Zürich", "eth zurich", "清华大学", "ab", "Kab", "ıab"]

_term_lists = st.lists(st.sampled_from(TERMS), min_size=1, max_size=4).map(tuple)
criteria = st.builds(
    Criteria,
    any=_term_lists | st.just(()),
    all=st.lists(_term_lists, max_size=2).map(tuple),
    none=st.lists(st.sampled_from(TERMS), max_size=2).map(tuple),
    fields=st.lists(st.sampled_from(FIELDS), min_size=1, max_size=6, unique=True).map(tuple),
    authors=st.lists(st.sampled_from(NAMES), max_size=2).map(tuple) | st.just(()),
    institutions=st.lists(st.sampled_from([*INSTITUTIONS, *TERMS]), max_size=2).map(tuple),
    venues=st.lists(st.sampled_from(VENUES[:4]), max_size=2).map(tuple),
)
_text = _tricky | st.just("") | st.sampled_from(["ab\x00c", "\x00", "llm\x00ab"])
papers = st.builds(
    Paper,
    paper_id=st.just("p"),
    title=_text,
    title_zh=_text | st.none(),
    authors=st.lists(st.sampled_from(NAMES), max_size=3).map(tuple),
    institutions=st.lists(
        st.builds(Institution, st.sampled_from(INSTITUTIONS) | _text, _text | st.none()),
        max_size=2,
    ).map(tuple),
    summary=_text | st.none(),
    comments=_text | st.none(),
    journal_ref=_text | st.none(),
    venue=st.sampled_from(VENUES) | st.none(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(criteria, min_size=1, max_size=6), st.lists(papers, min_size=1, max_size=4))
def test_same_results_for_arbitrary_topics_and_papers(
    topics: list[Criteria], paper_list: list[Paper]
) -> None:
    for c in topics:  # the terms are all valid
        for term in (*c.any, *(t for g in c.all for t in g), *c.none, *c.institutions):
            compile_term(term)
    slow, fast = both([(f"t{i}", c) for i, c in enumerate(topics)], paper_list)
    assert fast == slow


def test_same_results_with_regular_expressions_and_twins_on_the_seeds() -> None:
    regexes = ["/diffus(ion|e)/", "/^position:/", "/llms?/", "/model|推理/", "/infer/", "/dec/"]
    twin_papers = [
        Paper(
            paper_id=f"x{i}",
            title=f"Dıffusion {t} models",
            summary=f"ſpeculative {t} decoding",
            comments="Kernel work",
        )
        for i, t in enumerate(("LLM", "llms", "inference", "Position: a"))
    ]
    for seed in range(10):
        rng = random.Random(seed)
        topics = random_topics(rng, 40)
        topics += [
            (f"r{i}", Criteria(any=(rng.choice(regexes), "LLM"), fields=("summary", "title")))
            for i in range(5)
        ]
        topics += [(f"s{i}", Criteria(all=((rng.choice(regexes),),))) for i in range(3)]
        slow, fast = both(topics, [*seed_papers(), *twin_papers])
        assert fast == slow, f"seed {seed}"


def test_same_results_for_topics_of_every_kind_on_accented_and_odd_papers() -> None:
    papers = [
        Paper(paper_id="a", title="A b", authors=("Émile Durand", "Emile Durand"), venue="ICML"),
        Paper(paper_id="b", title="LLM", authors=("zoe angstrom",), venue="icml "),
        Paper(
            paper_id="c",
            title="c\x00d",
            institutions=(Institution("ETH Zürich", "苏黎世联邦理工学院"),),
            venue=None,
        ),
        Paper(paper_id="d", title="", summary="", comments="", venue=""),
    ]
    topics = [
        ("empty", Criteria()),
        ("none only", Criteria(none=("llm",))),
        ("venue", Criteria(venues=("icml",))),
        ("venue twice", Criteria(venues=("ICML", "icml"))),
        ("venue and term", Criteria(venues=("ICML",), any=("a",))),
        ("venue and regex", Criteria(venues=("ICML",), any=("/x*/",))),
        ("authors", Criteria(authors=("Emile Durand",))),
        ("authors twice", Criteria(authors=("Émile Durand", "emile durand"))),
        ("authors and venue", Criteria(authors=("Zoe Angstrom",), venues=("ICML",))),
        ("institutions", Criteria(institutions=("ETH Zurich", "eth zürich"))),
        ("institution regex", Criteria(institutions=("/^$/",))),
        ("terms and their duplicates", Criteria(any=("llm", "LLM", "llm"), all=(("llm",),))),
        ("venue field", Criteria(any=("icml",), venues=("ICML",), fields=("venue",))),
        ("separator", Criteria(any=("c",), fields=("title",))),
    ]
    slow, fast = both(topics, papers)
    assert fast == slow
    assert ("empty", "d", ()) in fast


def test_normalizing_does_not_change_nfkc() -> None:
    # The field separator is its own NFKC form and nothing composes with it.
    assert unicodedata.normalize("NFKC", _FIELD_SEP) == _FIELD_SEP
    assert unicodedata.combining(_FIELD_SEP) == 0
    assert not _FIELD_SEP.isspace()
    assert _FIELD_SEP not in _WORD_CHARS


def compile_term_by_definition(text: str) -> tuple[str, str | None, bool, bool]:
    """compile_term as first written: (pattern source, key, left, right)."""
    word = r"[0-9a-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff\u1e00-\u1eff]"
    raw = text.strip()
    if len(raw) >= 2 and raw.startswith("/") and raw.endswith("/"):
        return raw[1:-1], None, False, False
    term = unicodedata.normalize("NFKC", raw).casefold()
    prefix = term.endswith("*")  # on a CJK term too, where a substring is a prefix already
    split = re.split(r"[\s\-_\u2010-\u2015]+", term.rstrip("*") if prefix else term)
    tokens = [t for t in split if t]
    key = " ".join(tokens)
    if re.search(f"[{CJK_CLASS}]", term):
        return re.escape(key), key, False, False
    left = re.match(word, tokens[0]) is not None
    right = not prefix and re.search(word + "$", tokens[-1]) is not None
    pattern = (f"(?<!{word})" if left else "") + re.escape(key) + (f"(?!{word})" if right else "")
    return pattern, key, left, right


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.sampled_from([*"aZé9 -_*‐\n\t$+.扩ＬI\u0130ß", "c++", "/"]), max_size=10).map(
        "".join
    )
)
@example("LLM*")
@example("扩散*")
@example("c++")
@example("a-")
def test_terms_compile_as_first_written(text: str) -> None:
    try:
        term = compile_term(text)
    except re.error:  # a bad expression, or nothing to match: as the definition would
        return
    assert (term.source, term.key, term.left, term.right) == compile_term_by_definition(text)
