"""A topic's terms compiled into what finds them in a paper's normalized text. Pure.

Term rules (SPEC "Subscriptions"): case-insensitive after NFKC; Latin terms match whole
words with space, hyphen and underscore alike; a CJK character next to a Latin term is a
word boundary; a trailing `*` makes a prefix; terms with CJK characters match as
substrings; `/.../` is a regular expression, in RE2's syntax and run by RE2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from feeds.text import fold, has_cjk

# Letters and digits of alphabetic scripts. CJK is deliberately absent: `扩散LLM推理`
# contains the word `LLM`, which Python's \b (CJK counts as \w) would not find.
WORD = r"[0-9a-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff\u1e00-\u1eff]"
# The same, as a set (a test checks every character); from the ranges, not by matching
# each character: that took 4 ms of every run that matches.
WORD_RANGES = ((0x30, 0x39), (0x61, 0x7A), (0xC0, 0x24F), (0x370, 0x4FF), (0x1E00, 0x1EFF))
WORD_CHARS = frozenset(chr(c) for lo, hi in WORD_RANGES for c in range(lo, hi + 1))
_SEP = r"[\s\-_\u2010-\u2015]+"
SPLIT = re.compile(_SEP)
# Separators but the space (\s is what str.isspace says; none is past U+3000, a test checks).
_WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and c != " ")
_OTHER_SEP = re.compile(f"[{_WHITESPACE}\\-_\u2010-\u2015]")


def collapse_separators(text: str) -> str:
    """Return text with each run of separators replaced by one space (as re.sub(_SEP, " ")
    does, without replacing the many spaces that are alone already)."""
    text = _OTHER_SEP.sub(" ", text)
    while "  " in text:
        text = text.replace("  ", " ")
    return text


class Searcher(Protocol):
    """A compiled expression as the matchers use it: Python's for literal terms, RE2's for
    /regex/ terms."""

    def search(self, text: str, /) -> object | None: ...


def regex_source(text: str) -> str | None:
    """Return the expression of a `/.../` term, or None for any other term."""
    raw = text.strip()
    return raw[1:-1] if len(raw) >= 2 and raw.startswith("/") and raw.endswith("/") else None


def compile_regex(source: str) -> Searcher:
    """Return a /regex/ term's expression compiled by RE2, ignoring case; raise re.error with
    RE2's reason for an expression RE2 does not run.

    RE2 takes time linear in the text: with a backtracking engine (Python's re), `(a+)+$` or
    `([a-z]+ ?)*:` against an ordinary title spins for ages, and so does every run, check and
    watch. What RE2 refuses (backreferences, lookarounds, possessive quantifiers) is refused
    at load, by the engine that would run it: no second judge of the syntax to disagree.
    """
    import re2  # a C extension: loaded only by a config that has regular expressions

    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False  # the reason goes into the config error, not onto stderr
    try:
        return _RE2Expression(re2.compile(source, options))
    except re2.error as e:
        reason = e.args[0] if e.args else "not a regular expression RE2 can run"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise re.error(f"{reason} (regular expressions are RE2's syntax)") from e


class _RE2Expression:
    """An expression compiled by RE2, searched for in text as UTF-8 bytes.

    Given str, RE2's module turns every match's byte offsets back into characters: 4 µs a
    search that matches, against 1 µs for the bytes, and a yes or no needs no offsets.
    Pickled with the expression, which RE2 pickles as its source and compiles when loaded.
    """

    __slots__ = ("expression",)

    def __init__(self, expression: Any) -> None:
        self.expression = expression

    def search(self, text: str, /) -> object | None:
        found: object | None = self.expression.search(text.encode())
        return found


@dataclass(frozen=True)
class Term:
    """A compiled term: what the user wrote, and how to find it in normalized text.

    `key` is the literal the term stands for in normalized text (None for a regular
    expression); `left`/`right` say whether a word boundary is needed at that edge. The
    regex `pattern` says the same for the straightforward matcher.
    """

    text: str
    source: str  # the regular expression that finds the term in normalized text
    key: str | None = None
    left: bool = False
    right: bool = False
    # What the fast matcher records a find under: the same literal with the same edges.
    variant: tuple[str, bool, bool] | None = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        variant = None if self.key is None else (self.key, self.left, self.right)
        object.__setattr__(self, "variant", variant)

    @cached_property
    def pattern(self) -> Searcher:
        # Compiled on first use: the fast matcher needs it only for /regex/ terms, and
        # compiling ten thousand patterns would dominate building it. A literal's pattern
        # is ours (lookarounds, which RE2 lacks, for its word edges) and cannot backtrack.
        return re.compile(self.source) if self.key is not None else compile_regex(self.source)

    def search(self, normalized: str) -> bool:
        return self.pattern.search(normalized) is not None


def normalize(text: str) -> str:
    """Return text as terms are matched against it: folded, separators one space.

    LaTeX dollars are dropped ("$k$-Means" holds the word "k-means").
    """
    return collapse_separators(fold(text.replace("$", "")))


def check_term(text: str) -> None:
    """Raise re.error when a term cannot be used (a /regex/ RE2 refuses, nothing to match)."""
    source = regex_source(text)
    if source is not None:
        compile_regex(source)
    elif not any(SPLIT.split(fold(text.strip()).rstrip("*"))):
        raise re.error(f"empty term {text!r}")


def compile_term(text: str) -> Term:
    """Return the compiled form of one subscription term; raise re.error for a bad regex."""
    source = regex_source(text)
    if source is not None:
        regex = Term(text, source)
        regex.pattern  # noqa: B018 -- compiled now, so that a bad expression fails at load time
        return regex
    term = fold(text.strip())
    cjk = has_cjk(term)
    # A trailing `*` is a prefix; a term with CJK characters matches as a substring, which
    # is a prefix already: `推测*` is `推测` (the `*` was kept as a character: no match).
    prefix = term.endswith("*")
    tokens = [t for t in SPLIT.split(term.rstrip("*") if prefix else term) if t]
    if not tokens:
        raise re.error(f"empty term {text!r}")
    key = " ".join(tokens)
    if cjk:  # a substring anywhere: CJK has no spaces between words
        return Term(text, re.escape(key), key)
    left = tokens[0][0] in WORD_CHARS  # the term starts (ends) with a word character
    right = not prefix and tokens[-1][-1] in WORD_CHARS
    pattern = (f"(?<!{WORD})" if left else "") + re.escape(key) + (f"(?!{WORD})" if right else "")
    return Term(text, pattern, key, left, right)


# Characters other than ASCII that a case-insensitive regular expression matches to an ASCII
# letter, digit or space (İ ı for i, ſ for s, the Kelvin sign for k; a test checks every
# character). Normalized text without them holds a literal a regular expression starts with
# only as the lowercase literal itself. These are Python's; RE2 takes only ſ and the Kelvin
# sign (another test checks), and more twins than needed only cost a little time.
IGNORECASE_ASCII_TWINS = "\u0130\u0131\u017f\u212a"
TWINS = re.compile(f"[{IGNORECASE_ASCII_TWINS}]")
_LEADING_LITERAL = re.compile(r"\^?([A-Za-z0-9 ]+)(.?)", re.DOTALL)


def required_literal(source: str) -> str | None:
    """Return lowercase text that every match of a regular expression (searched for without
    regard to case) contains, or None when there is none to tell cheaply.

    That is the literal the expression starts with, when nothing at its top level is an
    alternative to it (`abc|x` needs no `abc`) and no quantifier follows its last character.
    RE2's `\\Q...\\E` quotes text in which a bracket is a plain character (`abc\\Q(\\E|x`
    needs no `abc`): an expression with one is not read.
    """
    found = _LEADING_LITERAL.match(source)
    if found is None or "(?#" in source or "\\Q" in source or _alternation_at_top(source):
        return None
    literal = found.group(1)
    if found.group(2) and found.group(2) in "?*+{":  # `abc?` needs only `ab`
        literal = literal[:-1]
    return literal.lower() if len(literal) >= 3 else None


def _alternation_at_top(source: str) -> bool:
    """Return whether a regular expression has a `|` outside every group and class."""
    depth, i, n = 0, 0, len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            i += 1
        elif c == "[":
            i += 1
            if source.startswith("^", i):
                i += 1
            if source.startswith("]", i):  # a `]` first in a class is a literal
                i += 1
            while i < n and source[i] != "]":
                i += 2 if source[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            return True
        i += 1
    return False
