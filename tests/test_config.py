"""The config loader: every mistake in subscriptions.yaml / settings.yaml is a ConfigError
that names the file and the exact 1-based line, says what is wrong (with a suggestion where
one is obvious), and stops `feeds run` / `feeds check` with exit status 2 before anything is
written (SPEC "Subscriptions" and "Settings").

The tables are (yaml text, expected line, expected message fragment). The YAML texts are
built line by line with `y(...)` so that the expected line is the argument's position.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from feeds.config import (
    DEFAULT_FIELDS,
    Config,
    Criteria,
    Settings,
    load,
    load_settings,
    load_subscriptions,
)
from feeds.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def y(*lines: str) -> str:
    """Return the YAML text whose line N (1-based) is the N-th argument."""
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, text: str, name: str = "subscriptions.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def expect_error(
    load_fn: Callable[[Path], Any], path: Path, line: int | None, fragment: str
) -> ConfigError:
    """Assert that loading path fails at line with a message containing fragment."""
    with pytest.raises(ConfigError) as info:
        load_fn(path)
    e = info.value
    assert e.file == str(path)
    assert e.line == line, f"reported line {e.line}, expected {line}: {e.message}"
    assert fragment in e.message, f"{fragment!r} not in {e.message!r}"
    where = f"{path}:{line}" if line is not None else str(path)
    assert str(e) == f"{where}: {e.message}"
    return e


def load_one(tmp_path: Path, text: str) -> Any:
    """Return the single topic of a subscriptions text that must load."""
    (topic,) = load_subscriptions(write(tmp_path, text))
    return topic


# --- YAML syntax and the shape of the file ----------------------------------------------

SHAPE_ERRORS = [
    pytest.param(
        y("topics:", "  - id: a", "     title: A", "    any: [x]"),
        3,
        "YAML syntax",
        id="indentation-deeper",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "   any: [x]"),
        4,
        "YAML syntax",
        id="indentation-shallower",
    ),
    pytest.param(y("topics:", "  - id: a", "\ttitle: A"), 3, "\\t", id="tab-indent"),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any:", "\t- x"), 5, "\\t", id="tab-in-list"
    ),
    pytest.param(y("topics: []", "---", "topics: []"), 2, "YAML syntax", id="two-documents"),
    pytest.param("", None, "empty", id="empty-file"),
    pytest.param(y("# only a comment", ""), None, "empty", id="only-comments"),
    pytest.param(y("{}"), 1, "missing 'topics:'", id="topics-missing"),
    pytest.param(
        y("# my topics", "topic:", "  - id: a"), 2, "did you mean 'topics'", id="topics-misspelt"
    ),
    pytest.param(y("# c", "topics: hello"), 2, "topics must be a list", id="topics-scalar"),
    pytest.param(
        y("topics:", "  id: a", "  title: A"), 2, "topics must be a list", id="topics-map"
    ),
    pytest.param(y("topics:"), 1, "topics must be a list", id="topics-null"),
    pytest.param(y("- id: a", "  title: A"), 1, "must be a mapping", id="root-is-a-list"),
    pytest.param(y("just words"), 1, "must be a mapping", id="root-is-a-scalar"),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: [x]", "  - just-a-string"),
        5,
        "a topic must be a mapping",
        id="topic-scalar",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: [x]", "  - [b, c]"),
        5,
        "a topic must be a mapping",
        id="topic-list",
    ),
]


@pytest.mark.parametrize(("text", "line", "fragment"), SHAPE_ERRORS)
def test_syntax_and_shape_errors(tmp_path: Path, text: str, line: int | None, fragment: str):
    expect_error(load_subscriptions, write(tmp_path, text), line, fragment)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            y(
                "topics:",
                "  - id: a",
                "    title: A",
                "    any: [x, y",
                "  - id: b",
                "    title: B",
            ),
            id="followed-by-more",
        ),
        pytest.param(y("topics:", "  - id: a", "    title: A", "    any: [x, y"), id="at-eof"),
        pytest.param(
            y("topics:", "  - id: a", "    title: A", '    any: ["x, y]'), id="unclosed-quote"
        ),
    ],
)
def test_unclosed_bracket_points_at_the_bracket(tmp_path: Path, text: str):
    """The mistake is the `[` (or the `"`) on line 4. PyYAML notices it only at the next
    token (line 5: the next topic, or the end of the file, one line past the last one), so
    the report must either give line 4 or at least say that the list started at line 4."""
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_subscriptions(path)
    e = info.value
    assert "YAML syntax" in e.message
    assert e.line == 4 or "line 4" in e.message, f"line {e.line}: {e.message}"


def test_missing_file(tmp_path: Path):
    expect_error(load_subscriptions, tmp_path / "nope.yaml", None, "not found")


# --- unknown keys, with "did you mean" ---------------------------------------------------

TOPIC_HEAD = ("topics:", "  - id: a", "    title: A", "    any: [x]")

UNKNOWN_SUBSCRIPTION_KEYS = [
    pytest.param(y(*TOPIC_HEAD, "    nnone: [y]"), 5, "unknown key 'nnone'", "'none'", id="nnone"),
    pytest.param(
        y("topics:", "  - id: a", "    titel: A", "    any: [x]"),
        3,
        "unknown key 'titel'",
        "'title'",
        id="titel",
    ),
    pytest.param(
        y(*TOPIC_HEAD, "    max_item: 5"), 5, "unknown key 'max_item'", "'max_items'", id="max_item"
    ),
    pytest.param(y(*TOPIC_HEAD, "    feilds: [title]"), 5, "'feilds'", "'fields'", id="feilds"),
    pytest.param(y(*TOPIC_HEAD, "    venue: [ICML]"), 5, "'venue'", "'venues'", id="venue"),
    pytest.param(y(*TOPIC_HEAD, "    author: [X]"), 5, "'author'", "'authors'", id="author"),
    pytest.param(y(*TOPIC_HEAD, "topcs: []"), 5, "unknown key 'topcs'", "'topics'", id="top-level"),
]


@pytest.mark.parametrize(("text", "line", "fragment", "hint"), UNKNOWN_SUBSCRIPTION_KEYS)
def test_unknown_subscription_keys(tmp_path: Path, text: str, line: int, fragment: str, hint: str):
    e = expect_error(load_subscriptions, write(tmp_path, text), line, fragment)
    assert f"did you mean {hint}?" in e.message


def test_unknown_key_without_a_close_match_lists_the_known_keys(tmp_path: Path):
    e = expect_error(
        load_subscriptions,
        write(tmp_path, y(*TOPIC_HEAD, "    colour: blue")),
        5,
        "unknown key 'colour'",
    )
    assert "did you mean" not in e.message
    for known in ("any", "none", "venues"):
        assert known in e.message


UNKNOWN_SETTINGS_KEYS = [
    pytest.param(y("site:", "  titel: X"), 2, "'titel'", "'title'", id="site.titel"),
    pytest.param(
        y("site:", "  title: X", "  base_ur: http://x/"), 3, "'base_ur'", "'base_url'", id="base_ur"
    ),
    pytest.param(y("feed:", "  max_item: 5"), 2, "'max_item'", "'max_items'", id="feed.max_item"),
    pytest.param(y("links:", "  chek: true"), 2, "'chek'", "'check'", id="links.chek"),
    pytest.param(
        y("links:", "  allow_host: [x]"), 2, "'allow_host'", "'allow_hosts'", id="links.allow_host"
    ),
    pytest.param(y("schedule:", "  evry: 15m"), 2, "'evry'", "'every'", id="schedule.evry"),
    pytest.param(y("site: {}", "publicdir: out"), 2, "'publicdir'", "'public_dir'", id="top-level"),
]


@pytest.mark.parametrize(("text", "line", "fragment", "hint"), UNKNOWN_SETTINGS_KEYS)
def test_unknown_settings_keys(tmp_path: Path, text: str, line: int, fragment: str, hint: str):
    path = write(tmp_path, text, "settings.yaml")
    e = expect_error(load_settings, path, line, f"unknown key {fragment}")
    assert f"did you mean {hint}?" in e.message


# --- wrong types -------------------------------------------------------------------------

TYPE_ERRORS = [
    pytest.param(y(*TOPIC_HEAD[:3], "    any: {a: b}"), 4, "any must be a list", id="any-map"),
    pytest.param(y(*TOPIC_HEAD[:3], "    any:"), 4, "any", id="any-null"),
    pytest.param(y(*TOPIC_HEAD[:3], "    any: [x, true]"), 4, "any", id="any-true"),
    pytest.param(y(*TOPIC_HEAD[:3], "    any: [x, [y]]"), 4, "any", id="any-nested-list"),
    pytest.param(y(*TOPIC_HEAD[:3], "    all: [[a, [b]]]"), 4, "all", id="all-too-deep"),
    pytest.param(y(*TOPIC_HEAD[:3], "    all: {a: b}"), 4, "all must be a list", id="all-map"),
    pytest.param(y(*TOPIC_HEAD, "    max_items: ten"), 5, "must be a whole number", id="max-ten"),
    pytest.param(y(*TOPIC_HEAD, "    max_items: 0"), 5, "at least 1", id="max-zero"),
    pytest.param(y(*TOPIC_HEAD, "    max_items: -5"), 5, "at least 1", id="max-negative"),
    pytest.param(y(*TOPIC_HEAD, "    max_items: true"), 5, "must be a whole number", id="max-true"),
    pytest.param(y(*TOPIC_HEAD, "    max_items: 2.5"), 5, "must be a whole number", id="max-float"),
    pytest.param(
        y("topics:", "  - id: a", "    title: [a, b]", "    any: [x]"),
        3,
        "title must be text, not a list",
        id="title-list",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: true", "    any: [x]"), 3, "title", id="title-bool"
    ),
    pytest.param(y(*TOPIC_HEAD, "    description: {a: b}"), 5, "description", id="description-map"),
    pytest.param(
        y("topics:", "  - id: [a]", "    title: A", "    any: [x]"), 2, "id", id="id-list"
    ),
    pytest.param(y(*TOPIC_HEAD, "    venues: {ICML: 1}"), 5, "venues", id="venues-map"),
    pytest.param(y(*TOPIC_HEAD, "    authors: [[A, B]]"), 5, "authors", id="authors-nested"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), TYPE_ERRORS)
def test_wrong_types_in_subscriptions(tmp_path: Path, text: str, line: int, fragment: str):
    expect_error(load_subscriptions, write(tmp_path, text), line, fragment)


SETTINGS_TYPE_ERRORS = [
    pytest.param(y("links:", "  check: no"), 2, "true or false", id="check-no"),
    pytest.param(y("links:", "  check: yes"), 2, "true or false", id="check-yes"),
    pytest.param(y("links:", "  check: off"), 2, "true or false", id="check-off"),
    pytest.param(y("links:", "  check: 0"), 2, "links.check", id="check-zero"),
    pytest.param(y("feed:", "  max_items: true"), 2, "feed.max_items must be", id="feed-true"),
    pytest.param(y("feed:", "  max_items: ten"), 2, "feed.max_items must be", id="feed-ten"),
    pytest.param(y("feed:", "  max_items: 0"), 2, "at least 1", id="feed-zero"),
    pytest.param(
        y("site:", "  title: [a, b]"), 2, "site.title must be text, not a list", id="title"
    ),
    pytest.param(y("links:", "  concurrency: many"), 2, "links.concurrency", id="concurrency"),
    pytest.param(y("# c", "inbox: {a: b}"), 2, "inbox must be a list", id="inbox-map"),
    pytest.param(y("site: hello"), 1, "site must be a mapping", id="site-scalar"),
    pytest.param(y("schedule: 15m"), 1, "schedule must be a mapping", id="schedule-scalar"),
    pytest.param(y("- a"), 1, "must be a mapping", id="root-list"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), SETTINGS_TYPE_ERRORS)
def test_wrong_types_in_settings(tmp_path: Path, text: str, line: int, fragment: str):
    expect_error(load_settings, write(tmp_path, text, "settings.yaml"), line, fragment)


def test_a_lone_scalar_is_a_list_of_one(tmp_path: Path):
    """`any: speculative decoding` means `any: [speculative decoding]`; a number is a term
    like any other (`any: 3` looks for the word 3), which is what the user typed."""
    text = y(
        "topics:", "  - id: a", "    title: A", "    any: speculative decoding", "    fields: title"
    )
    topic = load_one(tmp_path, text)
    assert topic.criteria.any == ("speculative decoding",)
    assert topic.criteria.fields == ("title",)
    topic = load_one(tmp_path, y("topics:", "  - id: a", "    title: A", "    any: 3"))
    assert topic.criteria.any == ("3",)


@pytest.mark.parametrize(
    ("key", "typed"),
    [
        pytest.param("any", "0x1F", id="hex"),
        pytest.param("any", "010", id="octal"),
        pytest.param("any", "3.10", id="float-trailing-zero"),
        pytest.param("any", "1_000", id="underscore"),
        pytest.param("any", "12:30", id="sexagesimal"),
        pytest.param("any", "2026-01-01", id="date"),
        pytest.param("any", "=", id="value-tag"),
        pytest.param("venues", "2.10", id="venue-float"),
        pytest.param("id", "010", id="id-octal"),
        pytest.param("title", "2026-01-01", id="title-date"),
        pytest.param("title", "1.10", id="title-float"),
    ],
)
def test_plain_scalars_stay_as_typed(tmp_path: Path, key: str, typed: str):
    """Text fields hold what the user typed. YAML 1.1 reads `0x1F` as 31, `010` as 8,
    `3.10` as 3.1, `1_000` as 1000, `12:30` as 750 (base 60), `2026-01-01` as a date (then
    refused as "tag 'tag:yaml.org,2002:timestamp' is not allowed", a tag nobody typed) and
    `=` as a "value" tag. A term, id or title must never be rewritten or refused that way
    (SPEC: "every value the config validator sees is what the user typed")."""
    fields = {"id": "a", "title": "A", "any": "[x]", key: typed}
    if key in ("any", "venues"):
        fields[key] = f"[{typed}]"
    text = y(
        "topics:",
        *(f"  {'-' if i == 0 else ' '} {k}: {v}" for i, (k, v) in enumerate(fields.items())),
    )
    topic = load_one(tmp_path, text)
    got = {"id": topic.id, "title": topic.title, "any": topic.criteria.any}
    got["venues"] = topic.criteria.venues
    assert got[key] == ((typed,) if key in ("any", "venues") else typed)


def test_yes_no_on_off_stay_strings(tmp_path: Path):
    text = y(
        "topics:", "  - id: a", "    title: no", "    any: [no, on, yes, off]", "    none: Off"
    )
    topic = load_one(tmp_path, text)
    assert topic.title == "no"
    assert topic.criteria == Criteria(any=("no", "on", "yes", "off"), none=("Off",))


# --- duplicates --------------------------------------------------------------------------

DUPLICATES = [
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: [x]", "    title: B"),
        5,
        "duplicate key 'title' (first at line 3)",
        id="key-in-topic",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: [x]", "    'id': b"),
        5,
        "duplicate key 'id' (first at line 2)",
        id="key-in-topic-quoted",
    ),
    pytest.param(
        y("topics:", "  - {id: a, title: A, any: [x], any: [y]}"),
        2,
        "duplicate key 'any' (first at line 2)",
        id="key-in-flow-mapping",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: [x]", "topics:", "  - id: b"),
        5,
        "duplicate key 'topics' (first at line 1)",
        id="top-level",
    ),
    pytest.param(
        y(*TOPIC_HEAD, "  - id: b", "    title: B", "    any: [y]", "  - id: a", "    title: C")
        + "    any: [z]\n",
        8,
        "duplicate topic id 'a' (first at line 2)",
        id="topic-id",
    ),
    pytest.param(
        y("topics:", "  - title: A", "    id: a", "    any: [x]", "  - title: B", "    id: a")
        + "    any: [y]\n",
        5,
        "duplicate topic id 'a' (first at line 2)",
        id="topic-id-not-first-key",
    ),
]


@pytest.mark.parametrize(("text", "line", "fragment"), DUPLICATES)
def test_duplicates(tmp_path: Path, text: str, line: int, fragment: str):
    expect_error(load_subscriptions, write(tmp_path, text), line, fragment)


def test_duplicate_key_in_settings(tmp_path: Path):
    text = y("site:", "  title: A", "links:", "  check: false", "site:", "  title: B")
    expect_error(
        load_settings,
        write(tmp_path, text, "settings.yaml"),
        5,
        "duplicate key 'site' (first at line 1)",
    )


# --- topic ids ---------------------------------------------------------------------------

BAD_IDS = [
    pytest.param('"All"', "lowercase", id="All"),
    pytest.param("all", "reserved", id="all"),
    pytest.param("../etc", "lowercase", id="dotdot"),
    pytest.param('"a/b"', "lowercase", id="slash"),
    pytest.param('"a\\\\b"', "lowercase", id="backslash"),
    pytest.param(".hidden", "lowercase", id="dot"),
    pytest.param("a.rss", "lowercase", id="extension"),
    pytest.param("a b", "lowercase", id="space"),
    pytest.param("-x", "lowercase", id="leading-hyphen"),
    pytest.param("a_b", "lowercase", id="underscore"),
    pytest.param("café", "lowercase", id="accent"),
    pytest.param("ａｂ", "lowercase", id="fullwidth"),
    pytest.param("推测解码", "lowercase", id="cjk"),
    pytest.param("x" * 64, "at most 63", id="64-chars"),
    pytest.param('""', "must not be empty", id="empty"),
    pytest.param('"  "', "must not be empty", id="blank"),
]


@pytest.mark.parametrize(("value", "fragment"), BAD_IDS)
def test_invalid_ids(tmp_path: Path, value: str, fragment: str):
    """Ids become file names (feeds/<id>.rss.xml, topics/<id>.html): nothing but
    ^[a-z0-9][a-z0-9-]{0,62}$, and never `all`. The error is on the id's own line."""
    text = y("topics:", "  - title: T", f"    id: {value}", "    any: [x]")
    expect_error(load_subscriptions, write(tmp_path, text), 3, fragment)


@pytest.mark.parametrize("value", ["a", "0", "x" * 63, "llm-2026", "a--b", "ab-"])
def test_valid_ids(tmp_path: Path, value: str):
    text = y("topics:", f"  - id: {value}", "    title: T", "    any: [x]")
    assert load_one(tmp_path, text).id == value


# --- criteria ----------------------------------------------------------------------------

CRITERIA_ERRORS = [
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    none: [survey]"),
        2,
        "no positive criterion",
        id="only-none",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    fields: [title]"),
        2,
        "no positive criterion",
        id="no-criteria",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    any: []"),
        2,
        "no positive criterion",
        id="empty-any",
    ),
    pytest.param(
        y("topics:", "  - id: a", "    title: A", "    all: [[]]"),
        4,
        "all",
        id="empty-all-group",
    ),
    pytest.param(y("topics:", "  - title: A", "    any: [x]"), 2, "needs 'id'", id="no-id"),
    pytest.param(y("topics:", "  - id: a", "    any: [x]"), 2, "needs 'title'", id="no-title"),
    pytest.param(
        y("topics:", "  - id: a", "    title: ''", "    any: [x]"),
        3,
        "title must not be empty",
        id="empty-title",
    ),
]


@pytest.mark.parametrize(("text", "line", "fragment"), CRITERIA_ERRORS)
def test_criteria_errors(tmp_path: Path, text: str, line: int, fragment: str):
    """`all: [[]]` is an item with no alternatives: it can never match, so the topic would
    silently stay empty; it must be refused like `any: []` alone."""
    expect_error(load_subscriptions, write(tmp_path, text), line, fragment)


@pytest.mark.parametrize(
    "criterion",
    ["venues: [ICML]", "authors: [Émile Durand]", "institutions: [KAIST]", "all: [[a, b], c]"],
)
def test_any_positive_criterion_alone_is_a_topic(tmp_path: Path, criterion: str):
    topic = load_one(tmp_path, y("topics:", "  - id: a", "    title: A", f"    {criterion}"))
    assert topic.criteria.positive
    assert topic.criteria.fields == DEFAULT_FIELDS


# --- terms and fields --------------------------------------------------------------------

TERM_ERRORS = [
    pytest.param(
        y(*TOPIC_HEAD[:3], '    any: [ok, "/(unclosed/"]'),
        4,
        "bad term '/(unclosed/'",
        id="regex-flow",
    ),
    pytest.param(
        y(*TOPIC_HEAD[:3], "    any:", "      - fine", "      - /(unclosed/"),
        6,
        "bad term '/(unclosed/'",
        id="regex-block-list",
    ),
    pytest.param(y(*TOPIC_HEAD, '    none: ["/[a-/"]'), 5, "bad term '/[a-/' in none", id="none"),
    pytest.param(
        y(*TOPIC_HEAD[:3], '    all: [[a, "/(/"]]'), 4, "bad term '/(/' in all", id="all-group"
    ),
    pytest.param(
        y(*TOPIC_HEAD, '    institutions: ["/*/"]'), 5, "in institutions", id="institutions"
    ),
    pytest.param(y(*TOPIC_HEAD[:3], '    any: [""]'), 4, "must not be empty", id="empty-string"),
    pytest.param(y(*TOPIC_HEAD[:3], '    any: ["   "]'), 4, "must not be empty", id="blank"),
    pytest.param(y(*TOPIC_HEAD[:3], '    any: ["*"]'), 4, "empty term", id="star"),
    pytest.param(y(*TOPIC_HEAD[:3], '    any: ["-"]'), 4, "empty term", id="hyphen"),
    pytest.param(y(*TOPIC_HEAD[:3], '    any: [x, "//"]'), 4, "'//'", id="empty-regex"),
    pytest.param(
        y(*TOPIC_HEAD, "    fields: [title, summry]"),
        5,
        "unknown field 'summry' — did you mean 'summary'?",
        id="field-flow",
    ),
    pytest.param(
        y(*TOPIC_HEAD, "    fields:", "      - title", "      - summry"),
        7,
        "unknown field 'summry' — did you mean 'summary'?",
        id="field-block-list",
    ),
    pytest.param(
        y(*TOPIC_HEAD, "    fields: [abstract]"), 5, "unknown field 'abstract'", id="field-unknown"
    ),
]


@pytest.mark.parametrize(("text", "line", "fragment"), TERM_ERRORS)
def test_term_and_field_errors(tmp_path: Path, text: str, line: int, fragment: str):
    """The line is the bad term's own line, also in a block list (not the list's first line).
    `//` is the empty regular expression: it matches every paper, so it is as empty a term
    as `*` and must be refused too."""
    expect_error(load_subscriptions, write(tmp_path, text), line, fragment)


def test_full_topic_loads(tmp_path: Path):
    text = y(
        "# a comment",
        "topics:",
        "  - id: speculative-decoding",
        "    title: Speculative decoding",
        "    description: Faster LLM inference",
        "    any: [speculative decoding, draft model, 推测解码]",
        "    all: [[diffusion, denoising], [language model, LLM*]]",
        "    none: [survey]",
        "    fields: [title, summary, comments]",
        "    authors: [Bryan Kian Hsiang Low]",
        "    institutions: [KAIST, 清华大学]",
        "    venues: [ICML]",
        "    max_items: 100",
        "  - id: b",
        "    title: B",
        '    any: ["/^position:/"]',
    )
    a, b = load_subscriptions(write(tmp_path, text))
    assert (a.id, a.title, a.description, a.max_items, a.line) == (
        "speculative-decoding",
        "Speculative decoding",
        "Faster LLM inference",
        100,
        3,
    )
    assert a.criteria == Criteria(
        any=("speculative decoding", "draft model", "推测解码"),
        all=(("diffusion", "denoising"), ("language model", "LLM*")),
        none=("survey",),
        fields=("title", "summary", "comments"),
        authors=("Bryan Kian Hsiang Low",),
        institutions=("KAIST", "清华大学"),
        venues=("ICML",),
    )
    assert (b.id, b.line, b.max_items, b.description) == ("b", 14, None, None)
    assert b.criteria.any == ("/^position:/",)


def test_the_shipped_subscriptions_load():
    topics = load_subscriptions(ROOT / "config" / "subscriptions.yaml")
    assert topics
    assert len({t.id for t in topics}) == len(topics)


# --- safety ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "line"),
    [
        pytest.param('topics: !!python/object/apply:os.system ["{cmd}"]', 1, id="root-value"),
        pytest.param(
            'topics:\n  - id: a\n    title: !!python/object/apply:os.system ["{cmd}"]\n'
            "    any: [x]",
            3,
            id="nested",
        ),
        pytest.param(
            "topics:\n  - id: a\n    title: A\n    any: [x]\n"
            '    description: !!python/object/new:os.system ["{cmd}"]',
            5,
            id="object-new",
        ),
        pytest.param('topics: !!python/name:os.system ""', 1, id="name"),
        pytest.param("topics:\n  - id: a\n    title: !!binary aGk=\n    any: [x]", 3, id="binary"),
        pytest.param("topics:\n  - id: a\n    title: !local A\n    any: [x]", 3, id="local-tag"),
        pytest.param("topics:\n  - id: a\n    title: A\n    any: !!set {{x: null}}", 4, id="set"),
        pytest.param("topics:\n  - id: a\n    <<: {{title: A}}\n    any: [x]", 3, id="merge-key"),
    ],
)
def test_python_and_custom_tags_are_refused(tmp_path: Path, template: str, line: int):
    marker = tmp_path / "pwned"
    path = write(tmp_path, template.format(cmd=f"touch {marker}") + "\n")
    e = expect_error(load_subscriptions, path, line, "tag")
    assert "not allowed" in e.message
    assert not marker.exists(), "a YAML tag ran a command"


def test_alias_bomb_is_refused_quickly(tmp_path: Path):
    """Billion laughs: 9**9 strings if expanded. Refused at the first alias, in well under
    a second, without building anything."""
    names = "abcdefghi"
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in itertools.pairwise(names):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    lines.append("topics: [*i]")
    path = write(tmp_path, y(*lines))
    started = time.perf_counter()
    e = expect_error(load_subscriptions, path, 2, "alias")
    assert time.perf_counter() - started < 1.0
    assert "*" in e.message or "alias" in e.message


def test_a_single_alias_is_refused_with_its_line(tmp_path: Path):
    text = y(
        "topics:", "  - id: a", "    title: A", "    any: &terms [x]", "  - id: b", "    title: B"
    )
    text += "    any: *terms\n"
    expect_error(load_subscriptions, write(tmp_path, text), 7, "alias")


def test_settings_are_loaded_safely_too(tmp_path: Path):
    marker = tmp_path / "pwned"
    text = y("site:", f'  title: !!python/object/apply:os.system ["touch {marker}"]')
    expect_error(load_settings, write(tmp_path, text, "settings.yaml"), 2, "not allowed")
    expect_error(
        load_settings,
        write(tmp_path, y("links:", "  check: &c true", "feed:", "  max_items: *c"), "s.yaml"),
        4,
        "alias",
    )
    assert not marker.exists()


# --- settings ----------------------------------------------------------------------------

GOOD_SETTINGS = [
    pytest.param("schedule: {every: 15m}", {"schedule_every": 900.0, "schedule_cron": None}),
    pytest.param("schedule:\n  every: 2h", {"schedule_every": 7200.0}),
    pytest.param("schedule: {every: 1d}", {"schedule_every": 86400.0}),
    pytest.param("schedule: {every: 30s}", {"schedule_every": 30.0}),
    pytest.param(
        'schedule: {cron: "0 7 * * *"}', {"schedule_cron": "0 7 * * *", "schedule_every": None}
    ),
    pytest.param("settle: 5s", {"settle": 5.0}),
    pytest.param("settle: 2m", {"settle": 120.0}),
    pytest.param(
        "site:\n  base_url: https://example.org/feeds", {"base_url": "https://example.org/feeds/"}
    ),
    pytest.param("site:\n  base_url: https://example.org/", {"base_url": "https://example.org/"}),
    pytest.param("site:\n  title: My papers", {"site_title": "My papers"}),
    pytest.param("feed:\n  max_items: 20", {"max_items": 20}),
    pytest.param("inbox: [a, b]", {"inbox": (Path("a"), Path("b"))}),
    pytest.param("inbox: digests", {"inbox": (Path("digests"),)}),
    pytest.param("public_dir: out\nstate: db/s.sqlite3", {"public_dir": Path("out")}),
    pytest.param(
        "sources: [https://example.org/d.txt]", {"sources": ("https://example.org/d.txt",)}
    ),
]


@pytest.mark.parametrize(("text", "expected"), GOOD_SETTINGS)
def test_good_settings(tmp_path: Path, text: str, expected: dict[str, Any]):
    s = load_settings(write(tmp_path, text + "\n", "settings.yaml"))
    for name, value in expected.items():
        assert getattr(s, name) == value, name


def test_links_settings(tmp_path: Path):
    text = y(
        "links:",
        "  check: false",
        "  allow_hosts: [intranet.example, 10.0.0.0/8]",
        "  timeout: 30s",
        "  concurrency: 4",
    )
    links = load_settings(write(tmp_path, text, "settings.yaml")).links
    assert links.check is False
    assert links.allow_hosts == ("intranet.example", "10.0.0.0/8")
    assert (links.timeout, links.concurrency) == (30.0, 4)
    links = load_settings(write(tmp_path, y("links:", "  check: true"), "settings.yaml")).links
    assert links.check is True


SETTINGS_ERRORS = [
    pytest.param(y("# c", "schedule: {every: 15x}"), 2, "'15x' is not a duration", id="15x"),
    pytest.param(y("schedule: {every: 15}"), 1, "'15' is not a duration", id="no-unit"),
    pytest.param(y("schedule: {every: -5m}"), 1, "is not a duration", id="negative"),
    pytest.param(y("schedule: {every: [15m]}"), 1, "schedule.every", id="every-list"),
    pytest.param(
        y("# c", 'schedule: {every: 15m, cron: "0 7 * * *"}'),
        2,
        "one of 'every' or 'cron'",
        id="every-and-cron",
    ),
    pytest.param(y("schedule: {}"), 1, "one of 'every' or 'cron'", id="neither"),
    pytest.param(y("settle: soon"), 1, "settle", id="settle"),
    pytest.param(y("links:", "  timeout: 10"), 2, "links.timeout", id="timeout-no-unit"),
    pytest.param(
        y("site:", "  base_url: example.org/feeds"), 2, "absolute http(s) URL", id="no-scheme"
    ),
    pytest.param(
        y("site:", "  base_url: localhost:8000"), 2, "absolute http(s) URL", id="hostport"
    ),
    pytest.param(y("site:", "  base_url: ftp://example.org/"), 2, "http(s)", id="ftp"),
    pytest.param(y("site:", "  base_url: https://"), 2, "absolute http(s) URL", id="no-host"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), SETTINGS_ERRORS)
def test_settings_errors(tmp_path: Path, text: str, line: int, fragment: str):
    expect_error(load_settings, write(tmp_path, text, "settings.yaml"), line, fragment)


NONSENSE_SETTINGS = [
    pytest.param(y("# c", "schedule: {every: 0s}"), 2, "schedule.every", id="every-0s"),
    pytest.param(y("links:", "  timeout: 0s"), 2, "links.timeout", id="timeout-0s"),
    pytest.param(y("links:", "  concurrency: 0"), 2, "links.concurrency", id="concurrency-0"),
    pytest.param(y("links:", "  concurrency: -3"), 2, "links.concurrency", id="concurrency-neg"),
    pytest.param(y("# c", "schedule: {cron: banana}"), 2, "cron", id="cron-garbage"),
    pytest.param(y("# c", 'schedule: {cron: "0 7 * *"}'), 2, "cron", id="cron-4-fields"),
    pytest.param(y("# c", 'schedule: {cron: "61 7 * * *"}'), 2, "cron", id="cron-minute-61"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), NONSENSE_SETTINGS)
def test_settings_nonsense_values_are_errors(tmp_path: Path, text: str, line: int, fragment: str):
    """Values of the right type that cannot work: a zero interval (a busy loop), a zero
    timeout, no or negative concurrency (nothing is ever checked), a cron expression that
    `feeds watch` would only refuse later. `feeds check` must catch them now."""
    expect_error(load_settings, write(tmp_path, text, "settings.yaml"), line, fragment)


def test_settings_defaults():
    s = load_settings(None)
    assert s == Settings()
    assert s.site_title
    assert s.base_url == "http://localhost:8000/"
    assert s.inbox == (Path("seeds"),)
    assert s.sources == ()
    assert s.public_dir == Path("public")
    assert not s.state.resolve().is_relative_to(s.public_dir.resolve())
    assert s.settle == 5.0
    assert s.max_items == 100
    assert s.links.check is True
    assert s.links.allow_hosts == ()
    assert s.links.timeout > 0
    assert s.links.concurrency > 0
    assert (s.schedule_every is None) != (s.schedule_cron is None)


@pytest.mark.parametrize("text", ["", "# nothing set yet\n", "{}\n"])
def test_empty_settings_file_means_defaults(tmp_path: Path, text: str):
    assert load_settings(write(tmp_path, text, "settings.yaml")) == Settings()


def test_missing_settings_file_given_explicitly_is_an_error(tmp_path: Path):
    expect_error(load_settings, tmp_path / "nope.yaml", None, "not found")


def test_load_combines_both(tmp_path: Path):
    subs = write(tmp_path, y(*TOPIC_HEAD))
    config = load(subs, None)
    assert isinstance(config, Config)
    assert config.settings == Settings()
    assert [t.id for t in config.topics] == ["a"]
    assert config.subscriptions_path == subs
    settings = write(tmp_path, y("feed:", "  max_items: 7"), "settings.yaml")
    assert load(subs, settings).settings.max_items == 7
    bad = write(tmp_path, y("feed:", "  max_items: 0"), "bad-settings.yaml")
    expect_error(lambda p: load(subs, p), bad, 2, "at least 1")


# --- the command line --------------------------------------------------------------------


@dataclass(frozen=True)
class Project:
    root: Path
    good: str  # the text of config/subscriptions.yaml

    def args(self, subscriptions: str) -> list[str]:
        return [
            "--subscriptions", subscriptions, "--inbox", "seeds", "--public", "public",
            "--state", "state/state.sqlite3", "--offline",
        ]  # fmt: skip

    def feeds(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEEDS")}
        return subprocess.run(
            [sys.executable, "-m", "feeds", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )

    def snapshot(self) -> dict[str, tuple[bytes, int]]:
        """Every file under public/ and the state, with its bytes and mtime_ns."""
        files = sorted((self.root / "public").rglob("*")) + sorted((self.root / "state").rglob("*"))
        return {
            str(p.relative_to(self.root)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in files
            if p.is_file()
        }


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A project folder after one good `feeds run`."""
    root = tmp_path_factory.mktemp("cli")
    shutil.copytree(ROOT / "seeds", root / "seeds")
    (root / "config").mkdir()
    good = (ROOT / "config" / "subscriptions.yaml").read_text(encoding="utf-8")
    good = good.rstrip("\n") + "\n"
    (root / "config" / "subscriptions.yaml").write_text(good, encoding="utf-8")
    p = Project(root, good)
    done = p.feeds("run", *p.args("config/subscriptions.yaml"))
    assert done.returncode == 0, done.stderr
    assert list((root / "public" / "feeds").glob("*.rss.xml"))
    return p


def _broken(good: str, extra: tuple[str, ...], line_in_extra: int) -> tuple[str, int]:
    """Return good + a blank line + extra lines, and the file line of extra[line_in_extra]."""
    first = len(good.splitlines()) + 2
    return good + "\n" + y(*extra), first + line_in_extra


BROKEN = [
    pytest.param(
        ("  - id: tabbed", "\ttitle: Tabbed", "    any: [x]"), 1, "YAML syntax", id="syntax-tab"
    ),
    pytest.param(
        ("  - id: extra", "    title: Extra", "    any: [x]", "    nnone: [y]"),
        3,
        "unknown key 'nnone' in a topic — did you mean 'none'?",
        id="unknown-key",
    ),
    pytest.param(
        ("  - id: hallucination", "    title: Again", "    any: [x]"),
        0,
        "duplicate topic id 'hallucination' (first at line ",
        id="duplicate-id",
    ),
]


@pytest.mark.parametrize(("extra", "index", "fragment"), BROKEN)
def test_cli_run_with_broken_config_exits_2_and_writes_nothing(
    project: Project, extra: tuple[str, ...], index: int, fragment: str
):
    text, line = _broken(project.good, extra, index)
    name = "config/broken.yaml"
    (project.root / name).write_text(text, encoding="utf-8")
    before = project.snapshot()
    assert any(k.startswith("public/feeds/") for k in before)
    time.sleep(0.01)  # a rewrite would get a later mtime_ns

    done = project.feeds("run", *project.args(name))

    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert lines, done.stderr
    assert lines[0].startswith(f"error: {name}:{line}: "), done.stderr
    assert fragment in lines[0]
    assert "Traceback" not in done.stderr
    assert project.snapshot() == before


def test_cli_check_with_broken_config_exits_2(project: Project):
    (project.root / "config" / "settings.yaml").write_text(
        y("site:", "  title: ok", "links:", "  check: no"), encoding="utf-8"
    )
    try:
        before = project.snapshot()
        done = project.feeds("check", *project.args("config/subscriptions.yaml"))
    finally:
        (project.root / "config" / "settings.yaml").unlink()
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(
        "error: config/settings.yaml:4: links.check must be true or false"
    )
    assert project.snapshot() == before


def test_cli_check_good_config_lists_every_topic(project: Project):
    done = project.feeds("check", *project.args("config/subscriptions.yaml"))
    assert done.returncode == 0, done.stderr
    ids = [t.id for t in load_subscriptions(project.root / "config" / "subscriptions.yaml")]
    assert f"ok, {len(ids)} topics" in done.stdout
    listed = {line.strip().split(":")[0] for line in done.stdout.splitlines()}
    assert set(ids) <= listed, done.stdout
