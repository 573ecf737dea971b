"""Links found in digest text: the shapes the seeds have, and the awkward ones they will."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from feeds.links.extract import classify, extract_links, normalize_url
from feeds.model import Link, LinkKind
from feeds.sources.digest import parse

SEEDS = Path(__file__).resolve().parent.parent / "seeds"

# (comment text, [(url, kind), ...]). The first six are comment lines from the seeds, verbatim.
EXTRACT_CASES: list[tuple[str, list[tuple[str, LinkKind]]]] = [
    (
        "Accepted by ICML 2026.Project page: https://jinjinhe2001.github.io/hermite-ngp/",
        [("https://jinjinhe2001.github.io/hermite-ngp/", "project")],
    ),
    (
        "20 pages, Accepted by ICML 2026, Code is available from https://github.com/Jian-Lang/AOEPT",
        [("https://github.com/Jian-Lang/AOEPT", "code")],
    ),
    (
        (
            "Accepted at ICML 2026 as a position paper; Official link: "
            "https://icml.cc/virtual/2026/poster/67097"
        ),
        [("https://icml.cc/virtual/2026/poster/67097", "venue")],
    ),
    (
        "ICML 2026. We provide the code at: https://david-cripto.github.io/idlm-project-page",
        [("https://david-cripto.github.io/idlm-project-page", "project")],
    ),
    (
        (
            "Accepted to ICML 2026. Code and dataset are available at "
            "https://github.com/1059684669/HoloFair"
        ),
        [("https://github.com/1059684669/HoloFair", "code")],
    ),
    (
        (
            "Accepted by ICML 2026.The code repository is available at "
            "https://github.com/wenhao728/spa-cache"
        ),
        [("https://github.com/wenhao728/spa-cache", "code")],
    ),
    # Scheme-less, and glued to the text before it.
    ("Code: github.com/owner/repo", [("https://github.com/owner/repo", "code")]),
    ("代码见github.com/Owner/Repo。", [("https://github.com/Owner/Repo", "code")]),
    ("Code:https://github.com/a/b", [("https://github.com/a/b", "code")]),
    ("代码见https://github.com/a/b）", [("https://github.com/a/b", "code")]),
    ("Project page:jane.github.io/proj", [("https://jane.github.io/proj", "project")]),
    ("See arxiv.org/abs/2401.01234.", [("https://arxiv.org/abs/2401.01234", "paper")]),
    ("Demo at www.example.com/demo", [("https://www.example.com/demo", "other")]),
    ("doi.org/10.1145/3580305.3599", [("https://doi.org/10.1145/3580305.3599", "paper")]),
    # CJK and ASCII punctuation after the URL, and around it.
    ("代码：https://github.com/a/b，欢迎使用", [("https://github.com/a/b", "code")]),
    ("（代码：https://github.com/a/b）", [("https://github.com/a/b", "code")]),
    ("(code: https://github.com/a/b)", [("https://github.com/a/b", "code")]),
    ("More at https://example.com/page.", [("https://example.com/page", "other")]),
    ("Code: https://github.com/a/b...", [("https://github.com/a/b", "code")]),
    ("Code: https://github.com/a/b/.", [("https://github.com/a/b", "code")]),
    ("“https://example.com/q”", [("https://example.com/q", "other")]),
    ("<https://example.com/a>", [("https://example.com/a", "other")]),
    ("[code](https://github.com/a/b)", [("https://github.com/a/b", "code")]),
    (
        "See https://en.wikipedia.org/wiki/Diffusion_(disambiguation)",
        [("https://en.wikipedia.org/wiki/Diffusion_(disambiguation)", "other")],
    ),
    (
        "(see https://en.wikipedia.org/wiki/Foo_(bar))",
        [("https://en.wikipedia.org/wiki/Foo_(bar)", "other")],
    ),
    # Normalized: .git, tracking parameters, case, ports.
    ("Code: https://github.com/a/b.git", [("https://github.com/a/b", "code")]),
    ("https://gitlab.com/group/sub/proj.git", [("https://gitlab.com/group/sub/proj", "code")]),
    (
        "https://example.com/x?utm_source=twitter&id=3&fbclid=abc#",
        [("https://example.com/x?id=3", "other")],
    ),
    ("https://example.com/p?utm_medium=social", [("https://example.com/p", "other")]),
    ("HTTP://WWW.GitHub.com/Owner/Repo/", [("https://github.com/Owner/Repo", "code")]),
    ("https://github.com:443/o/r", [("https://github.com/o/r", "code")]),
    # Two links, and the same link three times.
    (
        "代码：https://github.com/a/b，数据：https://huggingface.co/datasets/a/b。",
        [("https://github.com/a/b", "code"), ("https://huggingface.co/datasets/a/b", "code")],
    ),
    (
        "Project page: https://a.github.io/p, code: https://example.org/c",
        [("https://a.github.io/p", "project"), ("https://example.org/c", "other")],
    ),
    (
        "https://a.com/x,https://b.com/y",
        [("https://a.com/x", "other"), ("https://b.com/y", "other")],
    ),
    (
        "https://github.com/a/b and github.com/a/b.git and http://github.com/a/b/",
        [("https://github.com/a/b", "code")],
    ),
    # A URL in a parameter of another stays part of it.
    (
        "https://web.archive.org/web/2024/https://x.org/p",
        [("https://web.archive.org/web/2024/https://x.org/p", "other")],
    ),
    # Labels before a URL on any host.
    ("Project page: https://example.com/proj", [("https://example.com/proj", "project")]),
    ("项目主页：https://example.com/proj", [("https://example.com/proj", "project")]),
    ("Homepage https://cs.foo.edu/~me/p", [("https://cs.foo.edu/~me/p", "project")]),
    # Not links.
    ("Contact: alice@github.com or bob@www.example.org", []),
    ("Mail https://alice@example.com/x", []),
    ("Accepted by ICML 2026", []),
    ("ICML 2026.The end. See Sec.3.2 and fig.4", []),
    ("https://localhost/x and https://intranet/page", []),
    ("https:// and www. alone", []),
    ("Bold **https://github.com/a/b**", [("https://github.com/a/b", "code")]),
]


@pytest.mark.parametrize(("text", "expected"), EXTRACT_CASES)
def test_extract_links(text: str, expected: list[tuple[str, LinkKind]]) -> None:
    links = extract_links(text)
    assert [(link.url, link.kind) for link in links] == expected
    assert all(link.source == "digest" and link.status == "unchecked" for link in links)


def test_extract_links_reads_every_text_in_order() -> None:
    links = extract_links(
        None,
        "Code: https://github.com/a/b",
        "",
        "Proc. ICML, https://proceedings.mlr.press/v235/x24a.html; https://github.com/a/b",
    )
    assert links == (
        Link("https://github.com/a/b", "code"),
        Link("https://proceedings.mlr.press/v235/x24a.html", "paper"),
    )


def test_extract_links_of_nothing() -> None:
    assert extract_links() == ()
    assert extract_links(None, "") == ()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTPS://Example.COM/Path/X", "https://example.com/Path/X"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        ("http://github.com/Owner/Repo", "https://github.com/Owner/Repo"),
        ("https://www.github.com/o/r/", "https://github.com/o/r"),
        ("https://github.com/o/r.git/", "https://github.com/o/r"),
        ("https://github.com/o/r.git.git", "https://github.com/o/r"),
        ("https://gitlab.inria.fr/g/p.git", "https://gitlab.inria.fr/g/p"),
        ("https://github.com/o/r/tree/main/", "https://github.com/o/r/tree/main/"),
        ("https://github.com/o/", "https://github.com/o/"),
        ("https://example.com/site.git", "https://example.com/site.git"),
        ("https://x.org/a?b=1&utm_campaign=c&gclid=z", "https://x.org/a?b=1"),
        ("https://x.org/a?UTM_Source=c", "https://x.org/a"),
        ("https://x.org/a#utm_source=feed", "https://x.org/a"),
        ("https://x.org/a#:~:text=hello", "https://x.org/a"),
        ("https://x.org/a#section-2", "https://x.org/a#section-2"),
        ("https://x.org/a?", "https://x.org/a"),
        ("github.com/o/r", "https://github.com/o/r"),
        ("https://[bad", "https://[bad"),
    ],
)
def test_normalize_url(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


@pytest.mark.parametrize(
    ("url", "context", "kind"),
    [
        ("https://github.com/o/r", "", "code"),
        ("https://github.com/o/r/tree/main/src", "", "code"),
        ("https://github.com/owner", "", "other"),
        ("https://github.com/topics/diffusion", "", "other"),
        ("https://gist.github.com/o/abc123", "", "code"),
        ("https://gitlab.com/g/p", "", "code"),
        ("https://bitbucket.org/o/r", "", "code"),
        ("https://codeberg.org/o/r", "", "code"),
        ("https://huggingface.co/org/model", "", "code"),
        ("https://huggingface.co/datasets/org/data", "", "code"),
        ("https://huggingface.co/spaces/org/demo", "", "code"),
        ("https://huggingface.co/papers/2401.01234", "", "paper"),
        ("https://huggingface.co/org", "", "other"),
        ("https://huggingface.co/docs/transformers", "", "other"),
        ("https://paperswithcode.com/paper/x", "", "other"),
        ("https://arxiv.org/abs/2401.01234", "", "paper"),
        ("https://arxiv.org/pdf/2401.01234v2", "", "paper"),
        ("https://arxiv.org/html/2401.01234", "", "paper"),
        ("https://arxiv.org/list/cs.LG/new", "", "other"),
        ("https://openreview.net/forum?id=abc", "", "paper"),
        ("https://openreview.net/group?id=ICML.cc/2026", "", "venue"),
        ("https://doi.org/10.1145/1", "", "paper"),
        ("https://dx.doi.org/10.1145/1", "", "paper"),
        ("https://aclanthology.org/2024.acl-long.1/", "", "paper"),
        ("https://proceedings.mlr.press/v235/a.html", "", "paper"),
        ("https://papers.nips.cc/paper/2023/hash/x", "", "paper"),
        ("https://example.edu/~me/paper.PDF", "", "paper"),
        ("https://openaccess.thecvf.com/content/CVPR2024/papers/X.pdf", "", "paper"),
        ("https://jane.github.io/proj/", "", "project"),
        ("https://example.com/p", "Project page: ", "project"),
        ("https://example.com/p", "project website ", "project"),
        ("https://example.com/p", "项目主页：", "project"),
        ("https://github.com/o/r", "Project page: ", "code"),
        ("https://www.youtube.com/watch?v=x", "", "video"),
        ("https://youtu.be/x", "", "video"),
        ("https://vimeo.com/1", "", "video"),
        ("https://www.bilibili.com/video/BV1", "", "video"),
        ("https://icml.cc/virtual/2026/poster/1", "", "venue"),
        ("https://neurips.cc/Conferences/2026", "", "venue"),
        ("https://iclr.cc/", "", "venue"),
        ("https://openaccess.thecvf.com/CVPR2024", "", "venue"),
        ("https://2024.aclweb.org/", "", "venue"),
        ("https://example.com/", "", "other"),
        ("not a url [", "", "other"),
        ("https://[bad", "", "other"),
    ],
)
def test_classify(url: str, context: str, kind: LinkKind) -> None:
    assert classify(url, context) == kind


# Every link in the seed digests, across both files.
SEED_LINKS = {
    ("https://david-cripto.github.io/idlm-project-page", "project"),
    ("https://github.com/Jian-Lang/AOEPT", "code"),
    ("https://jinjinhe2001.github.io/hermite-ngp/", "project"),
    ("https://icml.cc/virtual/2026/poster/67097", "venue"),
    ("https://github.com/1059684669/HoloFair", "code"),
    ("https://github.com/wenhao728/spa-cache", "code"),
}


def test_seed_links() -> None:
    found: set[tuple[str, str]] = set()
    files = sorted(SEEDS.glob("*.txt"))
    assert files
    for path in files:
        for _, paper in parse(path.read_bytes(), path.name).papers:
            found |= {
                (link.url, link.kind) for link in extract_links(paper.comments, paper.journal_ref)
            }
    assert found == SEED_LINKS


# Pieces that make the interesting paths likely; plain text finds the rest.
_PIECES = st.sampled_from(
    [
        *("https://", "http://", "github.com/", "www.", "a.github.io", ".", "(", ")", "[", "]"),
        *("）", "。", "，", "见", " ", "\n", "\u00a0", "\u200b", "@", ":", "/", "?utm_source=x"),
        *("#", ".git", "a", "Z", "9", "é", "-", "%", "=", "&", "[::1]", ":99999", "\x00"),
    ]
)


@given(st.one_of(st.text(), st.lists(_PIECES, max_size=30).map("".join)))
def test_extract_links_never_raises_and_returns_urls(text: str) -> None:
    for link in extract_links(text, text[::-1]):
        assert link.url.startswith(("http://", "https://"))
        assert not any(c.isspace() for c in link.url)
        assert normalize_url(link.url) == link.url


def test_the_url_expression_is_case_insensitive_exactly_where_case_exists() -> None:
    """_URL scopes IGNORECASE to the scheme and hosts (compiling it over the CJK classes
    costs every run 9 ms); on any text it finds what the expression compiled wholly
    case-insensitive finds."""
    import random
    import re

    from feeds.links import extract

    hosts = "|".join(extract._SCHEMELESS_HOSTS)
    body = extract._BODY
    whole = re.compile(rf"https?://{body}+|(?<![a-z0-9_.@-])(?:{hosts}){body}*", re.IGNORECASE)
    pieces = [
        "https://", "HTTP://", "hTtPs://", "httpſ://", "github.com/", "GitHub.COM/", "www.",
        "WWW.", "x.github.io", "A.GITHUB.IO", "arxiv.org/abs/", "DOI.org/10.", "dx.doi.org/10.",
        "@", "a", "Z", "K", "k", "\u212a", "ſ", "_", ".", "-", "/", " ", "。", "（", "）", "代码",
        "Ａ", "ａ", "\u3000", "\u2026", "\ufeff", "\U00020001", "1", "?", "=", "é", "\n", "\x85",
    ]  # fmt: skip
    rng = random.Random(6)
    found = 0
    for _ in range(30_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        expected = [(m.start(), m.group()) for m in whole.finditer(text)]
        assert [(m.start(), m.group()) for m in extract._URL.finditer(text)] == expected, text
        found += bool(expected)
    assert found > 10_000


_PIECES = (
    "Accepted at ICML 2026", " ", ".", "/", "Code: ", "WWW.", "GitHub.com/", "gitlab.COM/",
    "bitbucket.org/", "codeberg.org/", "HuggingFace.co/", "arxiv.org/abs/", "ArXiv.org/pdf/",
    "dx.doi.org/10.", "doi.org/10.", "lab.github.io", "x.GitHub.IO", "https://", "HTTP://",
    ":/", "github.co", "www", "org/", "abc", "1234", "(", ")", "，", "代码", "é", "\u212a",
)  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_texts_passed_over_without_a_search_hold_no_url(text: str) -> None:
    from feeds.links.extract import _URL, _may_hold_url

    assert _may_hold_url(text) or _URL.search(text) is None


def test_the_pre_check_passes_over_plain_comments() -> None:
    from feeds.links.extract import _may_hold_url

    assert not _may_hold_url("Accepted at ICML 2026. 9 pages, 4 figures")
    assert _may_hold_url("Code: GitHub.com/a/b")
