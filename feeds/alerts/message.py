"""One alert message from the papers that entered a destination's topics. Pure: no clock,
no network.

The message is built once as plain data (groups of rows, every text cleaned and every URL
checked) and then written three ways: HTML for email, CommonMark for chat services (Apprise
turns it into each service's dialect), plain text for the rest. The three writers only
escape and lay out; what a paper shows is decided once, in `_row`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape
from urllib.parse import quote

from feeds.match.hits import matched_text
from feeds.model import Hit, Link, Paper
from feeds.publish.view import (
    Site,
    best_link,
    paper_path,
    safe_href,
    topic_path,
)
from feeds.words import first_authors

SUBJECT_TOPICS = 60  # characters of topic titles in a subject before "and N more topics"
SUMMARY_CHARS = 300  # of the summary line an email shows under a paper
# Links shown beside the title: code and project ones, and the paper itself once (its URL
# in words, scheme and all: a plain-text view of the HTML, as email clients and Apprise's
# text conversion show it, keeps only the words, and `localhost:8000/...` is no link).
_SHOWN_KINDS = ("paper", "code", "project")
# The end of an abstract's first sentence: a full stop (or ! ?) before a capital or a digit
# starting the next one; "e.g. the" and "Fig. 2" stay inside. A Chinese summary's: 。！？
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])|(?<=[。！？])")
_SPACE = re.compile(r"\s+")
# A mention a chat service acts on (Discord pings `@everyone` found anywhere in a message,
# Matrix `@room`): a zero-width space after `@` keeps the text and drops the ping.
_MENTION = re.compile(r"@(?=\w)")
# CommonMark (and Discord, Slack, Telegram): these format text or form links anywhere in a
# line (parentheses cannot form a link once `[` and `]` are escaped); the rest only at the
# start of a line.
_MD_INLINE = re.compile(r"([\\`*_\[\]~|])")
_MD_LINE_START = re.compile(r"^(\d+)?((?(1)[.)]|[#+=>-]))")  # `1.`, `1)`, `#`, `-`...
# `<` before what starts a tag or an autolink: Python-Markdown (which Apprise uses to turn
# Markdown into HTML for Matrix, Pushover...) has no escape for it and would pass `<b>` on
# as HTML, so a zero-width space after it is what keeps it text everywhere.
_MD_TAG = re.compile(r"<(?=[A-Za-z/!?])")
# URLs are http(s) URLs already (safe_href); these would end or break a Markdown link.
_MD_URL = re.compile(r"[\s()<>\\]")


@dataclass(frozen=True)
class NewPaper:
    """A paper that entered one of a destination's topics: one row of a message."""

    paper: Paper
    topic_id: str
    topic_title: str
    entered: datetime
    links: tuple[Link, ...] = ()
    matched: tuple[Hit, ...] = ()


@dataclass(frozen=True)
class Message:
    subject: str  # plain text
    html: str
    markdown: str  # CommonMark
    text: str


@dataclass(frozen=True)
class _Row:
    """A paper as a message shows it: cleaned text, http(s) URLs only."""

    title: str
    href: str
    title_zh: str | None
    byline: str | None  # first authors, venue
    matched: str | None
    links: tuple[tuple[str, str, str], ...]  # (label, href, shown text)
    topics: tuple[str, ...] = ()  # every topic it entered, when more than one
    summary: str | None = None  # email only: the abstract's first sentence, or the AI's


@dataclass(frozen=True)
class _Group:
    title: str
    href: str  # the topic's page
    count: int  # papers new in the topic
    rows: tuple[_Row, ...]  # at most the group's share of max_papers
    more: int  # papers new in the topic that no group lists
    elsewhere: int = 0  # papers new in the topic listed under an earlier topic


def compose(
    papers: Sequence[NewPaper],
    site: Site,
    max_papers: int | None = None,
    *,
    totals: Mapping[str, int] | None = None,
    distinct: int | None = None,
) -> Message:
    """Return the message announcing `papers`, grouped by topic, each paper once.

    Topics with the most new papers come first, papers newest first. A paper new in several
    topics is listed once, under the first of them, naming every topic it entered and why
    it matched in each; the other topics count it ("1 paper above"). `max_papers` caps the
    papers listed in all (None: no cap), shared out among the topics in turn so that a busy
    topic cannot crowd out a quiet one; each topic says how many more it has, with a link to
    its page.

    `totals` (papers new per topic) and `distinct` (papers new in all) count what `papers`
    holds only the newest of: a topic edited to take in a thousand old papers is read no
    further than the message lists.
    """
    if not papers:
        raise ValueError("an alert needs at least one paper")
    if max_papers is not None and max_papers < 0:
        raise ValueError("max_papers must be at least 0")
    totals = totals or {}
    topics = _by_topic(papers, totals)
    entered: dict[str, list[NewPaper]] = {}  # a paper's entries, in the topics' order
    for entries in topics:
        for entry in entries:
            entered.setdefault(entry.paper.paper_id, []).append(entry)
    placed: set[str] = set()
    own: list[list[NewPaper]] = []  # per topic: its papers no earlier topic holds
    for entries in topics:
        mine = [e for e in entries if e.paper.paper_id not in placed]
        placed.update(e.paper.paper_id for e in mine)
        own.append(mine)
    sizes = [max(len(es), totals.get(es[0].topic_id, 0)) for es in topics]
    # What a topic may list: its own papers, and those `papers` does not hold (beyond the
    # newest), which no other topic lists either.
    listable = [len(m) + s - len(es) for m, s, es in zip(own, sizes, topics, strict=True)]
    shares = _shares(listable, max_papers)
    groups = tuple(
        _Group(
            title=_clean(entries[0].topic_title),
            href=site.url(topic_path(entries[0].topic_id)),
            count=size,
            rows=tuple(_row(site, entered[e.paper.paper_id]) for e in mine[:share]),
            more=can - share,
            elsewhere=size - can,
        )
        for entries, mine, size, can, share in zip(topics, own, sizes, listable, shares,
                                                   strict=True)
    )  # fmt: skip
    count = max(distinct or 0, len(entered))
    subject = f"{_clean(site.title)}: {count} new {_plural(count, 'paper')} in {_topics(groups)}"
    return Message(subject, _html(groups, site), _markdown(groups, site), _text(groups, site))


def _by_topic(papers: Iterable[NewPaper], totals: Mapping[str, int]) -> list[list[NewPaper]]:
    """Return the papers per topic: busiest topic first, newest paper first; ties by name."""
    topics: dict[str, list[NewPaper]] = {}
    for entry in papers:
        topics.setdefault(entry.topic_id, []).append(entry)
    for entries in topics.values():
        entries.sort(key=lambda e: (e.paper.title.casefold(), e.paper.paper_id))
        entries.sort(key=lambda e: e.entered, reverse=True)
    return sorted(
        topics.values(),
        key=lambda es: (
            -max(len(es), totals.get(es[0].topic_id, 0)),
            es[0].topic_title.casefold(),
            es[0].topic_id,
        ),
    )


def _shares(sizes: list[int], cap: int | None) -> list[int]:
    """Return how many papers each topic lists: `cap` dealt out one at a time, in turn."""
    if cap is None or cap >= sum(sizes):
        return list(sizes)
    shares = [0] * len(sizes)
    left = cap
    while left:
        for i, size in enumerate(sizes):
            if left and shares[i] < size:
                shares[i] += 1
                left -= 1
    return shares


def _row(site: Site, entries: Sequence[NewPaper]) -> _Row:
    """Return what a message shows of a paper (`entries`: the topics it entered, the first
    the one it is listed under): the one place that decides it."""
    entry = entries[0]
    paper = entry.paper
    named, more = first_authors(paper.authors)
    byline = ", ".join(map(_clean, named)) + (" et al." if more else "")
    if paper.venue:
        byline = f"{byline} · {_clean(paper.venue)}" if byline else _clean(paper.venue)
    links: list[tuple[str, str, str]] = []
    alive = [x for x in entry.links if x.kind in _SHOWN_KINDS and x.status != "dead"]
    for link in sorted(alive, key=lambda x: _SHOWN_KINDS.index(x.kind)):
        href = safe_href(link)
        if not href:
            continue
        if any(href == seen or kind == link.kind == "paper" for kind, seen, _ in links):
            continue  # each URL once, and one paper link
        links.append((link.kind, href, _shown(href)))
    page = site.url(paper_path(paper.paper_id))
    links.append(("page", page, _shown(page)))
    # Why it matched in each topic it entered, each term once.
    hits = tuple(dict.fromkeys(hit for e in entries for hit in e.matched))
    return _Row(
        title=_clean(paper.title),
        href=best_link(site, paper, entry.links),
        title_zh=_clean(paper.title_zh) if paper.title_zh else None,
        byline=byline or None,
        matched=_clean(matched_text(hits)) if hits else None,
        links=tuple(links),
        topics=tuple(_clean(e.topic_title) for e in entries) if len(entries) > 1 else (),
        summary=_summary(paper),
    )


def _summary(paper: Paper) -> str | None:
    """Return a paper's summary line: the English abstract's first sentence, else the AI
    summary's, labelled as machine-written; cut to SUMMARY_CHARS."""
    if paper.abstract and paper.abstract.strip():
        said = _first_sentence(paper.abstract)
    elif paper.summary and paper.summary.strip():
        said = "AI summary: " + _first_sentence(paper.summary)
    else:
        return None
    return said if len(said) <= SUMMARY_CHARS else said[: SUMMARY_CHARS - 1].rstrip() + "…"


def _first_sentence(text: str) -> str:
    return _SENTENCE_END.split(_clean(text), maxsplit=1)[0].strip()


def _clean(text: str) -> str:
    """Return text on one line (a newline in a title must not start a heading or a list
    item) with mentions defused."""
    return _MENTION.sub("@\u200b", _SPACE.sub(" ", text).strip())


def _shown(href: str) -> str:
    """Return a URL as link text: the whole URL (see _SHOWN_KINDS)."""
    return href


_AMBIGUOUS = re.compile(r",|\band\b|&", re.IGNORECASE)  # what separates titles in a subject


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _topics(groups: Sequence[_Group]) -> str:
    """Return the topics for a subject: as many titles as fit, then "and N more topics".

    Titles that hold "and" or a comma are quoted, all of them: `LLM reasoning and RL and 1
    more topic` read as three topics, or as two."""
    quote = any(_AMBIGUOUS.search(g.title) for g in groups)
    names = [f"“{g.title}”" if quote else g.title for g in groups]
    titles = [names[0]]
    for name in names[1:]:
        if len(", ".join([*titles, name])) > SUBJECT_TOPICS:
            break
        titles.append(name)
    rest = len(groups) - len(titles)
    if rest:
        return f"{', '.join(titles)} and {rest} more {_plural(rest, 'topic')}"
    return ", ".join(titles)


def _more(group: _Group) -> str:
    if group.rows or group.elsewhere:
        return f"and {group.more} more"
    return f"{group.more} new {_plural(group.more, 'paper')}"


def _above(group: _Group) -> str:
    return f"{group.elsewhere} {_plural(group.elsewhere, 'paper')} above, under another topic"


def _html(groups: Sequence[_Group], site: Site) -> str:
    def a(href: str, text: str) -> str:
        return f'<a href="{escape(href)}">{escape(text)}</a>'

    out: list[str] = []
    for group in groups:
        out.append(f"<h2>{a(group.href, group.title)} ({group.count} new)</h2>")
        if group.rows:
            out.append("<ul>")
            for row in group.rows:
                lines = [f"<b>{a(row.href, row.title)}</b>"]
                if row.title_zh:
                    lines.append(f'<span lang="zh">{escape(row.title_zh)}</span>')
                if row.byline:
                    lines.append(escape(row.byline))
                if row.topics:
                    lines.append(f"topics: {escape(', '.join(row.topics))}")
                if row.summary:
                    lines.append(escape(row.summary))
                if row.matched:
                    lines.append(f"matched: {escape(row.matched)}")
                lines.append(
                    " · ".join(f"{kind}: {a(href, shown)}" for kind, href, shown in row.links)
                )
                out.append(f"<li>{'<br>'.join(lines)}</li>")
            out.append("</ul>")
        if group.more:
            out.append(f"<p>{escape(_more(group))}: {a(group.href, _shown(group.href))}</p>")
        if group.elsewhere:
            out.append(f"<p>{escape(_above(group))}</p>")
    out.append(f"<p>— {a(site.base_url, site.title)}</p>")
    return "\n".join(out)


def _md(text: str) -> str:
    """Return text that CommonMark shows as written: nothing formats, nothing links."""
    text = _MD_TAG.sub("<\u200b", _MD_INLINE.sub(r"\\\1", text))
    return _MD_LINE_START.sub(r"\1\\\2", text)


def _md_link(href: str, text: str) -> str:
    return f"[{_md(text)}]({_MD_URL.sub(lambda m: quote(m.group(), safe=''), href)})"


def _markdown(groups: Sequence[_Group], site: Site) -> str:
    out: list[str] = []
    for group in groups:
        out.append(f"## {_md_link(group.href, group.title)} ({group.count} new)\n")
        for row in group.rows:
            # Two spaces end a line without ending the list item (a CommonMark hard break).
            lines = [f"- **{_md_link(row.href, row.title)}**"]
            if row.title_zh:
                lines.append(f"  {_md(row.title_zh)}")
            if row.byline:
                lines.append(f"  {_md(row.byline)}")
            if row.topics:
                lines.append(f"  topics: {_md(', '.join(row.topics))}")
            if row.matched:
                lines.append(f"  matched: {_md(row.matched)}")
            links = " · ".join(
                f"{kind}: {_md_link(href, shown)}" for kind, href, shown in row.links
            )
            lines.append(f"  {links}")
            out.append("  \n".join(lines))
        if group.more:
            out.append(f"\n{_md(_more(group))}: {_md_link(group.href, _shown(group.href))}")
        if group.elsewhere:
            out.append(f"\n{_md(_above(group))}")
        out.append("")
    out.append(f"— {_md_link(site.base_url, site.title)}")
    return "\n".join(out)


def _text(groups: Sequence[_Group], site: Site) -> str:
    out: list[str] = []
    for group in groups:
        out += [f"{group.title} ({group.count} new)", group.href, ""]
        for row in group.rows:
            out.append(f"* {row.title}")
            out += [f"  {line}" for line in (row.title_zh, row.byline) if line]
            if row.topics:
                out.append(f"  topics: {', '.join(row.topics)}")
            if row.matched:
                out.append(f"  matched: {row.matched}")
            out.append(f"  {row.href}")
            out += [f"  {kind}: {href}" for kind, href, _ in row.links if href != row.href]
            out.append("")
        if group.more:
            out += [f"{_more(group)}: {group.href}", ""]
        if group.elsewhere:
            out += [_above(group), ""]
    out.append(f"— {site.title} {site.base_url}")
    return "\n".join(out)
