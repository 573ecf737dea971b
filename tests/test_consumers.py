"""Real feed consumers read what paperfeeds publishes (SPEC.md, "Output" and "Feed items").

feedparser and lxml read the files; the `reader` library subscribes over HTTP (a local
http.server on 127.0.0.1) and follows the feeds across runs: the seeds, then a new digest
(tests/data/new_digest/), then a run with nothing new.
"""

from __future__ import annotations

import email.utils
import functools
import http.server
import json
import re
import shutil
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import feedparser
import pytest
from lxml import etree

from feeds.pipeline import run

NEW_DIGEST = Path(__file__).parent / "data" / "new_digest"
SEED_PAPERS = 60
FIXED = datetime(2026, 3, 2, 8, 30, 0, tzinfo=UTC)
BASE_URL = "https://feeds.example.org/papers/"
ATOM = "{http://www.w3.org/2005/Atom}"
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")

# What the new digest brings: three new papers, and MineDraft again with a code link.
NEW_TITLES = {
    "Tree-Structured Speculative Decoding with Adaptive Draft Lengths",
    "Sparse Autoencoders Reveal Linear Features in Protein Folding Models",
    "Robust Federated Optimization under Heterogeneous Client Drift",
}
NEW_SPECULATIVE = "Tree-Structured Speculative Decoding with Adaptive Draft Lengths"
REPEATED = "MineDraft: A Framework for Batch Parallel Speculative Decoding"
REPEATED_LINK = "https://github.com/example/minedraft"


def _rfc3339(text: str) -> datetime:
    assert RFC3339.match(text), f"not RFC 3339 with a zone: {text!r}"
    dt = datetime.fromisoformat(text)
    assert dt.tzinfo is not None
    return dt


def _rfc822(text: str) -> datetime:
    dt = email.utils.parsedate_to_datetime(text)
    assert dt.tzinfo is not None, f"no time zone: {text!r}"
    return dt


def _absolute(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


# --- one run over the seeds, with a fixed clock and a base URL with a path --------------


@pytest.fixture(scope="module")
def site(new_workspace):
    ws = new_workspace("consumers")
    settings = ws.root / "config" / "settings.yaml"
    settings.write_text(f"site:\n  title: Paper feeds\n  base_url: {BASE_URL}\n", "utf-8")
    config = ws.config(settings=settings)
    summary = run(config, now=lambda: FIXED)
    assert summary.exit_code == 0, summary
    return ws, config, summary


@pytest.fixture(scope="module")
def public(site) -> Path:
    return site[0].public


@pytest.fixture(scope="module")
def topic_ids(site) -> list[str]:
    return [t.id for t in site[1].topics]


def _feed_files(public: Path, suffix: str) -> list[Path]:
    files = sorted((public / "feeds").glob(f"*{suffix}"))
    assert files, f"no *{suffix} feeds in {public}"
    return files


def _feed_name(path: Path) -> str:
    return path.name.split(".")[0]


def _json_feed(public: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((public / "feeds" / f"{name}.json").read_text("utf-8"))
    return data


def _parsed(path: Path) -> Any:
    return feedparser.parse(path.read_bytes())


def test_every_feed_parses_cleanly_with_feedparser(public):
    for path in _feed_files(public, ".rss.xml") + _feed_files(public, ".atom.xml"):
        d = _parsed(path)
        assert d.bozo == 0, f"{path.name}: {d.get('bozo_exception')}"
        assert d.version == ("rss20" if path.name.endswith(".rss.xml") else "atom10")


def test_every_entry_has_id_title_link_and_zoned_date(public):
    for path in _feed_files(public, ".rss.xml") + _feed_files(public, ".atom.xml"):
        rss = path.name.endswith(".rss.xml")
        for e in _parsed(path).entries:
            keys = set(e.keys())
            where = f"{path.name}: {e.get('title')!r}"
            assert e.get("id"), where
            assert e.get("title"), where
            assert _absolute(e.get("link", "")), where
            dates = [e[k] for k in ("published", "updated") if k in keys]
            assert dates, f"{where} has no date"
            for text in dates:
                dt = _rfc822(text) if rss else _rfc3339(text)
                assert dt == FIXED, where


def test_all_feeds_carry_every_seed_paper(public):
    for path in (public / "feeds" / "all.rss.xml", public / "feeds" / "all.atom.xml"):
        entries = _parsed(path).entries
        assert len(entries) == SEED_PAPERS, path.name
        assert len({e.id for e in entries}) == SEED_PAPERS, path.name
    items = _json_feed(public, "all")["items"]
    assert len(items) == SEED_PAPERS
    assert len({i["id"] for i in items}) == SEED_PAPERS


def test_topic_feeds_agree_on_their_items(site, public, topic_ids):
    summary = site[2]
    for name in topic_ids:
        json_items = _json_feed(public, name)["items"]
        # First run over an empty state: every member is new, none above max_items (200 >= 60).
        assert len(json_items) == summary.new_matches[name], name
        for suffix in (".rss.xml", ".atom.xml"):
            entries = _parsed(public / "feeds" / f"{name}{suffix}").entries
            assert [e.id for e in entries] == [i["id"] for i in json_items], name + suffix
    assert len(_json_feed(public, "icml-2026")["items"]) == SEED_PAPERS
    assert len(_json_feed(public, "speculative-decoding")["items"]) >= 2


def _ids_by_title(public: Path) -> dict[tuple[str, str], set[str]]:
    """Return every id each title has in each feed (all, or a topic), across its formats."""
    ids: dict[tuple[str, str], set[str]] = {}
    for path in _feed_files(public, ".rss.xml") + _feed_files(public, ".atom.xml"):
        for e in _parsed(path).entries:
            ids.setdefault((_feed_name(path), e.title), set()).add(e.id)
    for path in _feed_files(public, ".json"):
        for item in json.loads(path.read_text("utf-8"))["items"]:
            ids.setdefault((_feed_name(path), item["title"]), set()).add(item["id"])
    return ids


def test_item_ids_are_uuid_urns_one_per_feed_and_the_same_everywhere(public, new_workspace):
    ids = _ids_by_title(public)
    assert len({title for _feed, title in ids}) == SEED_PAPERS
    for (feed, title), found in ids.items():
        assert len(found) == 1, f"{feed}: {title!r} has several ids: {found}"
        (urn,) = found
        assert urn.startswith("urn:uuid:"), urn
        assert str(uuid.UUID(urn.removeprefix("urn:uuid:"))) == urn.removeprefix("urn:uuid:")
    # One id per item: readers (newsboat) keep one article per id across all their feeds,
    # so a paper in `all` and in topics has an id in each.
    assert len({next(iter(v)) for v in ids.values()}) == len(ids)
    assert len(ids) > SEED_PAPERS  # papers are in `all` and in topics

    # Another base URL, another clock, another digest file name: the same ids.
    other = new_workspace("consumers-other")
    for path in sorted(other.inbox.iterdir()):
        path.rename(path.with_name("renamed-" + path.name))
    run(other.config(), now=lambda: FIXED + timedelta(days=30))
    assert _ids_by_title(other.public) == ids


def test_json_feeds_are_json_feed_1_1(public):
    for path in _feed_files(public, ".json"):
        doc = json.loads(path.read_text("utf-8"))
        assert doc["version"] == "https://jsonfeed.org/version/1.1", path.name
        assert isinstance(doc["title"], str)
        assert doc["title"]
        assert doc["feed_url"] == f"{BASE_URL}feeds/{path.name}"
        assert _absolute(doc["home_page_url"])
        assert isinstance(doc["items"], list)
        for item in doc["items"]:
            assert isinstance(item["id"], str)
            assert item["id"]
            assert isinstance(item["content_html"], str)
            assert item["content_html"]
            assert _rfc3339(item["date_published"]) == FIXED
            assert _absolute(item["url"])


def test_json_items_carry_the_paperfeeds_extension(public, topic_ids):
    for name in ["all", *topic_ids]:
        for item in _json_feed(public, name)["items"]:
            ext = item["_paperfeeds"]
            assert re.fullmatch(r"[0-9a-f]{16}", ext["paper_id"]), ext["paper_id"]
            assert ext["venue"] == "ICML"
            assert ext["title_zh"] is None or isinstance(ext["title_zh"], str)
            assert isinstance(ext["authors"], list)
            assert all(isinstance(a, str) and a for a in ext["authors"])
            for inst in ext["institutions"]:
                assert set(inst) == {"name", "name_zh"}
                assert inst["name"]
            for hit in ext["matched"]:
                assert set(hit) == {"term", "field"}
                assert hit["term"]
                assert hit["field"] in ("title", "summary", "authors", "institutions",
                                        "comments", "venue")  # fmt: skip
            for link in ext["links"]:
                assert set(link) >= {"url", "kind", "source", "status", "final_url", "http_status"}
                assert link["status"] == "unchecked"  # nothing has checked them
                assert link["final_url"] is None
                assert link["http_status"] is None
                assert _absolute(link["url"])
            if name not in {"all", "icml-2026"}:
                assert ext["matched"], f"{name}: {item['title']!r} says nothing matched"
    everything = _json_feed(public, "all")["items"]
    assert sum(bool(i["_paperfeeds"]["title_zh"]) for i in everything) > SEED_PAPERS // 2
    assert sum(bool(i["_paperfeeds"]["institutions"]) for i in everything) > 0
    assert sum(len(i["_paperfeeds"]["links"]) for i in everything) > 0


# --- validator rules, structurally --------------------------------------------------------


def _xml(path: Path) -> Any:
    return etree.fromstring(path.read_bytes(), etree.XMLParser(resolve_entities=False))


def test_rss_feeds_follow_the_validator_rules(public):
    for path in _feed_files(public, ".rss.xml"):
        root = _xml(path)
        assert root.tag == "rss"
        assert root.get("version") == "2.0"
        channel = root.find("channel")
        for tag in ("title", "link", "description"):
            assert (channel.findtext(tag) or "").strip(), f"{path.name}: channel has no {tag}"
        assert _absolute(channel.findtext("link"))
        self_links = [x for x in channel.findall(f"{ATOM}link") if x.get("rel") == "self"]
        assert [x.get("href") for x in self_links] == [f"{BASE_URL}feeds/{path.name}"]
        if channel.find("lastBuildDate") is not None:
            assert _rfc822(channel.findtext("lastBuildDate")) == FIXED
        items = channel.findall("item")
        assert items or _feed_name(path) not in ("all", "icml-2026")
        for item in items:
            guid = item.find("guid")
            assert guid is not None, path.name
            assert guid.get("isPermaLink") == "false"
            assert guid.text.startswith("urn:uuid:")
            assert (item.findtext("title") or "").strip()
            assert _absolute(item.findtext("link"))
            assert _rfc822(item.findtext("pubDate")) == FIXED


def test_atom_feeds_follow_the_validator_rules(public):
    for path in _feed_files(public, ".atom.xml"):
        root = _xml(path)
        assert root.tag == f"{ATOM}feed"
        assert root.findtext(f"{ATOM}id").startswith("urn:uuid:")
        assert (root.findtext(f"{ATOM}title") or "").strip()
        assert (root.findtext(f"{ATOM}author/{ATOM}name") or "").strip()
        self_links = [x for x in root.findall(f"{ATOM}link") if x.get("rel") == "self"]
        assert [x.get("href") for x in self_links] == [f"{BASE_URL}feeds/{path.name}"]
        for el in root.iter(f"{ATOM}link"):
            assert _absolute(el.get("href")), f"{path.name}: relative href {el.get('href')!r}"
        # The feed's date is the newest entry's date (here: the injected clock), never now().
        updated = _rfc3339(root.findtext(f"{ATOM}updated"))
        assert updated == FIXED
        entries = root.findall(f"{ATOM}entry")
        assert entries or _feed_name(path) not in ("all", "icml-2026")
        if entries:
            assert updated == max(_rfc3339(e.findtext(f"{ATOM}updated")) for e in entries)
        for e in entries:
            assert e.findtext(f"{ATOM}id").startswith("urn:uuid:")
            assert (e.findtext(f"{ATOM}title") or "").strip()
            assert _rfc3339(e.findtext(f"{ATOM}updated")) == FIXED
            links = e.findall(f"{ATOM}link")
            assert links, f"{path.name}: entry without a link"
            assert all(_absolute(x.get("href")) for x in links)


def test_item_content_is_the_whole_paper_in_every_format(public):
    """SPEC "Feed items": content holds the Chinese title, authors, links and matched terms."""
    json_items = {i["id"]: i for i in _json_feed(public, "speculative-decoding")["items"]}
    assert json_items
    for suffix in (".rss.xml", ".atom.xml"):
        for e in _parsed(public / "feeds" / f"speculative-decoding{suffix}").entries:
            ext = json_items[e.id]["_paperfeeds"]
            html = " ".join(c.value for c in e.get("content", []))
            where = f"speculative-decoding{suffix}: {e.title!r}"
            assert ext["title_zh"] in html, where
            assert ext["authors"][0] in html, where
            assert "matched:" in html, where
            for link in ext["links"]:
                assert link["url"] in html, where
    with_links = [i for i in _json_feed(public, "all")["items"] if i["_paperfeeds"]["links"]]
    assert with_links
    entries = {e.id: e for e in _parsed(public / "feeds" / "all.atom.xml").entries}
    for item in with_links:
        html = " ".join(c.value for c in entries[item["id"]].get("content", []))
        for link in item["_paperfeeds"]["links"]:
            assert link["url"] in html, f"all.atom.xml: {item['title']!r} lacks {link['url']}"


def test_a_run_with_nothing_new_rewrites_nothing(site):
    ws, config, _ = site
    before = _snapshot(ws.public)
    summary = run(config, now=lambda: FIXED + timedelta(days=3))
    assert summary.files.written == 0
    assert summary.papers_new == 0
    assert _snapshot(ws.public) == before


# --- a feed reader subscribes over HTTP ---------------------------------------------------


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serve files; ignore If-Modified-Since so that the reader sees every byte each time."""

    def send_head(self):
        del self.headers["If-Modified-Since"]
        return super().send_head()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def served(workspace) -> Iterator[str]:
    workspace.public.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(_Handler, directory=str(workspace.public))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _snapshot(public: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(public)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(public.rglob("*"))
        if p.is_file()
    }


def _update(rdr: Any) -> dict[str, Any]:
    results = {r.url: r.value for r in rdr.update_feeds_iter(scheduled=False)}
    errors = {url: v for url, v in results.items() if isinstance(v, Exception)}
    assert not errors, errors
    return results


def _entries(rdr: Any, url: str) -> dict[str, Any]:
    entries = list(rdr.get_entries(feed=url))
    counts = Counter(e.id for e in entries)
    assert all(n == 1 for n in counts.values()), f"{url}: repeated ids {counts.most_common(3)}"
    return {e.id: e for e in entries}


def _import_reader() -> Any:
    """Import `reader`, whose vendored feedparser still imports `sgmllib` (sgmllib3k).

    feedparser 6.0.14 (installed here) depends on feedparser-sgmllib instead, so an environment
    built from our test extras may lack `sgmllib`; the fork is a drop-in replacement.
    """
    try:
        import sgmllib  # noqa: F401
    except ModuleNotFoundError:
        import feedparser_sgmllib

        sys.modules["sgmllib"] = feedparser_sgmllib
    import reader

    return reader


def test_a_feed_reader_follows_the_feeds_across_runs(workspace, served, tmp_path):
    reader = _import_reader()
    UpdatedFeed, make_reader = reader.UpdatedFeed, reader.make_reader

    config = workspace.config()
    t1 = FIXED
    assert run(config, now=lambda: t1).exit_code == 0

    urls = {"all": f"{served}feeds/all.atom.xml"}
    urls |= {t.id: f"{served}feeds/{t.id}.rss.xml" for t in config.topics}
    rdr = make_reader(str(tmp_path / "reader.sqlite"))
    try:
        for url in urls.values():
            rdr.add_feed(url)
        first = _update(rdr)
        assert set(first) == set(urls.values())
        seen = {name: _entries(rdr, url) for name, url in urls.items()}
        assert len(seen["all"]) == SEED_PAPERS
        assert len({e.title for e in seen["all"].values()}) == SEED_PAPERS
        assert first[urls["all"]].new == SEED_PAPERS

        # A new digest: three new papers, and a known one again with a new code link.
        for path in NEW_DIGEST.glob("*.txt"):
            shutil.copy(path, workspace.inbox / path.name)
        t2 = t1 + timedelta(days=1)
        summary = run(config, now=lambda: t2)
        assert summary.exit_code == 0, summary
        assert summary.papers_new == len(NEW_TITLES)
        second = _update(rdr)
        after = {name: _entries(rdr, url) for name, url in urls.items()}
        new_titles = {
            name: {after[name][i].title for i in after[name].keys() - seen[name].keys()}
            for name in urls
        }
        assert new_titles["all"] == NEW_TITLES
        assert NEW_SPECULATIVE in new_titles["speculative-decoding"]
        for name, url in urls.items():
            assert REPEATED not in new_titles[name], f"{name}: the known paper came back as new"
            assert new_titles[name] <= NEW_TITLES, name
            assert seen[name].keys() <= after[name].keys(), f"{name}: entries disappeared"
            value = second[url]
            assert isinstance(value, UpdatedFeed), (name, value)
            assert value.new == len(new_titles[name]), name
        assert len(after["all"]) == SEED_PAPERS + len(NEW_TITLES)
        # The known paper's entry was updated in place: same id, its code link, its old date.
        repeated = next(e for e in after["all"].values() if e.title == REPEATED)
        assert repeated.id in seen["all"]
        assert second[urls["all"]].modified >= 1
        assert repeated.link == REPEATED_LINK
        assert repeated.updated == t1

        # Nothing new: the reader sees nothing new or modified, and no file is touched.
        before = _snapshot(workspace.public)
        summary = run(config, now=lambda: t2 + timedelta(days=1))
        assert summary.exit_code == 0, summary
        assert summary.files.written == 0
        third = _update(rdr)
        for url, value in third.items():
            if value is not None:
                assert isinstance(value, UpdatedFeed), (url, value)
                assert (value.new, value.modified) == (0, 0), (url, value)
        assert _snapshot(workspace.public) == before
    finally:
        rdr.close()
