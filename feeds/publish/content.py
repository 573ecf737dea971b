"""A paper's body as HTML, shared by its feed items and its page, and the escaping every
renderer uses. Pure: same paper in, same text out."""

from __future__ import annotations

import re
from collections.abc import Callable

from markupsafe import escape

from feeds.model import Link, Paper
from feeds.publish.view import link_words, links_by_kind, safe_href, web_url

AI_LABEL = "AI summary (machine-written)"


def esc(text: str) -> str:
    """Escape like markupsafe (so pages stay byte-identical), without building Markup."""
    # Most titles have nothing to escape. Five `in` tests, not a loop over the characters:
    # a full build escapes several strings per reading-list row, millions of them.
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        return str(escape(text))
    return text


# A URL as comments write it, up to where prose takes over again: white space, quotes,
# angle brackets, CJK characters and punctuation (`代码见https://x/y）。`). Scheme-less only
# for the hosts papers name that way. links/extract.py finds and classifies the links;
# this only turns the text a reader sees into something to click.
_URL_IN_TEXT = re.compile(
    r"(?:https?://|(?<![\w.@/-])(?:www\.|(?:github\.com|gitlab\.com|huggingface\.co)/))"
    r"[^\s<>\"'`\u2000-\u206f\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]+",
    re.IGNORECASE,
)
_TRAILING = ".,;:!?*'\""
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _trim(url: str) -> str:
    """Return a URL found in prose without the punctuation that ended the sentence."""
    while url:
        last = url[-1]
        if last in _TRAILING or (last in _CLOSERS and url.count(last) > url.count(_CLOSERS[last])):
            url = url[:-1]
        else:
            break
    return url


def linkify(text: str) -> str:
    """Return text as HTML with its http(s) URLs as links (escaped; only web addresses are
    linked, `javascript:` and the like stay text)."""
    if "://" not in text and "www." not in text.lower() and ".co" not in text.lower():
        return esc(text)  # nearly every comment: "Accepted at ICML 2026"
    out, pos = [], 0
    for m in _URL_IN_TEXT.finditer(text):
        url = _trim(m.group())
        href = web_url(url if "://" in url else "https://" + url)
        if not href or not url:
            continue
        out.append(esc(text[pos : m.start()]))
        out.append(f'<a href="{esc(href)}">{esc(url)}</a>')
        pos = m.start() + len(url)
    out.append(esc(text[pos:]))
    return "".join(out)


def bdi(html: str) -> str:
    """Return HTML in a bidi isolate: a right-to-left override or embedding that a digest's
    text leaves open turns that text around, and not the rest of its line."""
    return f"<bdi>{html}</bdi>"


def _as_is(html: str) -> str:
    return html


def _institutions(paper: Paper, isolated: Callable[[str], str]) -> str:
    names = []
    for i in paper.institutions:
        name = isolated(esc(i.name))
        if i.name_zh and i.name_zh != i.name:
            name += f' (<span lang="zh">{isolated(esc(i.name_zh))}</span>)'
        names.append(name)
    return "; ".join(names)


def content_html(paper: Paper, links: tuple[Link, ...], *, isolate: bool = False) -> str:
    """Return the body of a paper as HTML: shared by its feed items and its page.

    Plain Python rather than a template: a full build renders it for every paper (a million
    pages) and for every feed item, and this is several times faster than Jinja's macro.
    Every value is escaped as autoescape would. The AI summary says it is machine-written;
    the links come last, each with its status in words.

    `isolate` (a page): each text of the digest that is not a paragraph of its own is a
    bidi isolate (see bdi). A feed's text has its bidi controls removed instead (see
    render.py)."""
    isolated = bdi if isolate else _as_is
    out = ""
    if paper.title_zh:
        out += f'<p lang="zh"><strong>{esc(paper.title_zh)}</strong></p>'
    if paper.authors:
        out += f"<p>{', '.join(isolated(esc(a)) for a in paper.authors)}</p>"
    if paper.institutions:
        # Not in italics: a browser slants CJK text it has no italic for.
        out += f'<p class="inst">{_institutions(paper, isolated)}</p>'
    if paper.abstract:
        out += f"<p><strong>Abstract.</strong> {esc(paper.abstract)}</p>"
    if paper.summary:
        out += f'<p><strong>{AI_LABEL}:</strong> <span lang="zh">{esc(paper.summary)}</span></p>'
    about = []
    if paper.venue:
        about.append(f"Venue: {isolated(esc(paper.venue))}")
    if paper.comments:
        about.append(f"Comments: {isolated(linkify(paper.comments))}")
    if paper.journal_ref:
        about.append(f"Journal ref: {isolated(linkify(paper.journal_ref))}")
    if about:
        out += f"<p>{'<br>'.join(about)}</p>"
    out += "\n"
    if not links:
        return out + "<p>No code or project link yet.</p>"
    out += "<ul>\n"
    for kind, group in links_by_kind(links):
        for link in group:
            href, text = safe_href(link), esc(link.url)
            shown = f'<a href="{esc(href)}">{text}</a>' if href else text
            out += f"<li>{esc(kind)}: {shown} — {esc(link_words(link))}"
            if link.source != "digest":
                out += f"; found via {esc(link.source)}"
            out += "</li>\n"
    return out + "</ul>"


def blurb(summary: str | None, abstract: str | None, limit: int = 110) -> tuple[str, bool]:
    """Return a one-line summary of a paper for a reading list, and whether it is the AI
    summary (machine-written): its first sentence, else the abstract's; at most `limit`
    characters, cut with an ellipsis."""
    text, ai = (summary, True) if summary else (abstract or "", False)
    if not text:
        return "", False
    text = " ".join(text.split())
    for stop in ("。", ". ", "；"):
        k = text.find(stop)
        if 0 < k < limit:
            return text[: k + len(stop)].rstrip(), ai
    return (text if len(text) <= limit else text[: limit - 1].rstrip() + "…"), ai
