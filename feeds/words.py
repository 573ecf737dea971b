"""How paperfeeds words things for people: counts, cut titles, suggestions, times. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def count(n: int, noun: str) -> str:
    """Return `1 paper`, `2 papers`, `1,000 topics`: the noun as its count wants it."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def shorten(text: str, width: int) -> str:
    """Return text cut to at most `width` characters at a word, with `…` where it was cut."""
    if len(text) <= width:
        return text
    import textwrap  # only when a title is long

    cut = textwrap.shorten(text, width, placeholder=" …", break_on_hyphens=False)
    if cut == "…":  # one word longer than the width (or text without spaces): cut it
        return text[: width - 1] + "…"
    return cut


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ` — did you mean 'x'?` for the choice closest to a mistyped word, or ``."""
    import difflib  # only when there is a mistake to suggest a fix for

    hint = difflib.get_close_matches(word, list(choices), n=1)
    return f" — did you mean {hint[0]!r}?" if hint else ""


FIRST_AUTHORS = 3  # a list or a message names this many, then "et al."


def first_authors(authors: Sequence[str], n: int = FIRST_AUTHORS) -> tuple[list[str], bool]:
    """Return the authors a list or a message names, and whether there are more."""
    return list(authors[:n]), len(authors) > n


def et_al(authors: Sequence[str], n: int = FIRST_AUTHORS) -> str:
    """Return `A, B et al.`: the first `n` authors, and whether there are more."""
    named, more = first_authors(authors, n)
    return ", ".join(named) + (" et al." if more else "")
