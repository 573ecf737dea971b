"""Parse a digest file's content into papers and diagnostics. Pure: bytes in, data out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from feeds.errors import DigestRejected
from feeds.model import Diagnostic, Institution, Paper, ParsedDigest
from feeds.text import clean_xml, has_cjk, is_xml_clean, paper_id

_NEWLINE = re.compile(r"\r\n|\r|\n")  # str.splitlines also splits on \f, \x1c, \u2028...
_LATIN = re.compile(r"[A-Za-z]")
_AUTHOR_SPLIT = re.compile(r"\s*(?:[,，;；、]|\s+and\s+)\s*")
_TITLE_PUNCT = re.compile(r"[:?!]|\s[-–—]\s")
_NAME_PARTICLES = {"de", "van", "von", "der", "da", "del", "di", "le", "la", "bin", "al"}
_PAREN_ZH = re.compile(r"^(?P<name>.*?)\s*（(?P<zh>[^（）]*)）?$")

# Field prefixes, in the order a record usually has them. The value is what follows.
_PREFIXED: tuple[tuple[str, re.Pattern[str]], ...] = (
    # The star (or a colon) is required: a Chinese title may begin with 机构 too.
    ("institutions", re.compile(r"^机构\s*[*＊:：]\s*(?P<value>.*)$")),
    ("summary", re.compile(r"^AI\s*总结\s*[:：]?\s*(?P<value>.*)$")),
    ("comments", re.compile(r"^Comments(?:\s*[:：]\s*|\s+|$)(?P<value>.*)$")),
    (
        "journal_ref",
        re.compile(r"^Journal[ -]ref(?:\s*[:：]\s*|\s+|$)(?P<value>.*)$", re.IGNORECASE),
    ),
)
_PREFIX_STARTS = frozenset("机AaCcJj")  # first letters of the prefixes: a cheap pre-check
_ORDER = {"title": 0, "title_zh": 1, "authors": 2, "institutions": 3, "summary": 4}
_ORDER |= {"comments": 5, "journal_ref": 6}
_LABEL = {"institutions": "机构", "summary": "AI总结", "comments": "Comments"}
_LABEL["journal_ref"] = "Journal ref"
MAX_TITLE = 500


@dataclass
class _Record:
    line: int
    fields: dict[str, str] = field(default_factory=dict)
    stage: int = 0


def decode(content: bytes, source: str) -> str:
    """Return the text of a digest, or raise DigestRejected saying why it is not one."""
    if not content.strip():
        raise DigestRejected("empty file", file=source)
    if b"\x00" in content[:65536]:
        raise DigestRejected("binary data (NUL bytes), not a text digest", file=source)
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        # The codec counts from after a byte-order mark; the message counts from the file's
        # first byte, as a hex editor would.
        at = e.start + (3 if content.startswith(b"\xef\xbb\xbf") else 0)
        raise DigestRejected(
            f"not UTF-8 text (byte 0x{content[at]:02x} at offset {at})", file=source
        ) from e
    head = text.lstrip()[:1024].lower()
    if head.startswith(("<!doctype", "<html", "<?xml")) or "<html" in head:
        raise DigestRejected("an HTML or XML page, not a digest (an error page?)", file=source)
    return text


def parse(content: bytes, source: str) -> ParsedDigest:
    """Return the venue, papers and problems of one digest file's content.

    Records that cannot be read are reported as diagnostics and skipped; a file that has no
    readable record at all is rejected with DigestRejected.
    """
    return _parse_text(_text(content, source), source)[0]


def _parse_text(text: str, source: str) -> tuple[ParsedDigest, int]:
    """Parse text: the fast path where it can vouch for records, the line loop elsewhere.

    Return what _parse_lines() returns, and how many of the papers the fast path read.
    """
    head = _HEAD.match(text)
    if head is None or not _looks_like_venue(venue := head["venue"]):
        return _parse_lines(text, source), 0
    end = len(text)
    papers: list[tuple[int, Paper]] = []
    diagnostics: list[Diagnostic] = []
    known: dict[str, Institution] = {}  # institutions by entry, for the whole file
    pos = head.end()
    line = text.count("\n", 0, pos) + 1
    read, pos, line, failed = _scan(text, pos, line, venue, False, known)
    papers += read
    fast = len(read)
    while pos < end:
        # The line loop reads from pos, the start of a record the fast path could not vouch
        # for, to the end of a record after which the fast path can read on. That is a record
        # the fast path reads, that begins a paragraph (a line after a blank line, so it does
        # not continue a field) and that _settles(); the line loop reads it too.
        start, start_line = pos, line
        at, at_line = failed, start_line + text.count("\n", start, failed)
        while (paragraph := _PARAGRAPH.search(text, at)) and paragraph.end() < end:
            at_line += text.count("\n", at, paragraph.end())
            at = paragraph.end()
            # after_comments=True: no Chinese title there, whatever the line before it is.
            read, pos, line, failed = _scan(text, at, at_line, venue, True, known)
            settling = _settling(text, at, len(read))
            if settling is None:
                if read:  # none of these records settles, so none after a paragraph in them
                    at, at_line = pos, line
                continue
            slow, settled = settling
            records = _read_records(_numbered(text[start:settled], start_line), source, diagnostics)
            papers += _papers(records, venue, source, diagnostics)
            papers += read[slow:]
            fast += len(read) - slow
            break
        else:
            records = _read_records(_numbered(text[start:], start_line), source, diagnostics)
            papers += _papers(records, venue, source, diagnostics)
            break
    return _result(venue, papers, diagnostics, source), fast


def _text(content: bytes, source: str) -> str:
    """Return the decoded text of a digest, cleaned, with plain newlines."""
    # Whole-text operations (C speed) before the per-line loop: this is the hot path of a
    # large ingest. Forbidden characters go first, so \x0b or \x1c never split or pad lines.
    text = decode(content, source)
    if not is_xml_clean(content, text):
        text = clean_xml(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _numbered(text: str, first: int = 1) -> list[tuple[int, str]]:
    """Return the non-blank lines of text, stripped, with their numbers (from `first`)."""
    return [(n, s) for n, line in enumerate(text.split("\n"), start=first) if (s := line.strip())]


def _parse_lines(text: str, source: str) -> ParsedDigest:
    """Parse a whole text one line at a time: the reference for every faster way."""
    diagnostics: list[Diagnostic] = []
    numbered = _numbered(text)
    venue: str | None = None
    if numbered and _looks_like_venue(numbered[0][1]):
        venue = numbered[0][1]
        numbered = numbered[1:]
    elif numbered:
        diagnostics.append(Diagnostic(source, numbered[0][0], "no venue line at the top"))
    records = _read_records(numbered, source, diagnostics)
    papers = _papers(records, venue, source, diagnostics)
    return _result(venue, papers, diagnostics, source)


def _read_records(
    numbered: list[tuple[int, str]], source: str, diagnostics: list[Diagnostic]
) -> list[_Record]:
    """Group numbered lines into records; report lines that belong to none."""
    records: list[_Record] = []
    current: _Record | None = None
    last_line = 0
    last_field: str | None = None  # a prefixed field that a following line may continue
    for index, (n, line) in enumerate(numbered):
        adjacent = n == last_line + 1
        last_line = n
        name, value = _classify(line) if line[0] in _PREFIX_STARTS else (None, line)
        if name in ("comments", "journal_ref"):
            following = numbered[index + 1][1] if index + 1 < len(numbered) else ""
            if _is_bare_zh(following):
                # "Comments on X" followed by a Chinese title is a paper's English title.
                name, value = None, line
        if name is None and adjacent and last_field and current is not None:
            # No blank line in between: the line wraps the field above it.
            sep = "" if has_cjk(current.fields[last_field][-1:] + line[:1]) else " "
            current.fields[last_field] += sep + line
            continue
        if name is None:
            stage = -1 if current is None else current.stage
            if stage == _ORDER["title"] and has_cjk(line):
                name = "title_zh"
            elif stage in (_ORDER["title"], _ORDER["title_zh"]) and looks_like_authors(line):
                name = "authors"
            else:
                # Anything else after a title is the next paper: the record before it
                # was cut short, and _problem() will say so.
                current = _Record(line=n)
                records.append(current)
                name = "title"
            last_field = None
        else:
            last_field = name
            if current is None:
                diagnostics.append(
                    Diagnostic(source, n, f"'{_LABEL[name]}' line before any paper title; skipped")
                )
                last_field = None
                continue
        assert current is not None
        if name in current.fields:
            current.fields[name] += " " + value
        else:
            current.fields[name] = value
        current.stage = max(current.stage, _ORDER[name])
    return records


def _papers(
    records: list[_Record], venue: str | None, source: str, diagnostics: list[Diagnostic]
) -> list[tuple[int, Paper]]:
    """Return the papers of the readable records; report the others."""
    papers: list[tuple[int, Paper]] = []
    for record in records:
        problem = _problem(record)
        if problem:
            diagnostics.append(Diagnostic(source, record.line, problem + "; record skipped"))
            continue
        papers.append((record.line, _paper(record, venue)))
    return papers


def _result(
    venue: str | None,
    papers: list[tuple[int, Paper]],
    diagnostics: list[Diagnostic],
    source: str,
) -> ParsedDigest:
    if not papers:
        # Said without quoting the file: what is not a digest may be anything (a secret
        # that a link in the inbox points to), and the message goes to logs and mails.
        reason = "not a digest: no paper records found"
        if diagnostics:
            blocks = "block of text" if len(diagnostics) == 1 else "blocks of text"
            reason += (
                f" ({len(diagnostics)} {blocks} could not be read as papers,"
                f" the first at line {diagnostics[0].line})"
            )
        raise DigestRejected(reason, file=source)
    return ParsedDigest(venue=venue, papers=tuple(papers), diagnostics=tuple(diagnostics))


# --- the fast path: one regex match per record of the common shape ------------------------
#
# Nearly every record is written the same way: the English title, the Chinese title and the
# authors, then `机构 * `, `AI总结 `, `Comments ` and `Journal ref ` lines (each optional, in
# this order), every field a line of its own and blank lines between the fields. _scan()
# reads such records with one match each, plus the few checks with which the line loop
# could decide otherwise. At a record it cannot vouch for, it steps back one record (whose
# fields a stray line could still extend); _parse_text() has the line loop read from there
# to where the fast path can take over again. The result is always the one _parse_lines()
# gives for the whole text: tests/test_digest_fast.py checks that.

_TEXT = r"\S[^\n]*(?<=\S)"  # a line's text without the white space at either end
# The end of a line, blank lines, and the white space that begins the next line.
_NEXT = r"(?:[^\S\n]*\n\s*|\s*\Z)"
_NEXT_AFTER_BLANK = r"(?:[^\S\n]*\n[^\S\n]*\n\s*|\s*\Z)"  # else it would continue the field
# Lines that _classify() reads as fields (this also matches some it does not: those records
# are left to the line loop). `\s*` may cross a line end; that only widens the match.
_NOT_FIELD = (
    r"(?!机构\s*[*＊:：]|AI\s*总结|Comments(?:[\s:：]|\Z)|(?i:Journal[ -]ref)(?:[\s:：]|\Z))"
)
# An authors line in a plain form that looks_like_authors() accepts and split_authors()
# splits at ", " (tests/test_digest_fast.py checks both): names of one to six words, words
# of ASCII or Latin letters without separators, `:?!` or a leading dash (so no ` - `); or a
# single name of up to five capitalized words.
_ASCII = r"\x22-\x2b\x2e-\x39\x3c-\x3e\x40-\x7e"  # printable, without space and !,-:;?
_WORD = rf"[{_ASCII}\u00c0-\u024f][{_ASCII}\u00c0-\u024f-]*+"
_NAME = rf"{_WORD}(?: {_WORD}){{0,5}}+"
_CAPITALIZED = rf"[A-Z][{_ASCII}-]*+"
_NAMES = rf"{_NAME}(?:, {_NAME})++|{_CAPITALIZED}(?: {_CAPITALIZED}){{0,4}}+"
_VALUE = r"[^\s:：][^\n]*(?<=\S)"  # what follows the prefix, as _classify() reads it
_HEAD = re.compile(rf"\s*(?P<venue>{_TEXT}){_NEXT}")
_PARAGRAPH = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line, up to the next line's text
_WHITE_TO_END = re.compile(r"\s*\Z")
_RECORD = re.compile(
    rf"(?P<title>{_NOT_FIELD}(?=[^A-Za-z\n]*[A-Za-z]){_TEXT}){_NEXT}"
    rf"(?P<title_zh>{_NOT_FIELD}{_TEXT}){_NEXT}"
    rf"{_NOT_FIELD}(?:(?P<names>{_NAMES})(?=[^\S\n]*(?:\n|\Z))|(?P<authors>{_TEXT}))"
    rf"{_NEXT}"
    rf"(?:机构 \* (?P<institutions>{_TEXT}){_NEXT_AFTER_BLANK})?"
    rf"(?:AI总结 (?P<summary>{_VALUE}){_NEXT_AFTER_BLANK})?"
    rf"(?:Comments (?P<comments>{_VALUE}){_NEXT_AFTER_BLANK})?"
    rf"(?:Journal ref (?P<journal_ref>{_VALUE}){_NEXT_AFTER_BLANK})?"
)


def _scan(
    text: str,
    pos: int,
    line: int,
    venue: str,
    after_comments: bool,
    known: dict[str, Institution],
) -> tuple[list[tuple[int, Paper]], int, int, int]:
    """Read records of the common shape from pos (line `line`) on, as the line loop would.

    `after_comments`: the line before pos may be a Comments or Journal ref line. Return the
    papers read, the offset and number of the line where the line loop must take over, and
    the offset of the record the fast path refused (both len(text) if nothing is left).
    """
    back, back_line = pos, line  # where the last record read begins
    papers: list[tuple[int, Paper]] = []
    match = _RECORD.match
    while m := match(text, pos):
        title, title_zh, names, authors, institutions, summary, comments, journal_ref = m.groups()
        if (
            len(title) > MAX_TITLE
            or not has_cjk(title_zh)
            # `Comments ...` before a Chinese line would be that record's English title
            or (after_comments and not title.isascii() and has_cjk(title))
        ):
            break
        if names is None or " and " in names or len(names) > 2000:
            names = authors or names or ""
            if not looks_like_authors(names):
                break
            author_names = split_authors(names)
        else:
            author_names = tuple(names.split(", "))
        if not title.isprintable() or "  " in title:  # white space other than single spaces
            title = " ".join(title.split())
        paper = Paper(  # positional: this runs for every paper
            paper_id(title),
            title,
            title_zh,
            author_names,
            _institutions(institutions, known) if institutions else (),
            summary,
            comments,
            journal_ref,
            venue,
        )
        papers.append((line, paper))
        after_comments = comments is not None or journal_ref is not None
        back, back_line = pos, line
        end = m.end()
        line += text.count("\n", pos, end)
        pos = end
    else:
        if _WHITE_TO_END.match(text, pos):
            return papers, len(text), line, len(text)
    # Lines after the last record read may still belong to it: the line loop reads it again.
    if papers:
        papers.pop()
    return papers, back, back_line, pos


def _settling(text: str, pos: int, count: int) -> tuple[int, int] | None:
    """Of `count` records the fast path read from pos, return how many there are up to the
    first that _settles(), and where it ends; None if none does."""
    for n in range(1, count + 1):
        m = _RECORD.match(text, pos)
        assert m is not None  # the fast path read it
        pos = m.end()
        if _settles(m):
            return n, pos
    return None


def _settles(m: re.Match[str]) -> bool:
    """Whether, whatever it read before, the line loop ends a record with this record's last
    line, at its authors or a field. (After a record cut short it may read the English title
    as authors, the Chinese title as a title, Chinese authors as a Chinese title, and a
    Chinese English title as a Chinese title: a field line after that settles it.)"""
    return not has_cjk(m["title"]) and (
        m["institutions"] is not None
        or m["summary"] is not None
        or m["comments"] is not None
        or m["journal_ref"] is not None
        or m["names"] is not None  # no CJK in those
        or not has_cjk(m["authors"])
    )


def _institutions(text: str, known: dict[str, Institution]) -> tuple[Institution, ...]:
    """split_institutions() of a value without white space at its end; `known` caches."""
    if text.endswith("纠错"):
        text = text[:-2].rstrip()
    result: list[Institution] = []
    for raw in text.split("；"):
        entry = raw.strip()
        if entry:
            institution = known.get(entry)
            if institution is None:
                institution = known[entry] = _institution(entry)
            result.append(institution)
    return tuple(result)


def _is_bare_zh(line: str) -> bool:
    return bool(line) and has_cjk(line) and _classify(line)[0] is None


def looks_like_authors(line: str) -> bool:
    """Return True for a line of person names (`A B, C D`), False for a title-like line."""
    if _TITLE_PUNCT.search(line) or len(line) > 2000:
        return False
    names = [x for x in _split_names(line) if x.strip()]
    if not names or any(len(x.split()) > 6 for x in names):
        return False
    if len(names) > 1:
        return True
    # One name: every word capitalized (or a particle such as "van"), like "Seunghan Lee".
    words = names[0].split()
    return len(words) <= 5 and all(
        w[:1].isupper() or w in _NAME_PARTICLES or has_cjk(w) for w in words
    )


def _looks_like_venue(line: str) -> bool:
    return len(line) <= 60 and not has_cjk(line) and _classify(line)[0] is None


def _classify(line: str) -> tuple[str | None, str]:
    for name, pattern in _PREFIXED:
        m = pattern.match(line)
        if m:
            return name, m.group("value").strip()
    return None, line


def _problem(record: _Record) -> str | None:
    title = record.fields["title"]
    if not _LATIN.search(title):
        return "expected an English title, found " + repr(title[:40])
    if len(title) > MAX_TITLE:
        return f"title line is {len(title)} characters long"
    if "authors" not in record.fields and "summary" not in record.fields:
        return f"paper {title[:60]!r} has neither authors nor summary (truncated?)"
    return None


def _paper(record: _Record, venue: str | None) -> Paper:
    f = record.fields
    title = " ".join(f["title"].split())
    return Paper(
        paper_id=paper_id(title),
        title=title,
        title_zh=f.get("title_zh") or None,
        authors=split_authors(f.get("authors", "")),
        institutions=split_institutions(f.get("institutions", "")),
        summary=f.get("summary") or None,
        comments=f.get("comments") or None,
        journal_ref=f.get("journal_ref") or None,
        venue=venue,
    )


def _split_names(text: str) -> list[str]:
    if " and " in text or not text.isascii():  # the general (slower) rule
        return _AUTHOR_SPLIT.split(text)
    return text.replace(";", ",").split(",")  # the common case: "A B, C D"


def split_authors(text: str) -> tuple[str, ...]:
    return tuple(" ".join(a.split()) for a in _split_names(text) if a.strip())


def split_institutions(text: str) -> tuple[Institution, ...]:
    """Return the institutions of a `机构` line: `A（甲） ； B（乙） 纠错`."""
    return _institutions(text.rstrip(), {})


def _institution(entry: str) -> Institution:
    m = _PAREN_ZH.match(entry)
    if m and "（" in entry and m.group("name"):
        return Institution(m.group("name"), m.group("zh").strip() or None)
    return Institution(entry)
