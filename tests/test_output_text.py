"""Text from digests as the outputs write it (SPEC.md, "Output", "The site", "Your library"):
a name particle stays with the family name in RIS and BibTeX; a bidi control in a digest
turns no line around, on a page, in a feed or in a reference manager; and an odd `$` in a
title is text in BibTeX, never half of a math span. Read back by the programs that read
them: rispy, bibtexparser, feedparser and a real browser."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bibtexparser
import feedparser
import pytest
import rispy
from bibtexparser.middlewares import LatexDecodingMiddleware, SeparateCoAuthors, SplitNameParts

from feeds.model import Hit, Institution, Item, Link, Paper
from feeds.pipeline import run
from feeds.publish import cite, pages, render
from feeds.publish.view import FeedView, PaperView, Site
from feeds.state.records import ListRow
from feeds.text import paper_id
from tests.conftest import Workspace
from tests.test_browser import browser  # noqa: F401 - the fixture, shared
from tests.test_cite import read_bib, read_ris

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
SITE = Site(title="Paper feeds", base_url="https://site.example/")
# The embeddings, overrides and isolates of Unicode's bidi algorithm.
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
RLO = "\u202e"  # right-to-left override: what follows is shown backwards

TURNED = f"Turned {RLO}around: Isolated \u2067Text\u2069 in a Title"
MATH = "Math $\\alpha$ and $x_{2}$ and $$ odd dollars"
DIGEST = f"""ICML

{TURNED}

被{RLO}反转的标题

Eve {RLO}Override, Mallory Brandt, Ludwig van der Berg

机构 * Evil {RLO}University（邪恶{RLO}大学） ； Good Institute（好研究所） 纠错

AI总结 一个{RLO}总结。

Comments Accepted at ICML 2026{RLO}

{MATH}

美元的数学

Ann Bell
"""


def _clean(text: str) -> str:
    return text.translate({ord(c): None for c in BIDI})


def _bidi_in(text: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in text if c in BIDI]


@pytest.fixture(scope="module")
def published(new_workspace) -> Workspace:  # type: ignore[no-untyped-def]
    """The seeds and a digest whose texts hold bidi controls and odd `$`, published."""
    ws = new_workspace("text")
    (ws.inbox / "zz_text.txt").write_text(DIGEST, "utf-8")
    summary = run(ws.config(), now=lambda: NOW)
    assert summary.exit_code == 0, summary
    return ws


# --- Name particles ---


def _zotero_creator(name: str) -> tuple[str, str]:
    """Return (lastName, firstName) as Zotero's BibTeX import makes them of one name of an
    author field (BibTeX.js: "Family, Given" at the comma; without one, cleanAuthor takes
    the last word for the family name)."""
    if "," in name:
        family, _comma, given = name.partition(",")
        return family.strip(), given.strip()
    given, _space, family = name.rpartition(" ")
    return family, given


def _bib_names(document: str) -> list[list[tuple[list[str], list[str], list[str]]]]:
    """Return each entry's authors as bibtexparser splits them: (first, von, last)."""
    library = bibtexparser.parse_string(
        document, append_middleware=[SeparateCoAuthors(), SplitNameParts()]
    )
    assert not library.failed_blocks
    return [[(n.first, n.von, n.last) for n in e["author"]] for e in library.entries]


def test_a_name_particle_stays_with_the_family_name(published: Workspace) -> None:
    topics = published.public / "topics"
    (record,) = [r for r in read_ris(topics / "all.ris") if "Structural Injustice" in r["title"]]
    assert "de Ramirez, Sarah Stewart" in record["authors"]
    (ours,) = [r for r in read_ris(topics / "all.ris") if str(r["title"]).startswith("Turned")]
    assert ours["authors"] == ["Override, Eve", "Brandt, Mallory", "van der Berg, Ludwig"]

    document = (topics / "all.bib").read_text("utf-8")
    entries = [e for e in bibtexparser.parse_string(document).entries if "Injustice" in e["title"]]
    names = [n.strip() for n in entries[0]["author"].split(" and ")]
    assert ("de Ramirez", "Sarah Stewart") in map(_zotero_creator, names)
    # BibTeX (and bibtexparser) reads the same name: "de" is its "von" part.
    split = _bib_names(cite.bibtex_entry(_citation(authors=("Sarah Stewart de Ramirez",)), "k"))
    assert split == [[(["Sarah", "Stewart"], ["de"], ["Ramirez"])]]


def test_particles_are_lowercase_words_before_the_last_and_other_names_stay_as_written() -> None:
    authors = ("Jean de la Fontaine", "Guido van Rossum", "Nguyen Van An", "Ann Bell", "张三")
    families = ["de la Fontaine", "van Rossum", "An", "Bell", "张三"]
    c = _citation(authors=authors)
    (record,) = rispy.loads(cite.ris_entry(c, "k"))
    assert record["authors"] == [
        "de la Fontaine, Jean", "van Rossum, Guido", "An, Nguyen Van", "Bell, Ann", "张三",
    ]  # fmt: skip
    entry = cite.bibtex_entry(c, "k")
    # A name without a particle is written as before: BibTeX and Zotero read it alike.
    assert "author = {de la Fontaine, Jean and van Rossum, Guido and Nguyen Van An and" in entry
    (names,) = _bib_names(entry)
    assert [" ".join(von + last) for _first, von, last in names] == families
    (field,) = re.findall(r"author = \{(.*)\}", entry)
    assert [_zotero_creator(n)[0] for n in field.split(" and ")] == families


# --- Bidi controls ---


def _text_files(folder: Path) -> Iterator[tuple[Path, str]]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in {".html", ".xml", ".json", ".bib", ".ris", ".opml"}:
            yield path, path.read_text("utf-8")


def test_bidi_controls_in_a_digest_are_removed_at_ingest(published: Workspace) -> None:
    found = {p.name: _bidi_in(text) for p, text in _text_files(published.public)}
    assert {name: chars for name, chars in found.items() if chars} == {}
    title = _clean(TURNED)
    assert (published.public / "papers" / f"{paper_id(title)}.html").is_file()
    feeds = published.public / "feeds"
    for name in ("all.rss.xml", "all.atom.xml"):
        parsed = feedparser.parse((feeds / name).read_bytes())
        assert not parsed.bozo, name
        (entry,) = [e for e in parsed.entries if e.title == title]
        assert "Eve Override" in _names(entry)
    items = json.loads((feeds / "all.json").read_text("utf-8"))["items"]
    (item,) = [i for i in items if i["title"] == title]
    about = item["_paperfeeds"]
    assert about["authors"] == ["Eve Override", "Mallory Brandt", "Ludwig van der Berg"]
    assert about["institutions"][0] == {"name": "Evil University", "name_zh": "邪恶大学"}


def _names(entry: Any) -> str:
    """Return a feed entry's authors as feedparser reads them (RSS: one dc:creator)."""
    return ", ".join(a.get("name", "") for a in entry.get("authors", ()))


def _stored() -> Paper:
    """A paper as a state written before ingest removed bidi controls may hold it."""
    return Paper(
        paper_id="0123456789abcdef",
        title=TURNED,
        title_zh=f"被{RLO}反转的标题",
        authors=(f"Eve {RLO}Override", "Mallory Brandt", "Carol Ng", "Dan Wu"),
        institutions=(
            Institution(f"Evil {RLO}University", f"邪恶{RLO}大学"),
            Institution("Good Institute", "好研究所"),
        ),
        summary=f"一个{RLO}总结。",
        comments="Code at https://github.com/example/turned",
        venue=f"ICML {RLO}Track",
        abstract=f"An abstract {RLO}turned.",
    )


def test_a_stored_paper_with_bidi_controls_has_none_in_its_feeds_and_lists() -> None:
    paper = _stored()
    link = Link("https://github.com/example/turned", "code")
    feed = FeedView("t", "Topic", "", NOW, (Item(paper, NOW, (link,)),), 50)
    for fmt in ("rss", "atom", "json"):
        document = render.render(SITE, feed, fmt).decode("utf-8")
        assert _bidi_in(document) == [], fmt
        if fmt != "json":
            (entry,) = feedparser.parse(document).entries
            assert entry.title == _clean(TURNED)
            assert "Eve Override" in _names(entry)
    c = cite.citation(paper, (link,), NOW, "https://site.example/papers/0123456789abcdef.html")
    bib, ris = cite.bibtex_entry(c, c.key), cite.ris_entry(c, c.key)
    assert _bidi_in(bib + ris) == []
    (read,) = bibtexparser.parse_string(bib, append_middleware=[LatexDecodingMiddleware()]).entries
    assert read["title"] == _clean(TURNED)
    (record,) = rispy.loads(ris)
    assert record["authors"][0] == "Override, Eve"
    assert record["secondary_title"] == "ICML Track"


# For each text node holding `needle`: whether its first character is shown left of its
# last (the text reads left to right, as Latin text does unless an override turns it).
_READS_FORWARD = """needle => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const found = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(needle);
    if (at < 0) continue;
    const left = i => {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      return range.getBoundingClientRect().left;
    };
    found.push(left(at) < left(at + needle.length - 1));
  }
  return found;
}"""


@pytest.mark.browser
def test_an_override_in_a_stored_paper_turns_only_its_own_text_on_pages(
    browser: Any,  # noqa: F811 - the fixture imported above
) -> None:
    paper = _stored()
    view = PaperView(paper, NOW, (Link("https://github.com/example/turned", "code"),), ())
    page = pages.render_paper(SITE, view).decode("utf-8")
    listed = ListRow(paper.paper_id, paper.title, paper.title_zh, paper.venue, NOW.isoformat(),
                     (Hit("ICML", "venue"),))  # fmt: skip
    details = pages.details_html(paper.authors, paper.summary, paper.abstract)
    row = pages.row_with("../", listed, pages.row_ends(listed, view.links, details))
    listing = f'<!DOCTYPE html><html lang="en"><body><ol class="papers">\n{row}</ol></body></html>'
    tab = browser.new_page()
    try:
        tab.set_content(page)
        assert _bidi_in(tab.title()) == []
        for needle in ("Mallory Brandt", "Carol Ng", "Good Institute", "Code at"):
            assert tab.evaluate(_READS_FORWARD, needle) in ([True], [True, True]), needle
        tab.set_content(listing)
        for needle in ("Mallory Brandt", "Carol Ng", "added 2026-12-07", "matched: ICML"):
            assert tab.evaluate(_READS_FORWARD, needle) == [True], needle
    finally:
        tab.close()


# --- `$` in BibTeX titles ---

_UNESCAPED_MATH = re.compile(r"(?<!\\)\$[^$]*(?<!\\)\$")


@pytest.mark.parametrize(
    ("title", "math"),
    [
        ("Math $\\alpha$ and $x^{2}$ and $$ odd dollars", []),
        ("A single $ sign", []),
        ("Save $5 on $k$-Means", ["$k$"]),
        ("$k$-Means and $O(n)$ Time", ["$k$", "$O(n)$"]),
        ("Spaced $ a $ and $b$", ["$b$"]),
        ("Adjacent $x$$y$", ["$y$"]),
    ],
)
def test_an_odd_dollar_is_text_and_only_balanced_math_is_math(title: str, math: list[str]) -> None:
    entry = cite.bibtex_entry(_citation(title=title), "k")
    library = bibtexparser.parse_string(entry)
    assert not library.failed_blocks
    (raw,) = library.entries
    assert _UNESCAPED_MATH.findall(raw["title"]) == math
    assert raw["title"].count("$") - raw["title"].count("\\$") == 2 * len(math)


def test_a_title_with_odd_dollars_reads_back_intact(published: Workspace) -> None:
    path = published.public / "topics" / "all.bib"
    (raw,) = [e for e in bibtexparser.parse_string(path.read_text("utf-8")).entries
              if "odd dollars" in e["title"]]  # fmt: skip
    assert _UNESCAPED_MATH.findall(raw["title"]) == []  # every `$` of it is text
    entries = read_bib(path)  # LaTeX decoded
    assert MATH in [e["title"] for e in entries]
    records = read_ris(published.public / "topics" / "all.ris")
    assert MATH in [r["title"] for r in records]


def _citation(**fields: Any) -> cite.Citation:
    paper = Paper(paper_id="p1", title="A Title", authors=("Ann Bell",), venue="ICML")
    paper = Paper(**{**paper.__dict__, **fields})
    return cite.citation(paper, (), NOW, "https://site.example/papers/p1.html")
