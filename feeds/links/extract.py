"""Find, normalize and classify the links in a paper's comments. Pure: text in, Links out."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit, urlunsplit

from feeds.model import Link, LinkKind
from feeds.text import CJK_CLASS

# Where a URL ends. Digests are Chinese-English mixes with no space between a URL and the
# sentence after it (`https://x/y）。`), so any CJK character or punctuation ends a URL, as do
# general punctuation (curly quotes, ellipsis, zero-width spaces), controls and the characters
# RFC 3986 calls unsafe delimiters in prose (`<https://x>`, `"https://x"`).
_STOP = (
    r"\s<>\"`\\\x00-\x1f\x7f-\x9f\u2000-\u206f\ufe10-\ufe1f\ufe50-\ufe6f\ufeff"
    r"\U00020000-\U0003ffff" + CJK_CLASS
)
_BODY = f"[^{_STOP}]"

# Scheme-less forms are taken only for hosts that papers name without a scheme; a general
# `word.word/...` rule would turn `2026.Project` and file names into links. The lookbehind
# keeps `alice@github.com` and `notgithub.com` out but lets glued text like `代码见github.com`
# and `Code:github.com` in.
_SCHEMELESS_HOSTS = (
    r"www\.",
    r"(?:github\.com|gitlab\.com|bitbucket\.org|codeberg\.org|huggingface\.co)/",
    r"arxiv\.org/(?:abs|pdf)/",
    r"(?:dx\.)?doi\.org/10\.",
    r"[a-z0-9-]+\.github\.io(?![a-z0-9-])",
)
# Case-insensitive only where case exists: under a global IGNORECASE, compiling _BODY's
# forty thousand CJK code points also folds each one's case (9 ms of every run that reads a
# digest). _BODY has no cased characters but fullwidth Latin, whose two cases it holds both.
_URL = re.compile(
    rf"(?i:https?://){_BODY}+"
    rf"|(?i:(?<![a-z0-9_.@-])(?:{'|'.join(_SCHEMELESS_HOSTS)})){_BODY}*"
)
# What every text _URL matches in holds, in ASCII lower case: most comments ("ICML 2026")
# hold none, and these tests cost a fraction of a search, which cannot skip ahead to a
# literal and tries the expression at every character.
_URL_MARKERS = (
    "www.", "github.com/", "gitlab.com/", "bitbucket.org/", "codeberg.org/",
    "huggingface.co/", "arxiv.org/", "doi.org/10.", ".github.io",
)  # fmt: skip
# A second scheme inside a match starts a second URL (`https://a/x,https://b/y`), unless it is
# a parameter or path of the first (`?u=https://...`, `web.archive.org/web/2024/https://...`).
_GLUED_SCHEME = re.compile(r"(?<=[^=/?&:%])https?://", re.IGNORECASE)
_HAS_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_TRAILING = ".,;:!?'\"*"  # `*` too: `**https://x**` is Markdown bold, not part of the URL
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_LABEL = re.compile(r"^[\w-]+$")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_GITHUB_REPO_SLASH = re.compile(r"/[^/]+/[^/]+/")  # `/owner/repo/`, where the `/` is noise
CONTEXT_CHARS = 40

_DEFAULT_PORTS = {"http": 80, "https": 443}
_CODE_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org")
_TRACKING_PARAMS = frozenset({"fbclid", "gclid", "msclkid", "mc_cid", "mc_eid"})

# First path segments that are GitHub's or Hugging Face's own pages, not an owner's.
GITHUB_RESERVED = frozenset(
    {"about", "collections", "enterprise", "explore", "features", "login", "marketplace"}
    | {"orgs", "pricing", "settings", "site", "sponsors", "topics", "trending"}
)
_HF_RESERVED = frozenset(
    {"blog", "chat", "collections", "docs", "join", "learn", "login", "models", "pricing"}
    | {"settings", "tasks", "organizations"}
)

_PAPER_HOSTS = (
    "openreview.net",
    "doi.org",
    "aclanthology.org",
    "proceedings.mlr.press",
    "papers.nips.cc",
    "proceedings.neurips.cc",
    "jmlr.org",
    "ojs.aaai.org",
    "dl.acm.org",
    "ieeexplore.ieee.org",
    "link.springer.com",
    "biorxiv.org",
    "medrxiv.org",
)
_VIDEO_HOSTS = ("youtube.com", "youtu.be", "vimeo.com", "bilibili.com", "b23.tv")
_VENUE_HOSTS = (
    "icml.cc",
    "neurips.cc",
    "nips.cc",
    "iclr.cc",
    "thecvf.com",
    "ecva.net",
    "aclweb.org",
    "emnlp.org",
    "naacl.org",
    "eacl.org",
    "aaai.org",
    "ijcai.org",
    "kdd.org",
    "sigir.org",
    "thewebconf.org",
    "miccai.org",
    "auai.org",
    "aistats.org",
    "colmweb.org",
    "corl.org",
    "roboticsconference.org",
)
# Said just before a URL, these make it the project's page whatever its host.
_PROJECT_LABELS = re.compile(
    r"project\s*(?:page|website|site)|home\s*page|web\s*page|项目主页|项目页面|主页",
    re.IGNORECASE,
)


def _may_hold_url(text: str) -> bool:
    """False only for a text in which _URL cannot match."""
    if "://" in text or not text.isascii():  # beyond ASCII, case rules: the search decides
        return True
    if "." not in text:  # every marker has one
        return False
    lower = text.lower()
    return any(marker in lower for marker in _URL_MARKERS)


def extract_links(*texts: str | None) -> tuple[Link, ...]:
    """Return the links in the texts, in order of appearance, without duplicates.

    Each link's URL is normalized (see normalize_url), its kind comes from classify with the
    text just before it as context, its source is "digest" and its status "unchecked".
    """
    seen: set[str] = set()
    links: list[Link] = []
    for text in texts:
        if not text or not _may_hold_url(text):
            continue
        pos = 0
        prev_end = 0  # a label belongs to the next URL only, never to one after it
        while (m := _URL.search(text, pos)) is not None:
            raw = m.group()
            glued = _GLUED_SCHEME.search(raw, 1)
            if glued is not None:
                raw = raw[: glued.start()]
            pos = m.start() + len(raw)
            raw = _trim(raw)
            context = text[max(prev_end, m.start() - CONTEXT_CHARS) : m.start()]
            prev_end = m.start() + len(raw)
            url = _accept(raw)
            if url is None:
                continue
            url = normalize_url(url)
            if url in seen:
                continue
            seen.add(url)
            links.append(Link(url=url, kind=classify(url, context)))
    return tuple(links)


def normalize_url(url: str) -> str:
    """Return the canonical form of a URL, the one links are compared and stored by.

    Lowercases scheme and host, drops default ports, tracking query parameters (utm_*,
    fbclid, gclid...) and tracking or empty fragments, a `.git` suffix on code hosts and the
    trailing slash of a bare GitHub repository; github.com is always https without `www.`.
    Paths keep their case. A URL without a scheme is taken as https. A URL that cannot be
    parsed is returned as given.
    """
    if not _HAS_SCHEME.match(url):
        url = "https://" + url.lstrip("/")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if host in ("github.com", "www.github.com"):
        # Both forms redirect to this one; comparing them as different would duplicate links.
        scheme, host = "https", "github.com"
    path = parts.path
    if _on_code_host(host):
        path = _without_git_suffix(path)
    if host == "github.com" and _GITHUB_REPO_SLASH.fullmatch(path):
        path = path[:-1]
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        netloc = f"{userinfo}@{netloc}"
    query = "&".join(p for p in parts.query.split("&") if p and not _is_tracking(p))
    fragment = "" if _is_tracking_fragment(parts.fragment) else parts.fragment
    return urlunsplit(SplitResult(scheme, netloc, path, query, fragment))


def classify(url: str, context: str = "") -> LinkKind:
    """Return what a URL points to: code, project, paper, video, venue or other.

    `context` is the text just before the URL; a label there ("Project page:", "项目主页")
    makes a link that is not code, a paper or a video the project page.
    """
    try:
        parts = urlsplit(url if _HAS_SCHEME.match(url) else "https://" + url)
    except ValueError:
        return "other"
    host = (parts.hostname or "").lower().removeprefix("www.")
    segments = [s for s in parts.path.split("/") if s]
    if parts.path.lower().endswith(".pdf"):
        return "paper"
    if host in ("github.com", "gist.github.com"):
        if host == "gist.github.com" or (len(segments) >= 2 and segments[0] not in GITHUB_RESERVED):
            return "code"
        return "other"
    if _on_code_host(host):
        return "code" if len(segments) >= 2 else "other"
    if host in ("huggingface.co", "hf.co"):
        return _classify_hugging_face(segments)
    if _host_in(host, "paperswithcode.com"):
        return "other"
    if _host_in(host, "arxiv.org"):
        return "paper" if segments and segments[0] in ("abs", "pdf", "html") else "other"
    if _host_in(host, "openreview.net") and segments[:1] == ["group"]:
        return "venue"  # a conference's page on OpenReview, not one paper's
    if _host_in(host, "aclweb.org") and segments[:1] == ["anthology"]:
        return "paper"  # the ACL Anthology's old address
    if _host_in(host, *_PAPER_HOSTS):
        return "paper"
    if _host_in(host, *_VIDEO_HOSTS):
        return "video"
    if _PROJECT_LABELS.search(context):
        return "project"
    if host.endswith(".github.io"):
        return "project"
    if _host_in(host, *_VENUE_HOSTS):
        return "venue"
    return "other"


def _classify_hugging_face(segments: list[str]) -> LinkKind:
    if not segments:
        return "other"
    if segments[0] == "papers":
        return "paper"
    if segments[0] in ("datasets", "spaces"):
        return "code" if len(segments) >= 2 else "other"
    if segments[0] in _HF_RESERVED or len(segments) < 2:
        return "other"
    return "code"  # huggingface.co/owner/model


def _trim(raw: str) -> str:
    """Return a matched URL without the sentence punctuation that followed it."""
    while raw:
        last = raw[-1]
        if last in _TRAILING:
            raw = raw[:-1]
        elif last in _CLOSERS and raw.count(last) > raw.count(_CLOSERS[last]):
            # Wikipedia's `Foo_(bar)` keeps its `)`; `(see https://x/y)` loses it.
            raw = raw[:-1]
        else:
            break
    return raw


def _accept(raw: str) -> str | None:
    """Return raw as an absolute http(s) URL, or None when it is not a plausible link."""
    url = raw if _HAS_SCHEME.match(raw) else "https://" + raw
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS:
        return None
    if "@" in parts.netloc:
        # `https://name@host` is a mail address after a scheme, or credentials a link
        # checker must never send; either way not a link to show.
        return None
    host = parts.netloc.rpartition(":")[0] if ":" in parts.netloc else parts.netloc
    labels = host.split(".")
    if len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        return None
    if not _IPV4.match(host) and (len(labels[-1]) < 2 or labels[-1].isdigit()):
        return None
    try:
        parts.port  # noqa: B018 -- raises on a port that is not a number in range
    except ValueError:
        return None
    return url


def _host_in(host: str, *domains: str) -> bool:
    return any(host == d or host.endswith("." + d) for d in domains)


def _on_code_host(host: str) -> bool:
    # Self-hosted GitLab instances (gitlab.inria.fr) are code hosts too.
    return host.removeprefix("www.") in _CODE_HOSTS or host.startswith("gitlab.")


def _without_git_suffix(path: str) -> str:
    # `o/r.git` is the clone address of the repository whose page is `o/r`.
    while path.removesuffix("/").endswith(".git"):
        path = path.removesuffix("/").removesuffix(".git")
    return path


def _is_tracking(param: str) -> bool:
    name = param.partition("=")[0].lower()
    return name.startswith("utm_") or name in _TRACKING_PARAMS


def _is_tracking_fragment(fragment: str) -> bool:
    # `#:~:text=` is a browser's scroll-to-text marker, `#utm_source=` a campaign tag.
    if not fragment or fragment.startswith(":~:"):
        return True
    params = fragment.split("&")
    return all("=" in p and _is_tracking(p) for p in params)
