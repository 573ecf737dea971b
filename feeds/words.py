"""How paperfeeds words things for people: counts, cut titles, suggestions, times. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta


def count(n: int, noun: str) -> str:
    """Return `1 paper`, `2 papers`, `1,000 topics`: the noun as its count wants it."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def shorten(text: str, width: int) -> str:
    """Return text cut to at most `width` characters at a word, with ` …` where it was cut
    (white space collapsed): textwrap.shorten's result, without wrapping the whole text
    (`feeds check` shortens thousands of titles; a description may be a megabyte)."""
    if len(text) <= width:
        return text
    if len(text) <= 4 * width:
        whole = " ".join(text.split())
        if len(whole) <= width:
            return whole
    line = ""
    for word in text[: 4 * width].split():  # enough words to fill the width
        longer = f"{line} {word}" if line else word
        if len(longer) + 2 > width:  # room for " …"
            break
        line = longer
    return f"{line} …" if line else text[: width - 1] + "…"


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


# Times and durations: one way of saying them, in UTC.


def say_time(
    when: datetime, *, seconds: bool = False, weekday: bool = False, today: datetime | None = None
) -> str:
    """Return a time as `2026-12-07 07:00 UTC`; with `seconds` `07:00:30`, with `weekday`
    `(Mon)` after it; `07:00 UTC` alone when it falls on the day of `today`."""
    when = when.astimezone(UTC)
    clock = "%H:%M:%S" if seconds else "%H:%M"
    same_day = today is not None and when.date() == today.astimezone(UTC).date()
    text = when.strftime(f"{clock} UTC" if same_day else f"%Y-%m-%d {clock} UTC")
    return f"{text} ({when:%a})" if weekday else text


def say_interval(seconds: float) -> str:
    """Return an interval as the settings write it: `15m`, `2h`, `1d`, `90s`."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size:g}{unit}"
    return f"{seconds:g}s"


def say_duration(d: timedelta) -> str:
    """Return how long, in its largest whole unit: `3 days`, `1 hour`, `45 seconds`."""
    total = int(d.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if total >= size:
            return count(total // size, unit).replace(",", "")
    return count(total, "second").replace(",", "")
