"""The fast paths of the text helpers give exactly what their plain definitions give.

Paper ids are computed from `fold`, so a changed `fold` would change ids: these tests compare
against the definitions as they were first written."""

from __future__ import annotations

import re
import unicodedata
import uuid

from hypothesis import example, given, settings
from hypothesis import strategies as st

from feeds.text import (
    PAPER_NAMESPACE,
    clean_xml,
    fold,
    is_title_symbol,
    is_xml_clean,
    paper_id,
    paper_uuid,
    strip_accents,
    title_key,
)


def fold_by_definition(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def title_key_by_definition(title: str) -> str:
    """A title's key, character by character: letters and digits kept, title symbols (+ < = >
    # and Unicode math symbols but the minus and slash signs) as words of their own, every
    other character a space."""
    return " ".join(
        "".join(
            f" {c} " if is_title_symbol(c) else " " if re.fullmatch(r"[\W_]", c) else c
            for c in fold_by_definition(title)
        ).split()
    )


def old_title_key(title: str) -> str:
    """The key as first written, before title symbols were kept."""
    return " ".join(re.sub(r"[\W_]+", " ", fold_by_definition(title)).split())


def strip_accents_by_definition(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize(
        "NFC", "".join(c for c in decomposed if not unicodedata.combining(c))
    )


# Characters where normalization is subtle: full-width forms and their neighbours,
# combining marks (which may compose with what precedes them), Hangul jamo, ligatures,
# compatibility forms, case-folding expansions and the characters NFKC maps to spaces.
_TRICKY = (
    "，（）；：？！\u3000,()?:;! aAzZ09éÉ\u0301\u0300\u0323\u0338<=>\u1100\u1161\u11a8가"
    "ﬁﬀ½²ⅣＡｚ０\u00a0\u2000\u200bßẞİıſKΣσς\u0345ǅ\u212b\u00c5\u0130扩散模型\uff65\uff9e\u309a"
    "\u0f73\u0f71\u0f72\u0b47\u0b3e\u0dd9\u0dcf"
)
texts = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from(_TRICKY)),
    st.text(alphabet=st.characters(codec="utf-8")),
)


@settings(max_examples=3000, deadline=None)
@given(texts)
@example("Ａ，\u0301")
@example("，\u0338")
@example("a，b（c）；d：e？f！g\u3000h")
def test_fold_is_nfkc_then_casefold(text: str) -> None:
    assert fold(text) == fold_by_definition(text)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(texts, st.text(alphabet=st.characters(max_codepoint=127))))
@example("A $k$-Means Interpretation of Chain-of-Thought")
@example("snake_case: a__b -- c\t\x7f\x00!")
@example("ＤｙＬＬＭ：基于显著性标记选择（ＳＴＳ）")
def test_title_keys_and_paper_ids_are_unchanged(title: str) -> None:
    key = title_key_by_definition(title)
    assert title_key(title) == key
    if not any(map(is_title_symbol, fold_by_definition(title))):
        assert key == old_title_key(title)  # ids of titles without symbols never change
    assert paper_id(title) == uuid.uuid5(PAPER_NAMESPACE, key).hex[:16]
    assert paper_uuid(title) == str(uuid.uuid5(PAPER_NAMESPACE, key))


def test_title_key_of_every_ascii_character() -> None:
    variants = set()
    for code in range(128):
        title = f"a{chr(code)}b {chr(code)}"
        key = title_key_by_definition(title)
        assert title_key(title) == key
        assert paper_id(title) == uuid.uuid5(PAPER_NAMESPACE, key).hex[:16], hex(code)
        assert paper_uuid(title) == str(uuid.uuid5(PAPER_NAMESPACE, key)), hex(code)
        variants.add(paper_uuid(title)[19])
    assert variants == set("89ab")  # every variant digit was met


def test_xml_clean_says_whether_clean_xml_changes_the_text() -> None:
    # Every character alone and between others: a test on the bytes must not be fooled by
    # a neighbour's bytes (U+00A0 is \xc2\xa0; U+FFFD is \xef\xbf\xbd).
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue  # not in UTF-8 text: decoding rejects the file first
        for text in (chr(code), f"a\u00a0{chr(code)}\ufffdb"):
            assert is_xml_clean(text.encode(), text) == (clean_xml(text) == text), hex(code)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_xml_clean_of_any_text(text: str) -> None:
    assert is_xml_clean(text.encode(), text) == (clean_xml(text) == text)


def test_fold_of_every_single_character() -> None:
    for code in range(0x110000):
        char = chr(code)
        assert fold(char) == fold_by_definition(char), hex(code)
        assert fold(char + "，") == fold_by_definition(char + "，"), hex(code)
        assert fold("，" + char) == fold_by_definition("，" + char), hex(code)


@settings(max_examples=3000, deadline=None)
@given(texts)
@example("Émile Zoë Ångström")
@example("ETH Zürich ; 苏黎世联邦理工学院")
def test_strip_accents_drops_combining_marks(text: str) -> None:
    assert strip_accents(text) == strip_accents_by_definition(text)


def test_strip_accents_of_every_single_character() -> None:
    for code in range(0x110000):
        char = chr(code)
        assert strip_accents(char + "a") == strip_accents_by_definition(char + "a"), hex(code)


def test_text_said_to_have_no_combining_marks_has_none() -> None:
    from feeds.text import _MAYBE_MARKS

    for code in range(0x110000):
        char = chr(code)
        assert _MAYBE_MARKS.match(char) or not unicodedata.combining(char), hex(code)
