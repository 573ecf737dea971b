"""The site in a real browser (SPEC.md, "The site (for people)"): Debian's chromium driven by
Playwright, public/ served by `feeds serve` on 127.0.0.1 as a static host would.

One run publishes the seeds and a digest with a speculative-cascades paper, with link
checks on and no network (every check fails on its name lookup). Then: search in English
and in Chinese, also under a path prefix (a GitHub Pages project site); every paper reached
by following links from the front page, each page at 390 px wide without sideways
scrolling, without raw error text, with tap targets of 24 px and unslanted Chinese; the
copy buttons; and axe-core (tests/vendor/axe-core) finding nothing on the pages.

Skipped, with the reason, where chromium or Playwright is missing; PAPERFEEDS_BROWSER_TESTS
=required (as .ci/run sets) makes that a failure instead.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

from feeds.pipeline import run
from feeds.publish import search
from tests.conftest import Workspace, _local_getaddrinfo, make_workspace, pagefind_env

pytestmark = pytest.mark.browser

T0 = datetime(2026, 12, 4, 7, 0, tzinfo=UTC)
AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
PHONE = {"width": 390, "height": 844}
CASCADES = "Faster Cascades via Speculative Decoding"
DIGEST = f"""NeurIPS

{CASCADES}

通过推测解码实现更快的级联

Harikrishna Narasimhan, Wittawat Jitkrittum, Ankit Singh Rawat, Seungyeon Kim

机构 * Google Research（谷歌研究院） 纠错

AI总结 将模型级联与推测解码结合，在保持输出质量的同时降低大模型推理成本。

Comments Accepted at ICLR 2025. Code: https://github.com/example/speculative-cascades
"""
# What a page must never show: the raw notes of failed link checks (exceptions, errno).
RAW = re.compile(r"Traceback|Errno|Exception|gaierror|ConnectError|getaddrinfo|"
                 r"name not resolved|NameResolution|Temporary failure")  # fmt: skip


def _need(reason: str) -> None:
    if os.environ.get("PAPERFEEDS_BROWSER_TESTS") == "required":
        pytest.fail(f"browser tests are required here, but {reason}")
    pytest.skip(reason)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need("Playwright is not installed (pip install playwright; no browser download)")
    chromium = _chromium()
    if chromium is None:
        _need("Debian's chromium is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """The seeds and a new digest published with Pagefind, link checks on, no network."""
    ws = make_workspace(tmp_path_factory.mktemp("browser"))
    (ws.inbox / "zz_cascades.txt").write_text(DIGEST, "utf-8")
    config = ws.config()
    links = replace(config.settings.links, check=True)
    config = replace(config, settings=replace(config.settings, links=links))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(socket, "getaddrinfo", _local_getaddrinfo)  # every name lookup fails
        # The papers in four parts of the index, as a long history is (by 20, the newest by
        # 5): each part answers a query on its own, and the browser merges them.
        m.setattr(search, "BIG", 20)
        m.setattr(search, "SMALL", 5)
        for name, value in pagefind_env().items():
            if name == "PAGEFIND_BINARY_PATH":
                m.setenv(name, value)
        if "PAGEFIND_BINARY_PATH" not in pagefind_env():
            m.delenv("PAGEFIND_BINARY_PATH", raising=False)
        summary = run(config, now=lambda: T0)
    assert summary.exit_code == 0, summary
    assert summary.link_statuses.get("error"), summary.link_statuses  # checked, and failed
    return ws


def _serve(folder: Path) -> Iterator[str]:
    """Serve a folder with `feeds serve` on 127.0.0.1 and a free port; yield its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "feeds", "serve", "--public", str(folder),
         "--host", "127.0.0.1", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            found = re.search(r"serving .* at (http://\S+/)", line)
            if found:
                yield found.group(1)
                break
        else:
            pytest.fail("feeds serve did not start")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def url(site: Workspace) -> Iterator[str]:
    yield from _serve(site.public)


@pytest.fixture(scope="module")
def searchable(site: Workspace) -> None:
    """The site has its search index (Pagefind was there to build it)."""
    if not (site.public / "search" / "index.json").is_file():
        _need("Pagefind is not installed: the site was published without a search index")


@pytest.fixture(scope="module")
def prefixed(site: Workspace, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site at /repo/ of a host, as GitHub Pages serves a project's site."""
    host = tmp_path_factory.mktemp("pages")
    shutil.copytree(site.public, host / "repo")
    (host / "index.html").write_text("<!DOCTYPE html><title>host</title>", "utf-8")
    for base in _serve(host):
        yield base + "repo/"


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=PHONE)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    yield tab
    context.close()
    assert not errors, errors  # no script failed on any page


def _results(page: Any) -> list[str]:
    page.wait_for_selector("#results li a", timeout=15000)
    return page.locator("#results li > a").all_inner_texts()


MINEDRAFT = "MineDraft: A Framework for Batch Parallel Speculative Decoding"
LK = "LK Losses: Direct Acceptance Rate Optimization for Speculative Decoding"
# Words no paper has, which Pagefind answered with papers holding a prefix of them: the
# initial "Z." of an author, the word "a", "as", the "B" of "4B".
NONSENSE = ("zzqqxx", "ajfkdlsq", "asdfgh", "blorft", "zebra")


def _settled(page: Any) -> str:
    """Return what the search page says once its search is done."""
    page.wait_for_function(
        "(s => s.length > 0 && !s.startsWith('Searching'))"
        "(document.querySelector('#search-status').textContent)",
        timeout=15000,
    )
    return str(page.locator("#search-status").inner_text())


@pytest.mark.parametrize("word", NONSENSE)
def test_a_word_no_paper_has_finds_nothing(
    page: Any, url: str, searchable: None, word: str
) -> None:
    page.goto(url + "search.html?q=" + word)
    assert _settled(page) == f"Nothing found for “{word}”."
    assert page.locator("#results li").count() == 0
    assert page.locator("#topics li").count() == 0


def test_a_chinese_query_finds_minedraft_first(page: Any, url: str, searchable: None) -> None:
    page.goto(url + "search.html?q=推测解码")
    assert _results(page)[0] == MINEDRAFT


def test_papers_are_the_answer_and_topics_a_section_of_their_own(
    page: Any, url: str, searchable: None
) -> None:
    page.goto(url + "search.html?q=speculative decoding")
    assert sorted(_results(page)) == sorted([CASCADES, LK, MINEDRAFT])
    assert _settled(page) == "3 papers for “speculative decoding”."
    links = page.locator("#results li > a").evaluate_all("as => as.map(a => a.pathname)")
    assert all("/papers/" in link for link in links), links
    topics = page.locator("#topics li a")
    assert topics.all_inner_texts() == ["Speculative decoding"]
    assert topics.first.evaluate("a => a.pathname").endswith("/topics/speculative-decoding.html")
    fits = page.evaluate(_CHECKS)  # at 390 px
    assert fits["sideways"] <= 0, fits["sideways"]
    assert not fits["small"], fits["small"]


def test_a_result_shows_its_authors_and_a_line_of_its_summary(
    page: Any, url: str, searchable: None
) -> None:
    page.goto(url + "search.html?q=推测解码")
    _results(page)
    minedraft = page.locator("#results > li").first
    authors = minedraft.locator(".au").inner_text()
    assert authors == "Zhenwei Tang, Arun Verma, Zijian Zhou et al. · ICML"
    line = minedraft.locator(".sum")
    # Of the summary, around the match (marked): not the title or the authors again.
    assert "显著提升推测解码的吞吐量" in line.inner_text()
    assert line.locator("mark").all_inner_texts()
    assert "".join(line.locator("mark").all_inner_texts()) in "推测解码" * 3
    assert "批量并行推测解码框架" not in line.inner_text()
    assert line.get_attribute("lang") == "zh"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("推测解码", "MineDraft"),
        ("speculative decodings", "MineDraft"),  # English as English: its endings aside
        ("Zhenwei Tang", "MineDraft"),  # authors are searched
        ("specul", "MineDraft"),  # a word being typed
        ("speculative cascades", CASCADES),
        ("MineDraft 推测解码", "MineDraft"),
    ],
)
def test_search_finds_papers_in_english_and_chinese(
    page: Any, url: str, searchable: None, query: str, expected: str
) -> None:
    page.goto(url + "search.html?q=" + query)
    found = _results(page)
    assert any(expected in title for title in found[:3]), found
    assert re.fullmatch(rf"\d+ papers? for “{query}”\.", _settled(page))


def test_search_as_you_type_and_follow_a_result(page: Any, url: str, searchable: None) -> None:
    page.goto(url + "index.html")
    page.fill("header input[name=q]", "MineDraft")
    page.press("header input[name=q]", "Enter")  # the header's box opens the search page
    assert page.locator("#q").input_value() == "MineDraft"
    _results(page)
    page.fill("#q", "")
    page.type("#q", "speculative cascades")
    page.wait_for_function(
        "t => [...document.querySelectorAll('#results li > a')]"
        ".some(a => a.textContent.includes(t))",
        arg=CASCADES,
    )
    page.locator("#results li > a", has_text=CASCADES).first.click()
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == CASCADES


def test_search_works_under_a_path_prefix(page: Any, prefixed: str, searchable: None) -> None:
    page.goto(prefixed + "search.html?q=推测解码")
    _results(page)
    href = page.locator("#results li > a").first.get_attribute("href")
    assert urlsplit(urljoin(prefixed, href)).path.startswith("/repo/papers/"), href
    page.locator("#results li > a").first.click()
    page.wait_for_load_state()
    assert page.url.startswith(prefixed + "papers/")
    assert page.locator("h1").count() == 1


def test_search_says_when_it_is_not_available(page: Any, site: Workspace, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(site.public, bare, ignore=shutil.ignore_patterns("search"))
    for base in _serve(bare):
        page.goto(base + "search.html?q=MineDraft")
        page.wait_for_function("document.querySelector('#search-status').textContent.length > 20")
        assert "not available" in page.locator("#search-status").inner_text()


_CHECKS = """() => {
  const root = document.documentElement;
  const targets = [...document.querySelectorAll(
      'header a, nav a, td.sub a, .parts a, button:not([hidden]), input')]
    .map(e => [e.outerHTML.slice(0, 80), e.getBoundingClientRect()])
    .filter(([_, r]) => r.width > 0 && (r.width < 24 || r.height < 24))
    .map(([html]) => html);
  const slanted = [...document.querySelectorAll('[lang|=zh], [lang|=zh] *')]
    .filter(e => getComputedStyle(e).fontStyle !== 'normal').map(e => e.outerHTML.slice(0, 80));
  const lists = [...document.querySelectorAll('ol.papers')].map(ol => {
    const style = getComputedStyle(ol);
    if (style.listStylePosition === 'inside') return true;
    const probe = document.createElement('span');
    probe.textContent = '999.'; probe.style.font = style.font; document.body.append(probe);
    const room = parseFloat(style.paddingLeft) >= probe.getBoundingClientRect().width + 4;
    probe.remove(); return room;
  });
  const zhFont = [...document.querySelectorAll('[lang|=zh]')].slice(0, 1)
    .map(e => getComputedStyle(e).fontFamily);
  return {sideways: root.scrollWidth - root.clientWidth, text: document.body.innerText,
          small: targets, slanted, clipped: lists.filter(x => !x).length, zhFont};
}"""


def test_every_paper_is_reachable_from_the_index_and_every_page_fits_a_phone(
    page: Any, url: str, site: Workspace
) -> None:
    todo, seen, problems = [url + "index.html"], set(), []
    while todo:
        here = todo.pop()
        if here in seen:
            continue
        seen.add(here)
        answer = page.goto(here)
        assert answer is not None, here
        assert answer.ok, here
        got = page.evaluate(_CHECKS)
        where = here.removeprefix(url)
        if got["sideways"] > 0:
            problems.append(f"{where}: scrolls sideways by {got['sideways']} px at 390 px")
        if RAW.search(got["text"]):
            problems.append(f"{where}: raw error text {RAW.search(got['text'])[0]!r}")
        problems += [f"{where}: tap target under 24 px: {t}" for t in got["small"]]
        problems += [f"{where}: slanted Chinese: {t}" for t in got["slanted"]]
        if got["clipped"]:
            problems.append(f"{where}: list numbers of three digits would be cut off")
        for font in got["zhFont"]:
            if "Noto Sans CJK SC" not in font or "PingFang SC" not in font:
                problems.append(f"{where}: Chinese text without CJK faces: {font}")
        for href in page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)"):
            target = href.split("#")[0].split("?")[0]
            if target.startswith(url) and target.endswith(".html") and target not in seen:
                todo.append(target)
    assert not problems, "\n".join(problems[:30])
    papers = {p.name for p in (site.public / "papers").glob("*.html")}
    reached = {Path(urlsplit(u).path).name for u in seen if "/papers/" in u}
    assert reached == papers
    assert url + "topics/all.html" in seen


def test_copy_buttons_copy_the_feed_addresses(browser: Any, url: str) -> None:
    context = browser.new_context(viewport=PHONE, permissions=["clipboard-read", "clipboard-write"])
    try:
        tab = context.new_page()
        tab.goto(url + "topics/speculative-decoding.html")
        feed = tab.locator("#feed-rss").inner_text()
        assert feed == "http://localhost:8000/feeds/speculative-decoding.rss.xml"  # absolute
        tab.locator("button[data-copy=feed-rss]").click()
        tab.wait_for_function("document.querySelector('.copied').textContent.length > 0")
        assert tab.evaluate("navigator.clipboard.readText()") == feed
        assert feed in tab.locator(".copied").inner_text()
        tab.locator("button[data-copy=feed-opml]").click()
        assert tab.evaluate("navigator.clipboard.readText()").endswith("/feeds.opml")
    finally:
        context.close()


def test_a_paper_page_copies_its_bibtex(browser: Any, url: str) -> None:
    from feeds.text import paper_id

    context = browser.new_context(viewport=PHONE, permissions=["clipboard-read", "clipboard-write"])
    try:
        tab = context.new_page()
        minedraft = "MineDraft: A Framework for Batch Parallel Speculative Decoding"
        tab.goto(url + f"papers/{paper_id(minedraft)}.html")
        tab.locator("button[data-copy=bibtex]").click()
        tab.wait_for_function("document.querySelector('.copied').textContent.length > 0")
        copied = tab.evaluate("navigator.clipboard.readText()")
        assert copied.startswith("@inproceedings{tang2026minedraft,")
        assert copied.strip() == tab.locator("#bibtex").inner_text().strip()
        assert tab.locator(".copied").inner_text() == "Copied the BibTeX entry"
    finally:
        context.close()


def test_without_javascript_the_addresses_are_there_and_no_button_is(
    browser: Any, url: str
) -> None:
    context = browser.new_context(viewport=PHONE, java_script_enabled=False)
    try:
        tab = context.new_page()
        tab.goto(url + "topics/speculative-decoding.html")
        assert tab.locator("#feed-atom").inner_text().endswith("speculative-decoding.atom.xml")
        assert tab.locator("button.copy:visible").count() == 0
        tab.goto(url + "search.html")
        assert "needs JavaScript" in tab.locator("main").inner_text()
    finally:
        context.close()


def _axe(page: Any) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(AXE))
    tags = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
    found: list[dict[str, Any]] = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})"
        ".then(r => r.violations.map(v => ({id: v.id, nodes: v.nodes.map(n => n.target)})))",
        tags,
    )
    return found


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_on_the_pages(
    page: Any, url: str, site: Workspace, searchable: None, scheme: str
) -> None:
    page.emulate_media(color_scheme=scheme)
    minedraft = next(
        p.name for p in (site.public / "papers").glob("*.html") if "<h1>MineDraft" in p.read_text()
    )
    found = {}
    for path in ("index.html", "topics/speculative-decoding.html", "topics/all.html",
                 f"papers/{minedraft}", "search.html?q=推测解码",
                 "search.html?q=speculative decoding"):  # fmt: skip
        page.goto(url + path)
        if path.startswith("search"):
            _results(page)
        found[path] = _axe(page)
    assert not any(found.values()), found


def test_no_page_asks_for_a_file_the_site_lacks(browser: Any, url: str) -> None:
    # A new browser: Chromium asks a host for /favicon.ico once, and remembers that it failed.
    # That request is the browser's, not the page's: Playwright's page.on("response") does
    # not see it, the DevTools protocol's network events do.
    fresh = browser.browser_type.launch(executable_path=_chromium())
    try:
        tab = fresh.new_page(viewport=PHONE)
        failed: list[str] = []
        asked: list[str] = []
        tab.on("response", lambda r: r.status < 400 or failed.append(f"{r.status} {r.url}"))
        cdp = tab.context.new_cdp_session(tab)
        cdp.send("Network.enable")
        cdp.on("Network.requestWillBeSent", lambda e: asked.append(e["request"]["url"]))

        def answered(e: dict[str, Any]) -> None:
            if e["response"]["status"] >= 400:
                failed.append(f"{e['response']['status']} {e['response']['url']}")

        cdp.on("Network.responseReceived", answered)
        tab.goto(url + "index.html")
        for _ in range(30):  # the icon is asked for after the page's load, if at all
            if any(u.endswith("/favicon.ico") for u in asked) and failed:
                break
            tab.wait_for_timeout(100)
        for path in ("topics/speculative-decoding.html", "topics/all.html", "search.html"):
            tab.goto(url + path)
            tab.wait_for_load_state("networkidle")
        assert not failed, failed
        assert tab.locator("link[rel=icon]").count() == 1
    finally:
        fresh.close()
