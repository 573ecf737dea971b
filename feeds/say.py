"""How the commands word counts for people."""

from __future__ import annotations


def count(n: int, noun: str) -> str:
    """Return `1 paper`, `2 papers`, `1,000 topics`: the noun as its count wants it."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
