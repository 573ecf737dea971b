"""A reference manager's library, as a topic's `library:` names it: the items of a BibTeX /
BibLaTeX (`.bib`), RIS (`.ris`) or CSL JSON (`.json`) export, as Zotero, Better BibTeX,
JabRef and Mendeley write them, read with the parsers that own those formats (bibtexparser
with its LaTeX decoding, rispy, json): `load` reads the file, `parse` is pure.

An item is what a topic by example compares with (its title and abstract) and what tells
that a paper is already in the library (its DOI, arXiv id or title).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Any

from feeds.cache import Stamp, stamp, stamp_of
from feeds.errors import ConfigError
from feeds.model import Diagnostic, Library, LibraryItem
from feeds.text import arxiv_id, arxiv_id_of_url, clean_xml, normalize_doi

# Suffixes by kind, as reference managers name their exports.
KINDS = {
    ".bib": "bibtex", ".bibtex": "bibtex", ".biblatex": "bibtex",
    ".ris": "ris", ".json": "csljson",
}  # fmt: skip


def kind_of(name: str) -> str | None:
    """Return the kind of a library file by its suffix, or None for an unknown one."""
    dot = name.rfind(".")
    return KINDS.get(name[dot:].lower()) if dot >= 0 else None


def load(subscriptions: Path, name: str, line: int) -> Library:
    """Return the library file `name` (relative to the subscriptions file) that the
    subscriptions file names at `line`, read. A missing or unreadable file, one of an
    unknown kind and one without any item are ConfigErrors at that line."""
    where = str(subscriptions)
    kind = kind_of(name)
    if kind is None:
        kinds = ", ".join(sorted(KINDS))
        raise ConfigError(f"library {name!r}: not a file kind paperfeeds reads ({kinds}:"
                          " BibTeX or BibLaTeX, RIS, CSL JSON)", file=where, line=line)  # fmt: skip
    path = (subscriptions.parent / os.path.expanduser(name)).resolve()
    try:
        data, before = _read(path)
        text = data.decode("utf-8")
    except FileNotFoundError as e:
        why = f"not found (looked for {path})"
        raise ConfigError(f"library {name!r} {why}", file=where, line=line) from e
    except UnicodeDecodeError as e:
        why = "is not UTF-8 text (export it as UTF-8)"
        raise ConfigError(f"library {name!r} {why}", file=where, line=line) from e
    except OSError as e:
        why = f"cannot be read: {e.strerror or e}"
        raise ConfigError(f"library {name!r} {why}", file=where, line=line) from e
    library = parse(text, kind, where, line, name, str(path))
    return replace(library, stamp=before)


# A library file larger than this is refused: a reference manager's export of 50,000
# items with their abstracts is ~100 MB.
MAX_FILE = 256 * 1024 * 1024
_TRIES = 3  # reads of a file that keeps changing while it is read


def _read(path: Path) -> tuple[bytes, Stamp]:
    """Return a regular file's bytes and its stamp from before they were read, read again
    if it changed meanwhile (Better BibTeX rewrites its export whenever Zotero changes).
    A file still changing after a few reads is taken as last read, under the stamp from
    before that read, so the next run reads it again. Raises OSError, with the reason
    for anything but a regular file of at most MAX_FILE bytes (a FIFO would block the
    read for ever)."""
    for _ in range(_TRIES):
        # O_NONBLOCK: opening a FIFO waits for a writer otherwise; a regular file ignores it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if not S_ISREG(st.st_mode):
                what = (
                    "a folder" if S_ISDIR(st.st_mode) else "not a regular file (a pipe or device?)"
                )
                raise OSError(f"it is {what}: name an exported file")
            if st.st_size > MAX_FILE:
                raise OSError(f"it is larger than {MAX_FILE // 2**20} MB")
            with open(fd, "rb", closefd=False) as f:
                data = f.read(MAX_FILE + 1)
        finally:
            os.close(fd)
        if len(data) > MAX_FILE:
            raise OSError(f"it is larger than {MAX_FILE // 2**20} MB")
        before = stamp_of(st)
        if stamp(path) == before:
            break
    return data, before


def parse(text: str, kind: str, path: str, line: int, shown: str, file: str = "") -> Library:
    """Return the library in `text` (a file of `kind`, named `shown` in messages).

    Raises ConfigError (at `path`:`line`, the subscriptions file) when the file holds no
    item at all; an entry that cannot be read, or has no title, is skipped and said."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    reader: Callable[[str, str], Iterator[LibraryItem | Diagnostic]] = _READERS[kind]
    items: list[LibraryItem] = []
    skipped: list[Diagnostic] = []
    for found in reader(text, shown):
        if isinstance(found, LibraryItem):
            items.append(found)
        else:
            skipped.append(found)
    if not items:
        why = f"; {skipped[0].message} ({len(skipped)} skipped)" if skipped else ""
        raise ConfigError(f"library {shown!r} has no item with a title{why}", file=path, line=line)
    return Library(shown, line, tuple(items), tuple(skipped), len(items) + len(skipped), file)


def _item(
    shown: str, line: int, title: Any, abstract: Any, doi: Any, urls: list[str], arxiv: Any
) -> LibraryItem | Diagnostic:
    """Return an item from the fields a reader found, or why it is skipped."""
    title = _text(title)
    if not title:
        return Diagnostic(shown, line, "no title")
    found_doi = normalize_doi(doi) if isinstance(doi, str) else None
    found_arxiv = arxiv_id(arxiv) if isinstance(arxiv, str) else None
    if found_arxiv is None and found_doi:
        found_arxiv = arxiv_id(found_doi)  # 10.48550/arXiv.2601.00001
    for url in urls:
        found_arxiv = found_arxiv or arxiv_id_of_url(url)
        found_doi = found_doi or normalize_doi(url)
    return LibraryItem(title, _text(abstract) or None, found_doi, found_arxiv, line)


_SPACE = re.compile(r"\s+")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    return _SPACE.sub(" ", clean_xml(value[:MAX_FIELD])).strip()


def _bibtex(text: str, shown: str) -> Iterator[LibraryItem | Diagnostic]:
    from bibtexparser.entrypoint import parse_string

    # bibtexparser logs each entry it cannot read; we say it once, as a skipped item.
    quiet = logging.getLogger("bibtexparser")
    level, quiet.level = quiet.level, logging.CRITICAL
    try:
        library = parse_string(text)
    finally:
        quiet.level = level
    found: list[tuple[int, LibraryItem | Diagnostic]] = []
    for block in library.failed_blocks:
        line = (block.start_line or 0) + 1
        error = getattr(block, "error", None)
        why = str(getattr(error, "abort_reason", None) or error or "").strip()
        why = why.splitlines()[0] if why else type(block).__name__
        found.append((line, Diagnostic(shown, line, f"could not be read: {why}")))
    latex = _Latex()
    for entry in library.entries:
        fields = {f.key.lower(): f.value for f in entry.fields}
        line = (entry.start_line or 0) + 1
        prefix = str(fields.get("archiveprefix") or fields.get("eprinttype") or "").lower()
        # An arXiv id: eprint with archivePrefix (BibTeX) or eprinttype (BibLaTeX) arXiv;
        # Zotero writes `number = {arXiv:2601.00001}` for a preprint.
        arxiv = fields.get("eprint") if prefix == "arxiv" else fields.get("arxivid")
        arxiv = arxiv or fields.get("number")
        urls = [u for u in (fields.get("url"), fields.get("eprint")) if isinstance(u, str)]
        try:
            title, abstract = latex(fields.get("title")), latex(fields.get("abstract"))
        except RecursionError:
            why = "could not be read: its LaTeX is nested too deep to decode"
            found.append((line, Diagnostic(shown, line, why)))
            continue
        found.append((line, _item(shown, line, title, abstract, fields.get("doi"), urls, arxiv)))
    for _line, item in sorted(found, key=lambda f: f[0]):
        yield item


# What only LaTeX can say: a command, math, a comment, a tie, ligatures (`--`, ``...'').
_LATEX = re.compile(r"[\\$%~]|--|``|''")
# pylatexenc decodes ~200 kB a second, so the work is bounded: a field is decoded up to
# MAX_FIELD characters (an abstract is a few thousand; arXiv's stop at 1,920), the rest
# of it dropped, and a file up to MAX_DECODED characters in all; past that its fields keep
# their text with the braces dropped, undecoded. (A 19 MB abstract with LaTeX in it took
# over 300 s and 1.5 GB; a 10,000-item library with LaTeX in every abstract stays ~10 s.)
MAX_FIELD = 20_000
MAX_DECODED = 2_000_000


class _Latex:
    """A BibTeX field's text, LaTeX decoded, within one file's budget (see MAX_DECODED)."""

    def __init__(self) -> None:
        self.left = MAX_DECODED

    def __call__(self, value: Any) -> Any:
        """Return a BibTeX field's text: LaTeX decoded by pylatexenc (as bibtexparser's
        LatexDecodingMiddleware does, math kept), or, for text whose only LaTeX is braces
        (`{MineDraft}: {A} {Framework}`, nearly every title), the braces dropped: decoding
        a 10,000-item library took 17 s, nearly all of it on text with nothing to decode.
        Raises RecursionError for LaTeX nested deeper than pylatexenc follows."""
        if not isinstance(value, str):
            return value
        value = value[:MAX_FIELD]
        if not _LATEX.search(value) or len(value) > self.left:
            return value.replace("{", "").replace("}", "") if "{" in value else value
        self.left -= len(value)
        return _decoder().latex_to_text(value)


@cache
def _decoder() -> Any:
    from pylatexenc.latex2text import LatexNodes2Text

    return LatexNodes2Text(math_mode="verbatim")


_RIS_START = re.compile(r"^TY  - ", re.MULTILINE)


def _ris(text: str, shown: str) -> Iterator[LibraryItem | Diagnostic]:
    import rispy

    # Each record on its own: rispy drops a record it cannot read without a word, and a
    # record read alone is one whose line we know.
    starts = [m.start() for m in _RIS_START.finditer(text)]
    line_of = _Lines(text)
    for i, start in enumerate(starts):
        line = line_of(start)
        chunk = text[start : starts[i + 1] if i + 1 < len(starts) else len(text)]
        try:
            records = rispy.loads(chunk)
        except Exception as e:  # noqa: BLE001 -- rispy raises what its parser meets
            records, why = [], f"could not be read: {e}"
        else:
            why = "could not be read: no 'ER  - ' line ends it"
        if not records:
            yield Diagnostic(shown, line, why)
            continue
        r = records[0]
        urls = r.get("urls") or []
        yield _item(shown, line, r.get("title") or r.get("primary_title"),
                    r.get("abstract") or r.get("notes_abstract"), r.get("doi"),
                    [u for u in urls if isinstance(u, str)], None)  # fmt: skip


def _csljson(text: str, shown: str) -> Iterator[LibraryItem | Diagnostic]:
    decoder = json.JSONDecoder()
    at = _skip_space(text, 0)
    line_of = _Lines(text)
    if not text.startswith("[", at):
        line = line_of(at)
        yield Diagnostic(shown, line, "could not be read: CSL JSON is a list of items ([...])")
        return
    at = _skip_space(text, at + 1)
    while at < len(text) and text[at] != "]":
        line = line_of(at)
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            yield Diagnostic(shown, e.lineno, f"could not be read: {e.msg}")
            return  # the rest of the list cannot be found either
        except RecursionError:  # arrays or objects nested deeper than the decoder follows
            yield Diagnostic(shown, line, "could not be read: nested too deep")
            return
        at = _skip_space(text, at)
        if text.startswith(",", at):
            at = _skip_space(text, at + 1)
        if not isinstance(value, dict):
            yield Diagnostic(shown, line, "could not be read: an item is not an object")
            continue
        urls = [u for u in (value.get("URL"),) if isinstance(u, str)]
        arxiv = value.get("number") if isinstance(value.get("number"), str) else None
        yield _item(shown, line, value.get("title"), value.get("abstract"), value.get("DOI"),
                    urls, arxiv)  # fmt: skip


class _Lines:
    """The line of each of a text's offsets, asked in increasing order: counted from the
    last one asked (counting from the start each time took 16 s for 10,000 RIS records)."""

    def __init__(self, text: str) -> None:
        self.text, self.at, self.line = text, 0, 1

    def __call__(self, offset: int) -> int:
        self.line += self.text.count("\n", self.at, offset)
        self.at = offset
        return self.line


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\n\r":
        at += 1
    return at


_READERS: dict[str, Callable[[str, str], Iterator[LibraryItem | Diagnostic]]] = {
    "bibtex": _bibtex, "ris": _ris, "csljson": _csljson,
}  # fmt: skip
