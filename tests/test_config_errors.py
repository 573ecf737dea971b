"""Every error of a subscriptions file at once (SPEC "Subscriptions": "a config error ...
stops the run before anything is written, with every error of the file at once, each as
`file:line: message`"), and a `*` anywhere but at a term's end being one of them.

The YAML texts are built line by line with `y(...)`, so that a line number in a test is
the argument's position.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from feeds.config import load, load_subscriptions
from feeds.errors import ConfigError, ConfigErrors
from feeds.match.terms import compile_term, normalize
from tests.test_config import ROOT, write, y


def errors_of(path: Path) -> list[ConfigError]:
    """Return the errors loading path reports, each one (a single one as a list of one)."""
    with pytest.raises(ConfigError) as info:
        load_subscriptions(path)
    e = info.value
    return list(e.errors) if isinstance(e, ConfigErrors) else [e]


def places(errors: list[ConfigError]) -> list[tuple[int | None, str]]:
    return [(e.line, e.message) for e in errors]


# A bad topic id, a mistyped key and a bad term, each in a topic of its own.
THREE = y(
    "topics:",
    "  - id: Bad_ID",  # 2
    "    title: A",
    "    any: [x]",
    "  - id: b",
    "    title: B",
    "    any: [y]",
    "    nnone: [survey]",  # 8
    "  - id: c",
    "    title: C",
    '    any: ["/(unclosed/"]',  # 11
)


def test_every_error_of_the_file_is_reported_at_once_in_file_order(tmp_path: Path):
    path = write(tmp_path, THREE)
    with pytest.raises(ConfigErrors) as info:
        load_subscriptions(path)
    e = info.value
    assert [x.line for x in e.errors] == [2, 8, 11]
    assert all(x.file == str(path) for x in e.errors)
    assert "topic id 'Bad_ID' must be lowercase" in e.errors[0].message
    assert "unknown key 'nnone' in a topic — did you mean 'none'?" in e.errors[1].message
    assert "bad term '/(unclosed/' in any" in e.errors[2].message
    # One a line, each at its own place; the first is also the error's own place.
    assert str(e).splitlines() == [f"{path}:{x.line}: {x.message}" for x in e.errors]
    assert (e.file, e.line) == (str(path), 2)
    assert isinstance(e, ConfigError)  # what callers catch, exit status 2


def test_errors_within_one_topic_are_all_reported(tmp_path: Path):
    text = y(
        "topics:",
        "  - id: Not An Id",  # 2
        "    title: T",
        "    fields: [title, summry]",  # 4
        "    any:",
        "      - fine",
        '      - "/[a-/"',  # 7
        "      - also fine",
        '      - "/(/"',  # 9
        "    max_items: 0",  # 10
        "    venus: [ICML]",  # 11
    )
    found = errors_of(write(tmp_path, text))
    assert [e.line for e in found] == [2, 4, 7, 9, 10, 11]
    assert "unknown field 'summry' — did you mean 'summary'?" in found[1].message
    assert "bad term '/[a-/' in any" in found[2].message
    assert "bad term '/(/' in any" in found[3].message
    assert "max_items must be at least 1" in found[4].message
    assert "unknown key 'venus' in a topic — did you mean 'venues'?" in found[5].message


def test_errors_are_in_file_order_whatever_order_they_are_found_in(tmp_path: Path):
    """Keys are read in a fixed order, not the file's: `fields` before `id`, a duplicate
    id after its topic's terms. What is said follows the file."""
    text = y(
        "topics:",
        "  - id: a",
        "    title: A",
        "    any: [x]",
        "  - fields: [abstract]",  # 5
        '    none: ["/(/"]',  # 6
        "    id: Upper",  # 7
        "    title: B",
        "    any: [y]",
        "  - any: [z, '/[/']",  # 10
        "    id: a",  # the duplicate is said at its topic's first line
        "    title: C",
    )
    found = errors_of(write(tmp_path, text))
    assert [e.line for e in found] == [5, 6, 7, 10, 10]
    assert "unknown field 'abstract'" in found[0].message
    assert "bad term '/(/' in none" in found[1].message
    assert "topic id 'Upper'" in found[2].message
    messages = sorted(e.message for e in found[3:])
    assert messages[0].startswith("bad term '/[/' in any")
    assert messages[1] == "duplicate topic id 'a' (first at line 2)"


def test_a_duplicate_id_is_said_with_the_other_errors(tmp_path: Path):
    """Before, a duplicate id was only looked for once every topic was valid."""
    text = y(
        "topics:",
        "  - id: a",
        "    title: A",
        '    any: ["/(/"]',  # 4
        "  - id: a",  # 5
        "    title: Again",
        "    any: [y]",
    )
    found = errors_of(write(tmp_path, text))
    assert places(found)[1] == (5, "duplicate topic id 'a' (first at line 2)")
    assert found[0].line == 4


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(
            ("    titel: A", "    any: [x]"),
            "unknown key 'titel' in a topic — did you mean 'title'?",
            id="mistyped-title-is-not-also-missing",
        ),
        pytest.param(
            ("    title: A", "    anny: [x]"),
            "unknown key 'anny' in a topic — did you mean 'any'?",
            id="mistyped-criterion-is-not-also-no-criterion",
        ),
        pytest.param(
            ("    title: A", '    any: ["/(/"]'),
            "bad term '/(/' in any",
            id="bad-only-term-is-not-also-no-criterion",
        ),
        pytest.param(
            ("    title: A", "    like: {a: b}", "    unlike: [c]"),
            "like must be a list",
            id="bad-like-is-not-also-unlike-without-like",
        ),
    ],
)
def test_an_error_is_not_said_again_as_its_consequence(
    tmp_path: Path, lines: tuple[str, ...], expected: str
):
    """What follows from an error (a key missing because it was mistyped, no criterion
    because the only one is bad) is not a second error: the one fix mends both."""
    (e,) = errors_of(write(tmp_path, y("topics:", "  - id: a", *lines)))
    assert e.message.startswith(expected), e.message


def test_one_error_is_said_as_before(tmp_path: Path):
    """A file with one error raises that ConfigError itself, worded and placed as ever."""
    path = write(
        tmp_path, y("topics:", "  - id: a", "    title: A", "    any: [x]", "    nnone: [y]")
    )
    with pytest.raises(ConfigError) as info:
        load_subscriptions(path)
    e = info.value
    assert type(e) is ConfigError
    assert e.line == 5
    assert str(e) == f"{path}:5: {e.message}"
    assert e.message.startswith("unknown key 'nnone' in a topic — did you mean 'none'?")


def test_a_yaml_syntax_error_is_said_alone(tmp_path: Path):
    text = y("topics:", "  - id: Bad_ID", "    title: A", "    any: [x", "  - id: b")
    (e,) = errors_of(write(tmp_path, text))
    assert e.line == 4
    assert "YAML syntax" in e.message


def test_the_errors_survive_pickling(tmp_path: Path):
    with pytest.raises(ConfigErrors) as info:
        load_subscriptions(write(tmp_path, THREE))
    again = pickle.loads(pickle.dumps(info.value))
    assert isinstance(again, ConfigErrors)
    assert str(again) == str(info.value)
    assert [x.line for x in again.errors] == [2, 8, 11]


def test_a_failing_config_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = write(tmp_path, THREE)
    for _ in range(2):  # the second load reads the file again, and fails the same
        with pytest.raises(ConfigErrors) as info:
            load(path, None)
        assert [x.line for x in info.value.errors] == [2, 8, 11]
    assert not list((tmp_path / "cache").rglob("*.pickle"))
    fixed = THREE.replace("Bad_ID", "a").replace("nnone", "none").replace("(unclosed", "closed")
    path.write_text(fixed, encoding="utf-8")
    assert [t.id for t in load(path, None).topics] == ["a", "b", "c"]


def feeds(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "feeds", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "command",
    [
        ("check",),
        ("check", "--json"),
        ("run", "--public", "public", "--state", "state/feeds.db", "--inbox", "inbox"),
        ("run", "--json", "--public", "public", "--state", "state/feeds.db", "--inbox", "inbox"),
    ],
    ids=["check", "check-json", "run", "run-json"],
)
def test_the_commands_print_each_error_on_its_line_and_exit_2(
    tmp_path: Path, command: tuple[str, ...]
):
    (tmp_path / "inbox").mkdir()
    write(tmp_path, THREE, "subs.yaml")
    done = feeds(tmp_path, *command, "--subscriptions", "subs.yaml")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert [line.split(": ")[:2] for line in lines] == [
        ["error", "subs.yaml:2"],
        ["error", "subs.yaml:8"],
        ["error", "subs.yaml:11"],
    ], done.stderr
    assert "did you mean 'none'?" in lines[1]
    assert done.stdout == ""  # no JSON half-made of a config that does not load
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox", "subs.yaml"]  # nothing written


# --- a `*` inside a term -----------------------------------------------------------------

HEAD = ("topics:", "  - id: a", "    title: A")


@pytest.mark.parametrize(
    ("lines", "line", "term", "what"),
    [
        pytest.param(('    any: ["efficient * inference"]',), 4, "efficient * inference", "any",
                     id="lone-star"),
        pytest.param(("    any: [speculat* decoding]",), 4, "speculat* decoding", "any",
                     id="prefix-of-a-first-word"),
        pytest.param(("    any: ['*former']",), 4, "*former", "any", id="leading-star"),
        pytest.param(("    any: [x]", "    none: [sur*vey]"), 5, "sur*vey", "none", id="none"),
        pytest.param(("    all: [[a, 'b * c']]",), 4, "b * c", "all", id="all-group"),
        pytest.param(("    any:", "      - fine", "      - draft＊model"), 6, "draft＊model", "any",
                     id="full-width-star-block-list"),
    ],
)  # fmt: skip
def test_a_star_inside_a_term_is_an_error_at_its_line(
    tmp_path: Path, lines: tuple[str, ...], line: int, term: str, what: str
):
    """SPEC: "a `*` anywhere but at a term's end" is a config error. Inside a term it was
    the character itself, silently: `efficient * inference` found nothing."""
    (e,) = errors_of(write(tmp_path, y(*HEAD, *lines)))
    assert e.line == line
    assert e.message.startswith(f"bad term {term!r} in {what}: a '*' makes a prefix only at")
    assert "regular expression" in e.message


def test_a_star_in_an_institution_is_its_name(tmp_path: Path):
    """Institutions have names with a `*` in them (Singapore's A*STAR): not an error."""
    topics = load_subscriptions(write(tmp_path, y(*HEAD, "    institutions: [A*STAR]")))
    assert topics[0].criteria.institutions == ("A*STAR",)


def test_the_star_error_suggests_regular_expressions_that_work(tmp_path: Path):
    (e,) = errors_of(write(tmp_path, y(*HEAD, '    any: ["efficient * inference"]')))
    assert r"/efficient \w+ inference/ for any letters there" in e.message
    assert r"/efficient \* inference/ for the '*' itself" in e.message
    (e,) = errors_of(write(tmp_path, y(*HEAD, "    any: [A* search]")))
    assert r"/A\w* search/" in e.message
    assert r"/A\* search/" in e.message
    (e,) = errors_of(write(tmp_path, y(*HEAD, "    any: ['(a+b)*c']")))
    assert r"/\(a\+b\)\w*c/" in e.message  # what else is regular-expression syntax, escaped
    # The suggestions are valid terms, and find what they say.
    text = y(*HEAD, r"    any: ['/efficient \w+ inference/', '/A\* search/', '/A\w* search/']")
    (topic,) = load_subscriptions(write(tmp_path, text))
    wildcard, literal, prefix = (compile_term(t) for t in topic.criteria.any)
    assert wildcard.search(normalize("Efficient LLM Inference on Phones"))
    assert not wildcard.search(normalize("Efficient inference"))
    assert literal.search(normalize("Anytime A* Search, revisited"))
    assert prefix.search(normalize("Anytime search"))


def test_every_star_error_is_reported(tmp_path: Path):
    text = y(*HEAD, "    any:", "      - a*b", "      - fine*", "      - c * d", "    none: ['*x']")
    found = errors_of(write(tmp_path, text))
    assert [e.line for e in found] == [5, 7, 8]


@pytest.mark.parametrize(
    "term",
    ["LLM*", "large language model*", "推测解码", "/efficient .* inference/", "/a\\*b/", "LLM *"],
)
def test_a_star_at_the_end_and_in_a_regular_expression_is_fine(tmp_path: Path, term: str):
    (topic,) = load_subscriptions(write(tmp_path, y(*HEAD, f"    any: ['{term}']")))
    assert topic.criteria.any == (term,)
