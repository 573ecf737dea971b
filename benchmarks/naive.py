"""The naive build with search: what a short script doing the same kinds of output as
`feeds run` does, the baseline that run.py times a first build against.

    python benchmarks/naive.py INBOX SUBSCRIPTIONS OUT

It parses and matches with paperfeeds' own parser and matcher (so the comparison is about
the rest of the build), then for every topic and for all papers writes an RSS and an Atom
feed with feedgen and a JSON feed of the newest 100, a Jinja reading list of every match
(one page, the site's style sheet inline) and the same list as BibTeX (bibtexparser) and
RIS (rispy), a Jinja page per paper, each with `write_text`,
and runs Pagefind over the pages as its documentation shows:
`pagefind --site OUT --glob "papers/*.html"`. Prints the seconds of each step on stderr,
and Pagefind's processor time (user + system).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from feedgen.feed import FeedGenerator  # noqa: E402
from jinja2 import Environment  # noqa: E402

from feeds.config import load_subscriptions  # noqa: E402
from feeds.match.fast import Matcher  # noqa: E402
from feeds.model import Paper  # noqa: E402
from feeds.publish.pagefind import pagefind_binary  # noqa: E402
from feeds.sources.digest import parse  # noqa: E402

BASE = "https://example.org/"
NEWEST = 100  # items a feed carries

_ENV = Environment(autoescape=True)
LIST = _ENV.from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>{{ css }}</style></head><body><h1>{{ title }}</h1><ol>
{% for p in papers %}<li><a href="../papers/{{ p.paper_id }}.html">{{ p.title }}</a>
{% if p.title_zh %}<span lang="zh">{{ p.title_zh }}</span>{% endif %}
<p>{{ p.authors | join(", ") }}{% if p.venue %} · {{ p.venue }}{% endif %}</p>
{% if p.summary %}<p lang="zh">{{ p.summary }}</p>{% endif %}</li>
{% endfor %}</ol></body></html>
""")
PAGE = _ENV.from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ p.title }}</title>
<style>{{ css }}</style></head><body><main data-pagefind-body>
<h1>{{ p.title }}</h1>{% if p.title_zh %}<h2 lang="zh">{{ p.title_zh }}</h2>{% endif %}
<p>{{ p.authors | join(", ") }}</p>
<ul>{% for i in p.institutions %}<li>{{ i.name }}
{% if i.name_zh %} ({{ i.name_zh }}){% endif %}</li>{% endfor %}</ul>
{% if p.venue %}<p>{{ p.venue }}</p>{% endif %}
{% if p.abstract %}<h3>Abstract</h3><p>{{ p.abstract }}</p>{% endif %}
{% if p.summary %}<h3>AI summary</h3><p lang="zh">{{ p.summary }}</p>{% endif %}
{% if p.comments %}<p>{{ p.comments }}</p>{% endif %}
</main></body></html>
""")


def write_feeds(out: Path, name: str, papers: list[Paper]) -> None:
    newest = papers[-NEWEST:][::-1]
    fg = FeedGenerator()
    fg.id(f"{BASE}topics/{name}.html")
    fg.title(name)
    fg.link(href=f"{BASE}topics/{name}.html", rel="alternate")
    fg.description(f"Papers of {name}")
    for p in reversed(newest):  # feedgen puts each new entry first
        e = fg.add_entry()
        url = f"{BASE}papers/{p.paper_id}.html"
        e.id(url)
        e.title(p.title)
        e.link(href=url)
        e.description(p.summary or p.title)
        for author in p.authors:
            e.author(name=author)
    fg.rss_file(str(out / "feeds" / f"{name}.xml"))
    fg.atom_file(str(out / "feeds" / f"{name}.atom"))
    items = [
        {"id": p.paper_id, "url": f"{BASE}papers/{p.paper_id}.html", "title": p.title,
         "content_text": p.summary or p.title, "authors": [{"name": a} for a in p.authors]}
        for p in newest
    ]  # fmt: skip
    feed = {"version": "https://jsonfeed.org/version/1.1", "title": name, "items": items}
    (out / "feeds" / f"{name}.json").write_text(json.dumps(feed, ensure_ascii=False))


def write_citations(out: Path, name: str, papers: list[Paper]) -> None:
    """Write a topic's reading list as BibTeX and RIS, the plain way: every entry made
    anew for each topic, the whole file written by each format's library."""
    import bibtexparser
    import rispy
    from bibtexparser.library import Library
    from bibtexparser.model import Entry, Field

    entries, records = [], []
    for i, p in enumerate(papers):
        key = f"{(p.authors[0].split()[-1] if p.authors else 'anon').lower()}{i}"
        page = f"{BASE}papers/{p.paper_id}.html"
        fields = [Field("title", p.title), Field("author", " and ".join(p.authors)),
                  Field("booktitle", p.venue or ""), Field("url", page)]  # fmt: skip
        entries.append(Entry("inproceedings", key, fields))
        records.append({"type_of_reference": "CONF", "title": p.title, "authors": list(p.authors),
                        "secondary_title": p.venue or "", "id": key})  # fmt: skip
    (out / "topics" / f"{name}.bib").write_text(bibtexparser.write_string(Library(entries)))
    (out / "topics" / f"{name}.ris").write_text(rispy.dumps(records))


def main() -> None:
    inbox, subscriptions, out = (Path(a) for a in sys.argv[1:4])
    steps: dict[str, float] = {}
    start = time.perf_counter()
    topics = load_subscriptions(subscriptions)
    matcher = Matcher([(t.id, t.criteria) for t in topics])
    papers: dict[str, Paper] = {}
    for f in sorted(inbox.glob("*.txt")):
        for _line, paper in parse(f.read_bytes(), f.name).papers:
            papers.setdefault(paper.paper_id, paper)
    members: dict[str, list[Paper]] = {t.id: [] for t in topics}
    for paper in papers.values():
        for topic_id, _hits in matcher.match(paper):
            members[topic_id].append(paper)
    members["all"] = list(papers.values())
    steps["parse and match"] = time.perf_counter() - start

    start = time.perf_counter()
    for folder in ("feeds", "topics", "papers"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    for name, matched in members.items():
        write_feeds(out, name, matched)
    steps["feeds"] = time.perf_counter() - start

    start = time.perf_counter()
    assets = ROOT / "feeds" / "publish" / "assets"
    css = (assets / "lists.css").read_text()
    for name, matched in members.items():
        html = LIST.render(title=name, css=css, papers=matched)
        (out / "topics" / f"{name}.html").write_text(html)
        write_citations(out, name, matched)
    steps["reading lists"] = time.perf_counter() - start

    start = time.perf_counter()
    css = (assets / "page.css").read_text()
    for paper in papers.values():
        (out / "papers" / f"{paper.paper_id}.html").write_text(PAGE.render(p=paper, css=css))
    steps["pages"] = time.perf_counter() - start

    start = time.perf_counter()
    exe = pagefind_binary()
    if exe is None:
        sys.exit("naive build: no Pagefind binary (pip install pagefind[extended])")
    cmd = [str(exe), "--site", str(out), "--glob", "papers/*.html"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    steps["search (Pagefind)"] = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # Pagefind is its only child
    pagefind_cpu = usage.ru_utime + usage.ru_stime

    for what, seconds in steps.items():
        print(f"naive-{what.split()[0]}-seconds {seconds:.3f}", file=sys.stderr)
    print(f"naive-pagefind-cpu-seconds {pagefind_cpu:.3f}", file=sys.stderr)
    print(" + ".join(f"{what} {seconds:.1f}s" for what, seconds in steps.items()))


if __name__ == "__main__":
    main()
