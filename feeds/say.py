"""How the commands word counts for people."""

from __future__ import annotations


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
