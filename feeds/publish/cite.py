"""A paper as a reference manager sees it: its citation record, the Highwire `citation_*`
tags of its page (what Zotero's connector and Google Scholar read), and its BibTeX and
RIS entries, written by the libraries that own those formats (bibtexparser, rispy). Pure:
a paper and its links in, text out.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Literal

from feeds.model import ARXIV, Link, Paper
from feeds.publish.content import esc
from feeds.publish.view import web_url
from feeds.text import arxiv_doi, arxiv_id_of_url, doi_in, doi_of_url, strip_bidi

Kind = Literal["conference", "journal", "preprint"]

# A venue that names a journal rather than a conference (digests come from conferences).
_JOURNAL = re.compile(
    r"journal|transactions|letters|magazine|\breview\b|\bTMLR\b|\bJMLR\b|\bnature\b|\bscience\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?<!\d)(19[5-9]\d|20\d\d)(?!\d)")
_NEW_ARXIV_ID = re.compile(r"(\d\d)(\d\d)\.\d{4,5}")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Citation:
    """What a reference manager is told of a paper."""

    paper_id: str
    kind: Kind
    title: str
    authors: tuple[str, ...]
    year: str
    venue: str | None  # the conference or journal; None for a preprint
    abstract: str | None  # English, when known (never the Chinese AI summary)
    doi: str | None  # a known DOI, else arXiv's for a paper with an arXiv id
    arxiv_id: str | None
    category: str | None  # arXiv's primary category
    pdf_url: str | None
    url: str  # its page here: every link it has (its arXiv page among them), the same
    # address Zotero keeps for a saved page; and what tells a file's entries apart
    first_seen: datetime  # the earliest of papers that share a citation key keeps it plain
    given_key: str | None = None  # the key the state gave it (see feeds.state._keys)

    @cached_property
    def key(self) -> str:
        """Its citation key: the one the state gave it, else its base key (see base_key)."""
        return self.given_key or base_key(self)


def citation(
    paper: Paper, links: Iterable[Link], first_seen: datetime, page_url: str, key: str | None = None
) -> Citation:
    """Return a paper's citation record, from what the state knows of it (and the key the
    state gave it, if any)."""
    links = tuple(links)
    arxiv = paper.arxiv_id or next(
        (a for link in links if link.kind == "paper" and (a := arxiv_id_of_url(link.url))), None
    )
    doi = next((d for link in links if (d := doi_of_url(link.url))), None)
    doi = doi or doi_in(paper.journal_ref) or doi_in(paper.comments)
    if doi is None and arxiv:
        doi = arxiv_doi(arxiv)
    venue = paper.venue if paper.venue and paper.venue != ARXIV else None
    kind: Kind = (
        "preprint" if venue is None else "journal" if _JOURNAL.search(venue) else "conference"
    )
    pdf = f"https://arxiv.org/pdf/{arxiv}" if arxiv else None
    if pdf is None:  # a digest's link: only a web address (a reader's browser fetches it)
        pdf = next((url for link in links if _is_pdf(link) and (url := web_url(link.url))), None)
    return Citation(
        paper_id=paper.paper_id,
        kind=kind,
        title=_one_line(paper.title),
        authors=tuple(_one_line(a) for a in paper.authors if a.strip()),
        year=_year(paper, arxiv, first_seen),
        venue=_one_line(venue) if venue else None,
        abstract=_one_line(paper.abstract) if paper.abstract else None,
        doi=doi,
        arxiv_id=arxiv,
        category=paper.categories[0] if paper.categories else None,
        pdf_url=pdf,
        url=page_url,
        first_seen=first_seen,
        given_key=key,
    )


def _is_pdf(link: Link) -> bool:
    return link.kind == "paper" and link.url.lower().split("?")[0].endswith(".pdf")


def _one_line(text: str) -> str:
    """Return text on one line (RIS is line-based; a tag holds no newline), without bidi
    controls (a paper stored before ingest removed them may hold one)."""
    return _SPACE.sub(" ", strip_bidi(text)).strip()


def _year(paper: Paper, arxiv: str | None, first_seen: datetime) -> str:
    """Return the year a paper is cited by: the one its journal ref or comments give with
    the venue ("ICML 2026"), else its arXiv id's (2601.00001: 2026), else its arrival's."""
    for text in (paper.journal_ref, paper.comments):
        if text and (m := _YEAR.search(text)):
            return m.group(1)
    if arxiv and (m := _NEW_ARXIV_ID.fullmatch(arxiv)):
        return f"20{m.group(1)}"
    return str(first_seen.year)


# --- Highwire tags (a paper's page) ---


def meta_tags(c: Citation) -> str:
    """Return the `<meta name="citation_*">` tags of a paper's page, one a line, as
    Zotero's Embedded Metadata translator and Google Scholar's guidelines read them: a
    conference title makes a conference paper, a journal title a journal article."""
    tags: list[tuple[str, str]] = [("citation_title", c.title)]
    tags += [("citation_author", a) for a in c.authors]
    tags.append(("citation_publication_date", c.year))
    if c.kind == "conference" and c.venue:
        tags.append(("citation_conference_title", c.venue))
    elif c.kind == "journal" and c.venue:
        tags.append(("citation_journal_title", c.venue))
    if c.abstract:
        tags.append(("citation_abstract", c.abstract))
    if c.doi:
        tags.append(("citation_doi", c.doi))
    if c.arxiv_id:
        tags.append(("citation_arxiv_id", c.arxiv_id))
    if c.pdf_url:
        tags.append(("citation_pdf_url", c.pdf_url))
    # Escaped like every attribute: a digest is untrusted, and `"` would end the value.
    return "".join(f'<meta name="{name}" content="{esc(value)}">\n' for name, value in tags)


# --- Citation keys ---

_KEY_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "by", "can", "do", "does", "for", "from", "how", "in",
    "into", "is", "it", "its", "of", "on", "or", "our", "the", "their", "this", "to", "towards",
    "via", "we", "what", "when", "which", "with", "without",
))  # fmt: skip


def base_key(c: Citation) -> str:
    """Return a paper's citation key before collisions: the first author's family name,
    the year and the title's first word, in ASCII (`tang2026minedraft`)."""
    family = _ascii(c.authors[0].split()[-1]) if c.authors else ""
    words = (_ascii(w) for w in re.split(r"[\s\-–—:/]+", c.title))
    word = next((w for w in words if w and w not in _KEY_STOPWORDS), "")
    return f"{family or 'anon'}{c.year}{word}"


def _ascii(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", folded.lower())


def keys(citations: Sequence[Citation], taken: Iterable[str] = ()) -> list[str]:
    """Return a citation key for each, unique among them and apart from `taken` (the keys
    given before): papers that share a base key are told apart by a suffix (`a`, `b`, ...
    `z`, `aa`, ...) in order of arrival. The state keeps what this gives, for good."""
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(citations):
        groups.setdefault(base_key(c), []).append(i)
    out = [""] * len(citations)
    used = set(taken)
    reserved = set(groups) - used  # `smith2026a` may be another paper's base key
    for key, members in groups.items():
        members.sort(key=lambda i: (citations[i].first_seen, citations[i].paper_id))
        n = -1  # the plain key first, when it is free
        for i in members:
            while (candidate := key + _suffix(n)) in used or (
                n >= 0 and candidate in reserved
            ):  # fmt: skip
                n += 1
            out[i] = candidate
            used.add(candidate)
            n += 1
    return out


def _suffix(n: int) -> str:
    """Return the n-th suffix: a .. z, aa .. az, ba ...; none for -1."""
    letters = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        letters = chr(ord("a") + r) + letters
    return letters


# --- BibTeX ---

# What LaTeX treats specially, escaped; non-ASCII text stays UTF-8 (biber, and BibTeX with
# inputenc, read it; Zotero and JabRef import it as it is).
_LATEX = str.maketrans({
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "%": r"\%",
    "#": r"\#", "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
})  # fmt: skip
# A word with two capitals or more (an acronym, a name: LLM, MineDraft, DP-SGD) is braced,
# so that a style that lowercases titles keeps it as written.
_PROTECT = re.compile(r"(?<![\w{\\-])([\w-]*[A-Z][\w-]*[A-Z][\w-]*)")


# Math as titles write it (`$k$-Means`, `$O(n)$`) is kept as math: LaTeX sets it as the
# authors meant, and Zotero imports it as its text (it takes any two `$` in a field, even
# escaped ones, for math). Only what cannot form a command: no backslash, no braces, no
# `^^` (TeX's way of writing any character, a backslash too); digests are untrusted.
# A span opens on a `$` with no space after it and closes on one with no space before it
# and no digit (or `$`: `$$` is display math) after it, as pandoc reads `$`: in
# `Math $\alpha$ and $x$`, the `$` after \alpha opens nothing, and an odd `$` stays text
# (`\$`) instead of pairing with the next one.
_MATH = re.compile(r"\$(?! )(?:[A-Za-z0-9 +\-=<>()\[\],.:;'|/*]|[\^_](?![\^_]))+(?<! )\$(?![\d$])")


_LIGATURE = re.compile(r"-(?=-)|`(?=`)|'(?=')")  # `--` would be set as a dash, `` as a quote


def latex(text: str) -> str:
    """Return text for a BibTeX field: LaTeX's special characters escaped (but in the
    simple math of a title), and no two characters that LaTeX would join into another."""
    out, at = [], 0
    for m in _MATH.finditer(text) if "$" in text else ():
        out += [_escape(text[at : m.start()]), m.group()]
        at = m.end()
    return "".join(out) + _escape(text[at:])


def _escape(text: str) -> str:
    text = text.translate(_LATEX)
    return _LIGATURE.sub(r"\g<0>{}", text) if "--" in text or "``" in text or "''" in text else text


def _verbatim(text: str) -> str:
    """Return a URL or DOI for a verbatim field (url, doi): as it is (`%`, `~` and `_`
    are common there and no escape is read back), but the braces and backslash that would
    end the field or start a command, percent-encoded."""
    return text.replace("\\", "%5C").replace("{", "%7B").replace("}", "%7D")


def _title(text: str) -> str:
    return _PROTECT.sub(r"{\1}", latex(text))


# The particles a family name begins with (`de Ramirez`, `van der Berg`), lowercase as
# BibTeX's "von" part is: capitalised, "Van" or "De" is as often a given name (Nguyen Van An).
_PARTICLES = frozenset((
    "da", "dal", "dalla", "das", "de", "degli", "dei", "del", "della", "delle", "dello", "den",
    "der", "des", "di", "do", "dos", "du", "la", "le", "lo", "op", "ten", "ter", "van", "von",
    "zu", "zum", "zur",
))  # fmt: skip


def _family_given(name: str) -> tuple[str, str]:
    """Return a name's family name and given names: its last word with the particles before
    it (`Sarah Stewart de Ramirez`: `de Ramirez`, `Sarah Stewart`); the given names are the
    words before (none for a name of one word)."""
    words = name.split()
    start = len(words) - 1
    while start > 0 and words[start - 1] in _PARTICLES:
        start -= 1
    return " ".join(words[start:]), " ".join(words[:start])


def _names(authors: Sequence[str]) -> str:
    return " and ".join(map(_name, authors))


def _name(author: str) -> str:
    if re.search(r"\band\b", author, re.IGNORECASE):
        return f"{{{latex(author)}}}"  # a name holding the word "and" would be read as two
    family, given = _family_given(author)
    if " " in family and given:
        # BibTeX reads `de` as the "von" part either way, but Zotero takes the last word
        # alone for the family name of a name without a comma: the comma says where it is.
        return f"{latex(family)}, {latex(given)}"
    return latex(author)


def bibtex_entry(c: Citation, key: str) -> str:
    """Return a paper's BibTeX entry: @inproceedings (booktitle) for a conference paper,
    @article (journal) for a journal's, @misc with eprint and archivePrefix for an arXiv
    preprint."""
    from bibtexparser.model import Field

    entry_type, fields = _bibtex_fields(c)
    return _write_bibtex(entry_type, key, [Field(k, v) for k, v in fields])


def _bibtex_fields(c: Citation) -> tuple[str, list[tuple[str, str]]]:
    fields = [("title", _title(c.title))]
    if c.authors:
        fields.append(("author", _names(c.authors)))
    entry_type = "misc"
    if c.kind == "conference" and c.venue:
        entry_type = "inproceedings"
        fields.append(("booktitle", latex(c.venue)))
    elif c.kind == "journal" and c.venue:
        entry_type = "article"
        fields.append(("journal", latex(c.venue)))
    fields.append(("year", c.year))
    if c.arxiv_id:
        # archivePrefix for BibTeX styles, eprinttype for BibLaTeX (and for Zotero, which
        # then keeps the id: "arXiv: 2601.00001").
        fields += [("eprint", c.arxiv_id), ("archivePrefix", "arXiv"), ("eprinttype", "arxiv")]
        if c.category:
            fields.append(("primaryClass", latex(c.category)))
    if c.doi:
        fields.append(("doi", _verbatim(c.doi)))
    fields.append(("url", _verbatim(c.url)))
    if c.abstract:
        fields.append(("abstract", latex(c.abstract)))
    return entry_type, fields


def _write_bibtex(entry_type: str, key: str, fields: list[Any]) -> str:
    from bibtexparser.library import Library
    from bibtexparser.model import Entry
    from bibtexparser.writer import write

    # bibtexparser's own middleware braces each value (a year stays a bare number), applied
    # to the entry itself: through write_string, the library-wide pass around it took half
    # of an entry's time (a first build makes one for every paper, twice).
    entry = Entry(entry_type, key, fields)
    for middleware in _unparse_stack():
        entry = middleware.transform_entry(entry, None)
    return str(write(Library([entry]), bibtex_format=_format()))


@cache
def _unparse_stack() -> list[Any]:
    from bibtexparser.middlewares.parsestack import default_unparse_stack

    return list(default_unparse_stack(allow_inplace_modification=True))


@cache
def _format() -> Any:
    from bibtexparser.writer import BibtexFormat

    fmt = BibtexFormat()  # type: ignore[no-untyped-call]
    fmt.indent = "  "
    fmt.block_separator = "\n"
    return fmt


# --- RIS ---

_RIS_TYPES = {"conference": "CONF", "journal": "JOUR", "preprint": "GEN"}


def ris_entry(c: Citation, key: str) -> str:
    """Return a paper's RIS record: TY (CONF, JOUR; GEN for a preprint, as Zotero writes
    one), TI, one AU per author, PY, the venue (T2), AB, UR, DO, and its key as ID."""
    ref: dict[str, Any] = {"type_of_reference": _RIS_TYPES[c.kind], "title": c.title}
    if c.authors:
        ref["authors"] = [_family_first(a) for a in c.authors]
    ref["year"] = c.year
    if c.venue:
        ref["secondary_title"] = c.venue
    elif c.arxiv_id:
        ref["publisher"] = "arXiv"
    if c.abstract:
        ref["abstract"] = c.abstract
    ref["urls"] = [c.url]
    if c.doi:
        ref["doi"] = c.doi
    ref["id"] = key
    return str(_ris_writer().formats([ref]))


def _family_first(name: str) -> str:
    """Return a name as RIS writes it, "Family, Given" (see _family_given)."""
    family, given = _family_given(name)
    return f"{family}, {given}" if given else name


@cache
def _ris_writer() -> Any:
    from rispy import RisWriter

    class _Writer(RisWriter):  # type: ignore[misc]
        def set_header(self, count: int) -> str:
            return ""  # no "1." before each record: a record is written alone, then joined

    return _Writer()


# --- Entries written before ---

# Where an entry's page URL names its paper, and its key: entries are written one field a
# line and never hold a blank line, so a file is its entries joined by blank lines.
_PAGE_AT = {"bibtex": "\n  url = {", "ris": "\nUR  - "}
_KEY_AT = {"bibtex": "{", "ris": "\nID  - "}
_ENDS = {"bibtex": "\n}", "ris": "\nER  - "}  # an entry's last line: one cut short lacks it


def entry_blocks(fmt: str, document: str) -> dict[str, tuple[str, str]]:
    """Return the entries of a reading list's BibTeX or RIS file written before, by paper
    id: (its citation key, its text as written). An entry's text depends on its paper, its
    links and its key alone, so a publish takes unchanged papers' entries from here instead
    of making them again (a new digest in a broad topic adds a few entries to thousands).

    String methods, not a regular expression: a new digest reads every changed topic's
    files (200 MB for 100 broad topics of 10,000 papers)."""
    found: dict[str, tuple[str, str]] = {}
    page_at, key_at = _PAGE_AT[fmt], _KEY_AT[fmt]
    for block in document.split("\n\n"):
        page = block.find(page_at)
        page = block.find("/papers/", page) if page >= 0 else -1
        key = block.find(key_at)
        if page < 0 or key < 0 or not block.rstrip("\n").endswith(_ENDS[fmt]):
            continue  # not an entry of ours (a file cut short, say): made again
        key += len(key_at)
        key_end = block.find("," if fmt == "bibtex" else "\n", key)
        text = block if block.endswith("\n") else block + "\n"  # split took the newline
        found[block[page + 8 : page + 24]] = (block[key:key_end], text)
    return found


# A file's entries, each a line of its own (values are one line: see _one_line): the
# first line with the key, the page's URL (its paper id), and how the file ends. Each
# expression begins with a newline, not `^`: sre then looks for its literal start (the
# file is searched with a newline before it), ten times faster over a MB.
_LISTED = {
    "bibtex": (re.compile(r"\n@[a-z]+\{([^,\n]*),\n"),
               re.compile(r"\n  url = \{[^\n]*/papers/([^\n]{16})\.html\},?\n"),
               "\n}\n"),
    "ris": (re.compile(r"\nID  - ([^\n]*)\n"),
            re.compile(r"\nUR  - [^\n]*/papers/([^\n]{16})\.html\n"),
            "\nER  - \n"),
}  # fmt: skip


def listing(fmt: str, document: str) -> tuple[list[str], list[str]] | None:
    """Return the paper ids and the citation keys of a reading list's BibTeX or RIS file
    written before, in the file's order; None when it is not whole (cut short, or an entry
    without its key or page).

    A few expressions over the whole file, not a split into entries: a new digest puts a
    few entries on top of thousands (see feeds.publish.parts)."""
    keys_at, pages_at, end = _LISTED[fmt]
    if not document:
        return [], []
    if not document.endswith(end):
        return None
    text = "\n" + document
    keys, ids = keys_at.findall(text), pages_at.findall(text)
    entries = document.count("\n\n") + 1  # entries are joined by a blank line
    if not len(keys) == len(ids) == entries:
        return None
    return ids, keys


def on_top(
    documents: dict[str, bytes], rest: list[str], new: Sequence[tuple[Citation, str, str]]
) -> dict[str, bytes] | None:
    """Return a reading list's BibTeX and RIS files with the new papers' entries (newest
    first, each under the key the state gave it) before the files written last time,
    whole; None unless those files list `rest`, the topic's other papers, in order and
    under the same keys (a file cut short, a paper gone: taken apart instead)."""
    taken: list[str] | None = None
    for fmt, data in documents.items():
        try:
            listed = listing(fmt, data.decode("utf-8"))
        except UnicodeDecodeError:
            return None
        if listed is None or listed[0] != rest or (taken is not None and listed[1] != taken):
            return None
        taken = listed[1]
    texts: dict[str, list[bytes]] = {"bibtex": [], "ris": []}
    for _c, *entries in new:
        for fmt, entry in zip(("bibtex", "ris"), entries, strict=True):
            texts[fmt].append(entry.encode())
    return {fmt: b"\n".join([*texts[fmt], *([data] if data else [])])
            for fmt, data in documents.items()}  # fmt: skip


def entries_in(path: Path, fmt: str, dirty: set[str]) -> dict[str, tuple[str, str]]:
    """Return the entries of a reading-list file written before, by paper id (see
    entry_blocks), but those of changed papers ({} when there is none to read)."""
    try:
        document = path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return {}
    return {pid: e for pid, e in entry_blocks(fmt, document).items() if pid not in dirty}
