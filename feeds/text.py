"""Small pure text helpers shared by parsing, matching and rendering, and the identifiers
that name a paper outside paperfeeds (arXiv ids, DOIs), found in text and URLs and written
one way: shared by the citations we publish, the libraries we read and `like:`."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from urllib.parse import unquote

# XML 1.0 forbids C0 controls other than tab/newline/CR, lone surrogates and U+FFFE/U+FFFF;
# C1 controls are allowed but feed validators flag them and no digest means them. Nor does
# any digest mean the bidi embeddings, overrides and isolates (U+202A-U+202E,
# U+2066-U+2069): one left open in an author's name turns the rest of the line around, on
# a page, in a feed reader and in a reference manager.
_BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
_XML_FORBIDDEN = re.compile(
    f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff{_BIDI_CONTROLS}]"
)

# Han, kana, hangul and CJK punctuation/compat/fullwidth blocks.
CJK_CLASS = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
)
_CJK = re.compile(f"[{CJK_CLASS}]")
_NOT_WORD = re.compile(r"[\W_]+")

# A fixed namespace so that the same title gives the same id on every machine, forever.
PAPER_NAMESPACE = uuid.UUID("8f4e6f2a-5d1c-4a7e-9b0e-3c2f1a6d7e50")


def clean_xml(text: str) -> str:
    """Return text without the characters that XML (or a feed validator) rejects, and
    without bidi controls."""
    return _XML_FORBIDDEN.sub("", text)


_BIDI = re.compile(f"[{_BIDI_CONTROLS}]")


def strip_bidi(text: str) -> str:
    """Return text without bidi controls: for what carries any other text as it is (JSON,
    BibTeX, RIS)."""
    return _BIDI.sub("", text)


# The same characters in UTF-8 (which has no surrogates): C0 and DEL are single bytes, C1
# controls are \xc2\x80-\xc2\x9f (\xc2 is rare in CJK text, unlike U+FFFE's \xef), bidi
# controls \xe2\x80\xaa-\xae and \xe2\x81\xa6-\xa9.
_C0_BYTES = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_C1_BYTES = re.compile(rb"\xc2[\x80-\x9f]")
_BIDI_BYTES = re.compile(rb"\xe2(?:\x80[\xaa-\xae]|\x81[\xa6-\xa9])")


def is_xml_clean(content: bytes, text: str) -> bool:
    """Return True when text, decoded from the UTF-8 `content`, has none of the characters
    clean_xml() removes: a quarter of the cost of clean_xml(), which tries its expression at
    every character, while nearly every digest has none of them.
    """
    return (
        len(content.translate(None, _C0_BYTES)) == len(content)
        and not (b"\xc2" in content and _C1_BYTES.search(content))
        and not (b"\xe2" in content and _BIDI_BYTES.search(content))
        and "\ufffe" not in text
        and "\uffff" not in text
    )


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


# Full-width punctuation, which Chinese text is full of, paired with its NFKC form. Replacing
# a character by its NFKC form never changes the NFKC form of the text around it, and text
# without these characters is mostly NFKC already, which NFKC checks quickly.
_NFKC_PUNCTUATION = tuple((c, unicodedata.normalize("NFKC", c)) for c in "，（）；：？！\u3000")


def fold(text: str) -> str:
    """Return text in the form terms are compared in: NFKC, case-folded, accents kept."""
    if text.isascii():  # NFKC keeps ASCII as it is; casefold is lower for ASCII
        return text.lower()
    for char, nfkc in _NFKC_PUNCTUATION:
        text = text.replace(char, nfkc)
    return unicodedata.normalize("NFKC", text).casefold()


class _NoMarks(dict[int, int | None]):
    """A str.translate table that drops combining marks, filled as characters are met."""

    def __missing__(self, code: int) -> int | None:
        kept = None if unicodedata.combining(chr(code)) else code
        self[code] = kept
        return kept


_NO_MARKS = _NoMarks()
# Latin-1 and its extensions before the first combining mark (U+0300), kana without the two
# combining sound marks, CJK ideographs: text of these alone has no combining mark.
_MAYBE_MARKS = re.compile("[^\x00-\u02ff\u3040-\u3098\u309b-\u30ff\u4e00-\u9fff]")


def strip_accents(text: str) -> str:
    """Return text without combining marks (Émile -> Emile)."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    if _MAYBE_MARKS.search(decomposed) is not None:
        decomposed = decomposed.translate(_NO_MARKS)
    return unicodedata.normalize("NFC", decomposed)


def person_key(name: str) -> str:
    """Return a name in the form authors compare in: no accents, no case, single spaces."""
    return " ".join(strip_accents(fold(name)).replace("-", " ").split())


# Symbols that tell titles apart: `≥ RNNs` / `≤ RNNs`, `P = NP` / `P ≠ NP`, `C++` / `C`,
# `A+` / `A`, `C#` / `C`. They stay in a title's key as words of their own, while other
# punctuation only separates words, so ids of titles without them are what they always were.
# The minus sign and the fraction and division slashes are math symbols to Unicode but read
# like a hyphen or a slash in a title.
_ASCII_SYMBOLS = "+<=>#"
_NOT_SYMBOLS = frozenset("\u2212\u2044\u2215")


def is_title_symbol(char: str) -> bool:
    """Return True for a character that a paper's identity keeps (see _ASCII_SYMBOLS)."""
    if char.isascii():
        return char in _ASCII_SYMBOLS
    return unicodedata.category(char) == "Sm" and char not in _NOT_SYMBOLS


# For ASCII text, what [\W_] matches: everything but letters and digits (a space), with the
# title symbols kept as words of their own.
_ASCII_NOT_WORD = str.maketrans(
    {c: f" {c} " if c in _ASCII_SYMBOLS else " " for c in map(chr, range(128)) if not c.isalnum()}
)
# The same for ASCII bytes (paper_id), for titles without title symbols: letters and digits
# kept, every other byte a space.
_ASCII_NOT_WORD_BYTES = bytes(c if chr(c).isalnum() and c < 128 else 32 for c in range(256))
_HAS_ASCII_SYMBOL = re.compile(f"[{re.escape(_ASCII_SYMBOLS)}]").search


def has_title_symbol(title: str) -> bool:
    """Return True when a title holds a symbol that its key keeps (see is_title_symbol)."""
    if title.isascii():
        return _HAS_ASCII_SYMBOL(title) is not None
    return any(map(is_title_symbol, title))


def _separate(m: re.Match[str]) -> str:
    """Return a run of non-word characters as the key writes it: its title symbols as words
    of their own, the rest a space."""
    run = m.group()
    if len(run) == 1 and not is_title_symbol(run):
        return " "
    return "".join(f" {c} " if is_title_symbol(c) else " " for c in run)


def title_key(title: str) -> str:
    """Return the identity of a paper: its English title folded, punctuation collapsed, the
    symbols that tell titles apart (≥, ≠, +, #...) kept."""
    folded = fold(title)
    if folded.isascii():  # most titles: a translate table beats the expression
        return " ".join(folded.translate(_ASCII_NOT_WORD).split())
    return " ".join(_NOT_WORD.sub(_separate, folded).split())


_NAMESPACE_BYTES = PAPER_NAMESPACE.bytes


def _title_sha1(title: str) -> str:
    """Return the SHA-1 (hex) behind the paper's version-5 UUID: of the namespace and the
    title's key. (A UUID object per paper is slow on big ingests and feeds.)"""
    if title.isascii() and not _HAS_ASCII_SYMBOL(title):  # most: bytes, with C loops only
        key = b" ".join(title.encode().lower().translate(_ASCII_NOT_WORD_BYTES).split())
    else:
        key = title_key(title).encode("utf-8")
    return hashlib.sha1(_NAMESPACE_BYTES + key).hexdigest()


def paper_uuid(title: str) -> str:
    """Return the paper's identity as UUID text: uuid5(PAPER_NAMESPACE, title_key(title)).

    The hash's first sixteen bytes, with the version (5) in the 13th digit and the RFC 4122
    variant in the top bits of the 17th (8, 9, a or b).
    """
    h = _title_sha1(title)
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


def paper_id(title: str) -> str:
    """Return the short, stable id used in file names and URLs: paper_uuid(title)'s first
    sixteen hex digits."""
    h = _title_sha1(title)
    return h[:12] + "5" + h[13:16]  # the version's nibble is the 13th digit


# --- Identifiers ---

# arXiv registers a DOI for every paper: 10.48550/arXiv.<id>.
ARXIV_DOI_PREFIX = "10.48550/arxiv."

# `2601.00001`, `2601.00001v2`, `arXiv:2601.00001`, and the old `cond-mat/0603029` (before
# April 2007: the archive, sometimes its subject class, and seven digits).
_ARXIV_ID = r"(\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?"
_ARXIV_TEXT = re.compile(rf"(?:arxiv:\s*)?{_ARXIV_ID}", re.IGNORECASE)
_ARXIV_URL = re.compile(rf"https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/{_ARXIV_ID}")
# A DOI as Crossref recommends matching it (10.prefix/suffix), up to white space; the
# punctuation that ends a sentence is not part of it.
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)")
_DOI_URL = re.compile(r"https?://(?:dx\.)?doi\.org/(10\.\d{4,9}/.+)", re.IGNORECASE)
_DOI_TRAILING = ".,;:)]}>'\""


def arxiv_id(text: str) -> str | None:
    """Return the arXiv id (without version) that `text` is, whole: `2601.00001v2`,
    `arXiv:2601.00001`, `cond-mat/0603029`; or the one an arXiv DOI names; else None."""
    text = text.strip()
    if m := _ARXIV_TEXT.fullmatch(text):
        return m.group(1)
    doi = normalize_doi(text)
    if doi and doi.startswith(ARXIV_DOI_PREFIX):
        m = _ARXIV_TEXT.fullmatch(doi[len(ARXIV_DOI_PREFIX) :])
        return m.group(1) if m else None
    return None


def arxiv_id_of_url(url: str) -> str | None:
    """Return the arXiv id of an arXiv abstract or PDF URL, else None."""
    m = _ARXIV_URL.match(url)
    return m.group(1) if m else None


def normalize_doi(text: str) -> str | None:
    """Return the DOI that `text` is (bare, `doi:`-prefixed or as a doi.org URL), in lower
    case (DOIs are case-insensitive); None when it is not one."""
    text = text.strip()
    if m := _DOI_URL.fullmatch(text):
        text = unquote(m.group(1))
    elif text[:4].lower() == "doi:":
        text = text[4:].strip()
    m = _DOI.fullmatch(text)
    return m.group(1).rstrip(_DOI_TRAILING).lower() if m else None


def doi_in(text: str | None) -> str | None:
    """Return the first DOI written in free text (a journal ref, comments), lower case."""
    if not text or "10." not in text:
        return None
    m = _DOI.search(text)
    return m.group(1).rstrip(_DOI_TRAILING).lower() if m else None


def doi_of_url(url: str) -> str | None:
    """Return the DOI a doi.org URL resolves, else None."""
    m = _DOI_URL.fullmatch(url.strip())
    return normalize_doi(m.group(1)) if m else None


def arxiv_doi(arxiv: str) -> str:
    """Return the DOI arXiv registered for a paper: 10.48550/arXiv.<id>."""
    return f"10.48550/arXiv.{arxiv}"
