"""Your library, out: what a reference manager reads of what we publish. A paper's page is
read as Zotero's Embedded Metadata translator reads Highwire `citation_*` tags (its rules
are public: a conference title makes a conference paper, a journal title a journal
article, a title alone a journal article, no tags a web page); the reading lists'
.bib and .ris are read back with bibtexparser (LaTeX decoded) and rispy."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import bibtexparser
import pytest
import rispy
from bibtexparser.middlewares import LatexDecodingMiddleware
from hypothesis import given
from hypothesis import strategies as st

from feeds.model import Link, Paper
from feeds.pipeline import run
from feeds.publish import cite
from feeds.text import paper_id
from tests.arxivserver import ArxivServer, FakePaper
from tests.conftest import Workspace

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
MINEDRAFT = "MineDraft: A Framework for Batch Parallel Speculative Decoding"
MINEDRAFT_AUTHORS = [
    "Zhenwei Tang", "Arun Verma", "Zijian Zhou", "Zhaoxuan Wu", "Alok Prakash", "Daniela Rus",
    "Bryan Kian Hsiang Low",
]  # fmt: skip
ABSTRACT = "Speculative decoding drafts tokens in parallel batches; MineDraft overlaps them."


class _Meta(HTMLParser):
    """The <meta name=... content=...> tags of a page, in order, and its <script>s."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, str]] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "meta" and a.get("name") and a.get("content") is not None:
            self.tags.append((str(a["name"]), str(a["content"])))
        self.scripts += tag == "script"


def zotero_item(html: str) -> dict[str, object]:
    """Return the item Zotero's Embedded Metadata translator makes of a page's Highwire
    tags: its type rules and field mapping (HIGHWIRE_MAPPINGS), authors in order."""
    meta = _Meta()
    meta.feed(html)
    tags = meta.tags
    names = {name for name, _ in tags}
    if "citation_conference_title" in names:
        kind = "conferencePaper"
    elif "citation_journal_title" in names:
        kind = "journalArticle"
    elif "citation_title" in names:
        kind = "journalArticle"  # the translator's guess from a title alone
    else:
        kind = "webpage"
    first = dict(reversed(tags))  # the first of each name, as the translator takes it
    return {
        "itemType": kind,
        "title": first.get("citation_title"),
        "creators": [value for name, value in tags if name == "citation_author"],
        "date": first.get("citation_publication_date") or first.get("citation_date"),
        "conferenceName": first.get("citation_conference_title"),
        "publicationTitle": first.get("citation_journal_title"),
        "abstractNote": first.get("citation_abstract"),
        "DOI": first.get("citation_doi"),
        "pdf": first.get("citation_pdf_url"),
        "arxiv": first.get("citation_arxiv_id"),
        "scripts": meta.scripts,
    }


def read_bib(path: Path) -> list[dict[str, str]]:
    """Return the entries of a .bib file as bibtexparser reads them (LaTeX decoded), with
    `ID` and `ENTRYTYPE`; fail on any block it could not read."""
    library = bibtexparser.parse_string(
        path.read_text("utf-8"), append_middleware=[LatexDecodingMiddleware()]
    )
    assert not library.failed_blocks, [b.raw for b in library.failed_blocks]
    return [
        {"ID": e.key, "ENTRYTYPE": e.entry_type, **{f.key: f.value for f in e.fields}}
        for e in library.entries
    ]


def read_ris(path: Path) -> list[dict[str, object]]:
    text = path.read_text("utf-8")
    records = rispy.loads(text)
    assert len(records) == text.count("TY  - "), "a record rispy could not read"
    return list(records)


@pytest.fixture
def api() -> Iterator[ArxivServer]:
    server = ArxivServer()
    yield server
    server.close()


def _with_arxiv(ws: Workspace, api: ArxivServer) -> Path:
    path = ws.root / "config" / "settings.yaml"
    path.write_text(
        "sources:\n  - arxiv: [cs.CL]\n"
        "links:\n  check: false\n  allow_hosts: [127.0.0.1]\n"
        f"  arxiv_api: {api.url}\n  arxiv_delay: 0s\n",
        encoding="utf-8",
    )
    return path


def _page(ws: Workspace, title: str) -> str:
    return (ws.public / "papers" / f"{paper_id(title)}.html").read_text("utf-8")


def test_saving_minedraft_gives_a_conference_paper_with_every_field(
    workspace: Workspace, api: ArxivServer
) -> None:
    api.add(
        FakePaper("2612.00077", MINEDRAFT, NOW - timedelta(days=1), ("cs.CL",),
                  abstract=ABSTRACT, authors=(("Zhenwei Tang", ()), ("Arun Verma", ()))),
    )  # fmt: skip
    run(workspace.config(settings=_with_arxiv(workspace, api)), now=lambda: NOW)
    html = _page(workspace, MINEDRAFT)
    item = zotero_item(html)
    assert item["itemType"] == "conferencePaper"
    assert item["title"] == MINEDRAFT  # not the page's title, which names the site
    assert re.search(r"<title>[^<]*· paperfeeds</title>", html)
    assert item["creators"] == MINEDRAFT_AUTHORS  # the digest's, every one, in order
    assert item["date"] == "2026"
    assert item["conferenceName"] == "ICML"
    assert item["abstractNote"] == ABSTRACT  # the English abstract, from arXiv
    assert item["DOI"] == "10.48550/arXiv.2612.00077"  # arXiv's DOI carries the id
    assert item["arxiv"] == "2612.00077"
    assert item["pdf"] == "https://arxiv.org/pdf/2612.00077"
    # Its BibTeX, shown with a copy button, is the same paper.
    shown = re.search(r'<pre id="bibtex">(.*?)</pre>', html, re.DOTALL)
    assert shown is not None
    from html import unescape

    (entry,) = bibtexparser.parse_string(
        unescape(shown.group(1)), append_middleware=[LatexDecodingMiddleware()]
    ).entries
    assert entry.entry_type == "inproceedings"
    assert entry.key == "tang2026minedraft"
    assert entry["title"] == MINEDRAFT
    assert entry["booktitle"] == "ICML"
    assert entry["eprint"] == "2612.00077"
    assert entry["archivePrefix"] == "arXiv"
    assert entry["doi"] == "10.48550/arXiv.2612.00077"
    assert 'data-copy="bibtex"' in html


def test_an_arxiv_only_paper_is_a_preprint_with_its_arxiv_identity(
    workspace: Workspace, api: ArxivServer
) -> None:
    api.add(FakePaper("2612.00042", "Sparse Drafts for Speculation", NOW - timedelta(days=1),
                      ("cs.CL",), abstract="We sparsify drafts."))  # fmt: skip
    run(workspace.config(settings=_with_arxiv(workspace, api)), now=lambda: NOW)
    item = zotero_item(_page(workspace, "Sparse Drafts for Speculation"))
    assert item["itemType"] == "journalArticle"  # a paper (Highwire has no preprint type)
    assert item["conferenceName"] is None
    assert item["publicationTitle"] is None  # arXiv is where it was posted, not a venue
    assert item["DOI"] == "10.48550/arXiv.2612.00042"
    entries = read_bib(workspace.public / "topics" / "all.bib")
    (entry,) = [e for e in entries if e["title"] == "Sparse Drafts for Speculation"]
    assert entry["ENTRYTYPE"] == "misc"
    assert (entry["eprint"], entry["archivePrefix"], entry["primaryClass"]) == (
        "2612.00042", "arXiv", "cs.CL",
    )  # fmt: skip
    assert entry["url"].endswith(f"/papers/{paper_id('Sparse Drafts for Speculation')}.html")
    (record,) = [r for r in read_ris(workspace.public / "topics" / "all.ris")
                 if r["title"] == "Sparse Drafts for Speculation"]  # fmt: skip
    assert record["type_of_reference"] == "GEN"
    assert record["publisher"] == "arXiv"
    assert record["doi"] == "10.48550/arXiv.2612.00042"


def test_every_seed_page_is_a_paper_with_its_title_and_authors(site_ws: Workspace) -> None:
    pages = sorted((site_ws.public / "papers").glob("*.html"))
    assert len(pages) == 60
    for page in pages:
        html = page.read_text("utf-8")
        item = zotero_item(html)
        h1 = re.search(r"<h1>(.*?)</h1>", html)
        assert h1 is not None
        from html import unescape

        assert item["itemType"] == "conferencePaper", page.name
        assert item["title"] == unescape(h1.group(1)), page.name
        assert item["creators"], page.name
        assert item["conferenceName"] == "ICML"
        assert item["date"] == "2026"


@pytest.fixture(scope="module")
def site_ws(new_workspace) -> Workspace:  # type: ignore[no-untyped-def]
    ws = new_workspace("cite")
    run(ws.config(), now=lambda: NOW)
    return ws


def _feed_items(ws: Workspace, topic: str) -> list[dict[str, object]]:
    feed = json.loads((ws.public / "feeds" / f"{topic}.json").read_text("utf-8"))
    return list(feed["items"])


def _particle(name: str) -> int:
    """Return where a name's family name begins when particles (`de`, `van der`) lead it,
    else 0."""
    words = name.split()
    at = len(words) - 1
    while at > 1 and words[at - 1].islower():
        at -= 1
    return at if at < len(words) - 1 else 0


def _family_first(name: str) -> str:
    words = name.split()
    if len(words) < 2:
        return name
    at = _particle(name) or len(words) - 1
    return f"{' '.join(words[at:])}, {' '.join(words[:at])}"


def test_each_reading_list_is_a_bib_and_a_ris_of_every_paper_newest_first(
    site_ws: Workspace,
) -> None:
    topics = [t.id for t in site_ws.config().topics] + ["all"]
    for topic in topics:
        items = _feed_items(site_ws, topic)  # the seeds' topics are shorter than a feed
        titles = [str(i["title"]) for i in items]
        authors = [i["_paperfeeds"]["authors"] for i in items]  # type: ignore[index]
        entries = read_bib(site_ws.public / "topics" / f"{topic}.bib")
        assert [e["title"] for e in entries] == titles, topic
        assert [e["author"].split(" and ") for e in entries] == [
            [_family_first(n) if _particle(n) else n for n in names] for names in authors
        ], topic
        keys = [e["ID"] for e in entries]
        assert len(set(keys)) == len(keys), topic
        assert all(e["ENTRYTYPE"] == "inproceedings" and e["booktitle"] == "ICML" for e in entries)
        records = read_ris(site_ws.public / "topics" / f"{topic}.ris")
        assert [r["title"] for r in records] == titles, topic
        assert [r["id"] for r in records] == keys  # the same keys in both files
        for record, names in zip(records, authors, strict=True):
            assert record["type_of_reference"] == "CONF"
            assert record["year"] == "2026"
            assert record["secondary_title"] == "ICML"
            # "Family, Given", as RIS writes a name (the last word is the family name, with
            # the particles before it: "de Ramirez, Sarah Stewart").
            assert record["authors"] == [_family_first(n) for n in names]
            assert str(record["urls"][0]).endswith(".html")  # its page: no arXiv id known


def test_a_topic_page_says_how_to_take_its_list_into_zotero(site_ws: Workspace) -> None:
    html = (site_ws.public / "topics" / "speculative-decoding.html").read_text("utf-8")
    assert "Add to your library" in html
    assert 'href="../topics/speculative-decoding.bib"' in html
    assert 'href="../topics/speculative-decoding.ris"' in html
    assert "Zotero" in html
    page = _page(site_ws, MINEDRAFT)
    assert 'href="../topics/speculative-decoding.bib"' in page  # from the paper's topics


def test_citation_keys_stay_when_a_colliding_paper_arrives(workspace: Workspace) -> None:
    config = workspace.config()
    run(config, now=lambda: NOW)
    before = {e["title"]: e["ID"] for e in read_bib(workspace.public / "topics" / "all.bib")}
    assert before[MINEDRAFT] == "tang2026minedraft"
    (workspace.inbox / "later.txt").write_text(
        "ICML\n\nMineDraft Revisited: Drafting Once More\n\nWei Tang, Ann Bell\n\n"
        "AI总结 再次研究推测解码。\n\nComments ICML 2026\n",
        encoding="utf-8",
    )
    run(config, now=lambda: NOW + timedelta(days=1))
    after = {e["title"]: e["ID"] for e in read_bib(workspace.public / "topics" / "all.bib")}
    assert after["MineDraft Revisited: Drafting Once More"] == "tang2026minedrafta"
    assert {t: after[t] for t in before} == before  # the older papers keep their keys


def test_a_new_digest_gives_the_reading_lists_a_full_build_would(workspace: Workspace) -> None:
    """Entries of unchanged papers are taken from the files written before: what a new
    digest leaves is byte for byte what writing every entry again gives."""
    config = workspace.config()
    run(config, now=lambda: NOW)
    (workspace.inbox / "later.txt").write_text(
        "ICML\n\nMineDraft Revisited: Speculative Decoding Once More\n\nWei Tang\n\n"
        "AI总结 再次研究推测解码。\n\nComments ICML 2026 https://github.com/x/y\n\n"
        "LK Losses: Direct Acceptance Rate Optimization for Speculative Decoding\n\n"
        "Alexander Samarin\n\nAI总结 推测解码。\n\nComments See https://arxiv.org/abs/2601.00002\n",
        encoding="utf-8",
    )
    run(config, now=lambda: NOW + timedelta(days=1))  # one new paper, one with an arXiv id
    lists = sorted((workspace.public / "topics").glob("*.[br]i[bs]"))
    assert len(lists) == 2 * (len(config.topics) + 1)
    incremental = {p.name: p.read_bytes() for p in lists}
    entries = read_bib(workspace.public / "topics" / "speculative-decoding.bib")
    assert [e["ID"] for e in entries][:2] == ["tang2026minedrafta", "tang2026minedraft"]
    (lk,) = [e for e in entries if e["title"].startswith("LK Losses")]
    assert lk["eprint"] == "2601.00002"  # the changed paper's entry was made again
    from feeds.pipeline import run as run_again

    run_again(config, now=lambda: NOW + timedelta(days=1), repair=True)  # everything anew
    assert {p.name: p.read_bytes() for p in lists} == incremental


def _new_digest(ws: Workspace, name: str, title: str) -> None:
    (ws.inbox / name).write_text(
        f"ICML\n\n{title}\n\nWei Tang\n\nAI总结 推测解码。\n", encoding="utf-8"
    )


@pytest.mark.parametrize(
    "damage",
    [
        "none",
        "cut short",  # the last entry without its end
        "an entry without its page",
        "an entry of a paper the topic no longer lists",
    ],
)
def test_new_papers_on_top_of_a_reading_list_give_what_a_full_build_would(
    workspace: Workspace, damage: str
) -> None:
    """A new digest puts its entries before the files written last time, whole; files that
    are not what the topic held (damaged, or listing a paper it no longer has) are taken
    apart and made again. Either way the bytes are those of a full build."""
    config = workspace.config()
    run(config, now=lambda: NOW)
    bib = workspace.public / "topics" / "speculative-decoding.bib"
    ris = workspace.public / "topics" / "speculative-decoding.ris"
    text = bib.read_text("utf-8")
    if damage == "cut short":
        bib.write_text(text[: -len("}\n") - 5], "utf-8")
    elif damage == "an entry without its page":
        bib.write_text(text.replace("\n  url = {", "\n  note = {", 1), "utf-8")
    elif damage == "an entry of a paper the topic no longer lists":
        other = workspace.public / "topics" / "all.ris"
        first = other.read_text("utf-8").split("\n\n")[-1]
        ris.write_text(ris.read_text("utf-8") + "\n" + first, "utf-8")
        bib.write_text(text + "\n" + text.split("\n\n")[0] + "\n", "utf-8")
    _new_digest(workspace, "later.txt", "Speculative Decoding on Top: A Later Paper")
    run(config, now=lambda: NOW + timedelta(days=1))
    incremental = {p: p.read_bytes() for p in (bib, ris)}
    assert read_bib(bib)[0]["title"].startswith("Speculative Decoding on Top")
    run(config, now=lambda: NOW + timedelta(days=1), repair=True)  # everything anew
    assert {p: p.read_bytes() for p in (bib, ris)} == incremental


def test_a_reading_list_file_is_listed_only_when_whole() -> None:
    c = _citation()
    pid = "0123456789abcdef"  # as paper ids are
    entry = cite.bibtex_entry(c, "bell2026title")
    document = entry + "\n" + cite.bibtex_entry(c, "bell2026titlea")
    document = document.replace("/papers/p1.html", f"/papers/{pid}.html")
    assert cite.listing("bibtex", document) == ([pid, pid], ["bell2026title", "bell2026titlea"])
    assert cite.listing("bibtex", "") == ([], [])
    assert cite.listing("bibtex", document[:-2]) is None  # cut short
    assert cite.listing("bibtex", document.replace("  url = {", "  note = {", 1)) is None
    record = cite.ris_entry(c, "k").replace("/papers/p1.html", f"/papers/{pid}.html")
    assert cite.listing("ris", record) == ([pid], ["k"])
    assert cite.listing("ris", record.replace("ID  - k\n", "")) is None


def test_hostile_titles_stay_inside_their_attribute_and_their_field(workspace: Workspace) -> None:
    title = 'Break "out" <script>alert(1)</script> & {brace} 50% $x$ #1 a_b \\ c'
    (workspace.inbox / "hostile.txt").write_text(
        f"ICML\n\n{title}\n\nEve O'Neil, Mallory Brandt\n\nAI总结 恶意标题。\n",
        encoding="utf-8",
    )
    run(workspace.config(), now=lambda: NOW)
    html = _page(workspace, title)
    item = zotero_item(html)
    assert item["title"] == title
    assert item["creators"] == ["Eve O'Neil", "Mallory Brandt"]
    assert item["scripts"] == 1  # our copy button's, no other
    (entry,) = [e for e in read_bib(workspace.public / "topics" / "all.bib")
                if e["title"].startswith("Break")]  # fmt: skip
    assert entry["title"] == title  # simple math ($x$) kept as math, the rest escaped
    assert entry["author"] == "Eve O'Neil and Mallory Brandt"
    (record,) = [r for r in read_ris(workspace.public / "topics" / "all.ris")
                 if str(r["title"]).startswith("Break")]  # fmt: skip
    assert record["title"] == title


def _citation(**fields: object) -> cite.Citation:
    paper = Paper(paper_id="p1", title="A Title", authors=("Ann Bell",), venue="ICML")
    for name in ("title", "authors", "venue", "abstract", "journal_ref", "comments", "arxiv_id"):
        if name in fields:
            paper = Paper(**{**paper.__dict__, name: fields[name]})
    links = tuple(fields.get("links", ()))  # type: ignore[arg-type]
    seen = fields.get("seen", NOW)
    return cite.citation(paper, links, seen, "https://site.example/papers/p1.html")  # type: ignore[arg-type]


def test_the_venue_decides_the_kind() -> None:
    assert _citation().kind == "conference"
    journal = _citation(venue="Transactions on Machine Learning Research")
    assert journal.kind == "journal"
    assert '<meta name="citation_journal_title"' in cite.meta_tags(journal)
    assert "@article{" in cite.bibtex_entry(journal, "k")
    assert _citation(venue="arXiv", arxiv_id="2601.00001").kind == "preprint"
    assert _citation(venue=None).kind == "preprint"


def test_a_known_doi_and_year_are_taken_from_the_paper() -> None:
    c = _citation(journal_ref="Nature 601, 2025. doi:10.1038/s41586-021-03819-2.")
    assert c.doi == "10.1038/s41586-021-03819-2"
    assert c.year == "2025"
    linked = _citation(links=[Link("https://doi.org/10.5555/ABC.1", "paper")], arxiv_id="2601.1")
    assert linked.doi == "10.5555/abc.1"  # a publisher's DOI before arXiv's
    assert _citation(arxiv_id="2503.01234").year == "2025"  # from the arXiv id
    assert _citation(seen=datetime(2024, 5, 1, tzinfo=UTC)).year == "2024"  # when it came


def test_a_name_holding_and_stays_one_name() -> None:
    entry = cite.bibtex_entry(_citation(authors=("Mallory and Sons", "Ann Bell")), "k")
    assert "author = {{Mallory and Sons} and Ann Bell}" in entry


def test_keys_are_unique_and_given_by_arrival() -> None:
    old = _citation(seen=NOW)
    new = _citation(seen=NOW + timedelta(days=1))
    assert cite.keys([new, old]) == ["bell2026titlea", "bell2026title"]
    many = [_citation(seen=NOW + timedelta(minutes=i)) for i in range(30)]
    keys = cite.keys(many)
    assert len(set(keys)) == 30
    assert keys[27] == "bell2026titleaa"
    assert cite.base_key(_citation(authors=("Jörg Müller",))) == "muller2026title"
    assert cite.base_key(_citation(authors=("张三",))) == "anon2026title"
    assert cite.base_key(_citation(title="On the Art of Drafting")) == "bell2026art"


_TEXT = st.text(
    alphabet=st.sampled_from("abcXYZ 019&%#_{}é中—:-'`"), min_size=1, max_size=40
).filter(str.strip)


@given(_TEXT)
def test_latex_escaping_reads_back_as_the_text(text: str) -> None:
    entry = cite.bibtex_entry(_citation(title=" ".join(text.split())), "k")
    (read,) = bibtexparser.parse_string(
        entry, append_middleware=[LatexDecodingMiddleware()]
    ).entries
    assert read["title"] == " ".join(text.split())
