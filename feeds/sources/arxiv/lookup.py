"""arXiv's answer to a title lookup, read as link enrichment wants it (feeds.links.enrich
is handed parse_arxiv: the harvests' reader of arXiv's Atom reads lookups too)."""

from __future__ import annotations

from feeds.links.enrich import Found, LookupFailed
from feeds.sources.arxiv.atom import ArxivError, parse
from feeds.sources.arxiv.harvest import to_paper


def parse_arxiv(content: bytes) -> list[Found]:
    """Return the entries of an arXiv API answer, each with all a harvest would take of it
    (feeds.sources.arxiv reads the Atom: one reader of arXiv's answers)."""

    try:
        page = parse(content)
    except ArxivError as e:
        raise LookupFailed(f"arXiv's answer was not understood: {e.message}") from e
    found = []
    for entry in page.entries:
        paper = to_paper(entry)
        found.append(Found("arxiv", entry.title, entry.arxiv_id, paper.links, paper.as_paper()))
    return found
