"""Read and validate `subscriptions.yaml` and `settings.yaml` into the objects of feeds.config.

Every mistake is reported as ConfigError with file:line and, where obvious, a suggestion.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import yaml

from feeds.config.library import load as load_library
from feeds.config.yamlfile import compose, line_of, scalar, text_lists
from feeds.errors import ConfigError, ConfigErrors
from feeds.match.terms import check_term, regex_source
from feeds.model import Diagnostic
from feeds.settings import (
    AlertDestination,
    LinkSettings,
    Settings,
    places_problem,
    public_place,
    state_place,
)
from feeds.text import clean_xml, fold
from feeds.topics import DEFAULT_FIELDS, FIELDS, Criteria, Topic
from feeds.urls import http_url_problem
from feeds.words import did_you_mean

TOPIC_ID_MAX = 63  # a file name part, and a URL path segment
TOPIC_ID = re.compile(rf"^[a-z0-9][a-z0-9-]{{0,{TOPIC_ID_MAX - 1}}}$")
RESERVED_IDS = {"all"}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Upper bounds, so that no value fails later as an OverflowError (SQLite takes 64-bit
# integers, timedelta a billion days, time.sleep less) or starts a thread per link.
MAX_ITEMS = 1_000_000  # max_items, site.page_size: papers in a feed, on a page
MAX_CONCURRENCY = 1_000  # links.concurrency and per_host: a thread each
MAX_LOOKUPS = 1_000_000  # links.lookups_per_run
MAX_DAYS = 365  # every duration
T = TypeVar("T")
P = ParamSpec("P")


def parse_duration(text: str) -> float:
    """Return seconds for `30s`, `15m`, `2h`, `1d`; raise ValueError otherwise."""
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a duration like 30s, 15m, 2h or 1d")
    return float(m.group(1)) * _UNITS[m.group(2)]


# How a value's expected type is named in messages: words a user reads, not Python's.
_TYPE_WORDS: dict[type, str] = {
    int: "a whole number", float: "a number", str: "text", bool: "true or false",
    list: "a list", dict: "a mapping",
}  # fmt: skip


class _Reader:
    """Typed access to YAML nodes, raising ConfigError at the node's line.

    Given a list of `errors`, it collects them instead where the caller says it may go on
    (see attempt): a user fixes every mistake of a file after one run, not one per run.
    Without one, the first error is raised.
    """

    def __init__(self, path: Path, errors: list[ConfigError] | None = None) -> None:
        self.path = path
        self.errors = errors

    def fail(self, node: yaml.Node, message: str) -> ConfigError:
        return ConfigError(message, file=str(self.path), line=line_of(node))

    def note(self, error: ConfigError) -> None:
        """Collect an error after which reading can go on, or raise it."""
        if self.errors is None:
            raise error
        self.errors.extend(error.errors if isinstance(error, ConfigErrors) else (error,))

    def attempt(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        """Return fn's value, or None when it failed and its error was collected."""
        if self.errors is None:
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except ConfigError as e:
            self.note(e)
            return None

    def failed_since(self, count: int) -> bool:
        """Whether an error was collected since there were `count`."""
        return self.errors is not None and len(self.errors) > count

    @property
    def count(self) -> int:
        return 0 if self.errors is None else len(self.errors)

    def mapping(self, node: yaml.Node, allowed: tuple[str, ...], what: str) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{what} must be a mapping (key: value lines)")
        out: dict[str, yaml.Node] = {}
        for key, value in node.value:
            name = str(key.value)
            if name not in allowed:
                suggestion = did_you_mean(name, allowed)
                known = ", ".join(allowed)
                self.note(
                    self.fail(key, f"unknown key {name!r} in {what}{suggestion} (known: {known})")
                )
                continue
            out[name] = value
        return out

    def value(self, node: yaml.Node, types: tuple[type, ...], what: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"{what} must be a single value")
        try:
            v = scalar(node)
        except ValueError as e:  # int() refuses a number of more than 4,300 digits
            raise self.fail(node, f"{what} is a number of {len(str(node.value)):,} characters:"
                            " far more than any setting takes") from e  # fmt: skip
        if bool in types and isinstance(v, str):
            raise self.fail(node, f"{what} must be true or false, not {v!r}")
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            names = " or ".join(_TYPE_WORDS.get(t, t.__name__) for t in types)
            raise self.fail(node, f"{what} must be {names}, not {v!r}")
        return v

    def text(self, node: yaml.Node, what: str) -> str:
        """Return a text value exactly as typed: `3.10` stays "3.10", `010` stays "010"."""
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"{what} must be text, not a list or mapping")
        if node.tag == "tag:yaml.org,2002:null" and node.style is None:
            raise self.fail(node, f"{what} is empty; give a value")
        if node.tag == "tag:yaml.org,2002:bool":
            raise self.fail(
                node, f"{what} must be text, not {node.value}; quote it if you mean the word"
            )
        text = clean_xml(str(node.value)).strip()  # "\x85" and friends would reach every feed
        if not text:
            raise self.fail(node, f"{what} must not be empty")
        return text

    def items(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        """Return the nodes of a list; a lone value is a list of one."""
        if isinstance(node, yaml.ScalarNode):
            return [node]
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"{what} must be a list")
        return list(node.value)

    def texts(self, node: yaml.Node, what: str) -> tuple[str, ...]:
        return self.every(self.items(node, what), lambda item: self.text(item, what))

    def each(
        self, node: yaml.Node, what: str, fn: Callable[[yaml.Node], T | None]
    ) -> tuple[T, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"{what} must be a list")
        return self.every(node.value, fn)

    def every(
        self, nodes: Iterable[yaml.Node], fn: Callable[[yaml.Node], T | None]
    ) -> tuple[T, ...]:
        """Return fn of each node, those that failed (or gave None) left out."""
        return tuple(v for v in (self.attempt(fn, n) for n in nodes) if v is not None)


def _read(path: Path) -> yaml.Node | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise ConfigError("file not found", file=str(path)) from e
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read: {e}", file=str(path)) from e
    return compose(text, path)


# What a topic lists (an empty list is a mistake: left out, it would say the same), and more.
_CRITERIA = ("any", "all", "none", "fields", "authors", "institutions", "venues", "like",
             "unlike", "library")  # fmt: skip
_TOPIC_KEYS = ("id", "title", "description", *_CRITERIA, "max_items", "min_similarity")


def read_subscriptions(path: Path) -> tuple[Topic, ...]:
    """Return the topics of a subscriptions file, or raise ConfigError: every error of the
    file at once (ConfigErrors, in the file's order) when there are several. A YAML syntax
    error stops at once: past it there is nothing to read."""
    root = _read(path)
    if root is None:
        raise ConfigError("the file is empty; it needs a 'topics:' list", file=str(path))
    errors: list[ConfigError] = []
    r = _Reader(path, errors)
    topics = r.attempt(_topics, r, root)
    if errors:
        ordered = sorted(errors, key=lambda e: e.line or 0)
        raise ordered[0] if len(ordered) == 1 else ConfigErrors(tuple(ordered))
    assert topics is not None  # no error collected: it returned
    return topics


def _topics(r: _Reader, root: yaml.Node) -> tuple[Topic, ...]:
    top = r.mapping(root, ("topics",), "the subscriptions file")
    if "topics" not in top:
        if r.count:  # `topic:` mistyped: said as an unknown key, with the suggestion
            return ()
        raise r.fail(root, "missing 'topics:' list")
    seen: dict[str, int] = {}
    return r.each(top["topics"], "topics", lambda node: _topic(r, node, seen))


def _terms(r: _Reader, node: yaml.Node, what: str) -> tuple[str, ...]:
    return r.every(r.items(node, what), lambda item: _term(r, item, what))


def _term(r: _Reader, item: yaml.Node, what: str) -> str:
    term = r.text(item, what)
    if term.strip() == "//":
        raise r.fail(item, f"bad term {term!r} in {what}: an empty regular expression")
    try:
        check_term(term)
    except re.error as e:
        raise r.fail(item, f"bad term {term!r} in {what}: {e}") from e
    # Inside a term a `*` would be the character itself, which is rarely meant and then
    # matches next to nothing, silently; a regular expression says either meaning. Not in
    # an institution's name, where it is the name's own (A*STAR).
    if what != "institutions" and regex_source(term) is None and "*" in fold(term).rstrip("*"):
        wildcard, literal = _star_regexes(term)
        raise r.fail(
            item,
            f"bad term {term!r} in {what}: a '*' makes a prefix only at a term's end ('LLM*'"
            f" matches 'LLMs'); inside a term write a regular expression: {wildcard} for any"
            f" letters there, {literal} for the '*' itself",
        )
    return term


_REGEX_SYNTAX = re.compile(r"[\\.^$|?+()\[\]{}]")


def _star_regexes(term: str) -> tuple[str, str]:
    """Return the /regex/ terms a term with a `*` inside may mean: the `*` as letters (a
    lone `*` as a word), and as itself."""
    words = [_REGEX_SYNTAX.sub(lambda m: "\\" + m.group(), w) for w in term.split()]
    wildcard = [r"\w+" if not w.strip("*") else w.replace("*", r"\w*") for w in words]
    literal = [w.replace("*", r"\*") for w in words]
    return "/" + " ".join(wildcard) + "/", "/" + " ".join(literal) + "/"


def _all_group(r: _Reader, node: yaml.Node) -> tuple[str, ...]:
    if not r.items(node, "all"):
        raise r.fail(node, "an item of 'all' is an empty list; give it at least one term")
    return _terms(r, node, "all")


def _topic_id(r: _Reader, node: yaml.Node) -> str:
    topic_id = r.text(node, "id")
    if topic_id in RESERVED_IDS:
        raise r.fail(node, f"topic id {topic_id!r} is reserved (it names the feed of all papers)")
    if len(topic_id) > TOPIC_ID_MAX and TOPIC_ID.match(topic_id[:TOPIC_ID_MAX]):
        raise r.fail(
            node,
            f"topic id {topic_id[:20]}… is {len(topic_id)} characters long; at most"
            f" {TOPIC_ID_MAX} (it becomes a file name)",
        )
    if not TOPIC_ID.match(topic_id):
        raise r.fail(
            node,
            f"topic id {topic_id!r} must be lowercase letters, digits and hyphens "
            "(it becomes a file name), e.g. 'speculative-decoding'",
        )
    return topic_id


def _fields(r: _Reader, node: yaml.Node) -> tuple[str, ...]:
    def field(item: yaml.Node) -> str:
        name = r.text(item, "fields")
        if name not in FIELDS:
            suggestion = did_you_mean(name, FIELDS)
            known = ", ".join(FIELDS)
            raise r.fail(item, f"unknown field {name!r}{suggestion} (known: {known})")
        return name

    return r.every(r.items(node, "fields"), field)


# Each a positive criterion (Criteria.positive): one that failed to read may have been it.
_POSITIVE = ("any", "all", "authors", "institutions", "venues", "like", "library")


def _topic(r: _Reader, node: yaml.Node, seen: dict[str, int]) -> Topic | None:
    """Return the topic, or None when it has errors (collected in r, each key read on)."""
    start = r.count
    m = r.mapping(node, _TOPIC_KEYS, "a topic")
    # A mistyped key (`titel:`) was said with the key it was likely meant as: that key is
    # not said again as missing, nor judged as left out.
    failed = _meant(node, _TOPIC_KEYS)
    for required in ("id", "title"):
        if required not in m and required not in failed:
            r.note(r.fail(node, f"a topic needs {required!r}"))

    def read(key: str, fn: Callable[[yaml.Node], T]) -> T | None:
        if key not in m:
            return None
        before = r.count
        value = r.attempt(fn, m[key])
        if r.failed_since(before):
            failed.add(key)
        return value

    topic_id = read("id", lambda n: _topic_id(r, n))
    if topic_id is not None:
        if topic_id in seen:
            r.note(
                r.fail(node, f"duplicate topic id {topic_id!r} (first at line {seen[topic_id]})")
            )
        else:
            seen[topic_id] = line_of(node)
    title = read("title", lambda n: r.text(n, "title"))
    description = read("description", lambda n: r.text(n, "description"))
    fields = read("fields", lambda n: _fields(r, n))
    all_groups = read("all", lambda n: r.each(n, "all", lambda item: _all_group(r, item)))
    library = read("library", lambda n: r.every(
        r.items(n, "library"), lambda i: load_library(r.path, r.text(i, "library"), line_of(i))
    ))  # fmt: skip
    criteria = Criteria(
        any=read("any", lambda n: _terms(r, n, "any")) or (),
        all=all_groups or (),
        none=read("none", lambda n: _terms(r, n, "none")) or (),
        fields=DEFAULT_FIELDS if fields is None else fields,
        authors=read("authors", lambda n: r.texts(n, "authors")) or (),
        institutions=read("institutions", lambda n: _terms(r, n, "institutions")) or (),
        venues=read("venues", lambda n: r.texts(n, "venues")) or (),
        like=read("like", lambda n: r.texts(n, "like")) or (),
        unlike=read("unlike", lambda n: r.texts(n, "unlike")) or (),
        min_similarity=read("min_similarity", lambda n: _similarity(r, n)),
        library=library or (),
    )
    max_items = read("max_items", lambda n: _count(r, n, "max_items", 1, MAX_ITEMS))
    # What follows judges the values read: one that failed is not judged again.
    if not criteria.positive:
        if not failed.intersection(_POSITIVE):
            r.note(r.fail(
                node,
                f"{_named(topic_id)} has no positive criterion; give at least one of any, all,"
                " authors, institutions, venues, like, library ('none' alone would match"
                " everything)",
            ))  # fmt: skip
    else:
        for key in _CRITERIA:  # `any: []` beside other criteria would be no criterion at all
            if key in m and isinstance(m[key], yaml.SequenceNode) and not m[key].value:
                r.note(r.fail(m[key], f"{key} must not be empty"))
    if not criteria.by_example and not failed.intersection(("like", "library")):
        for key in ("unlike", "min_similarity"):
            if key in m:
                r.note(
                    r.fail(m[key], f"{key} needs like: or library: examples to compare papers with")
                )
    if r.failed_since(start) or topic_id is None or title is None:
        return None
    commas = [  # valid, but `any: a, b` is one term: said by `feeds check`
        Diagnostic(str(r.path), line_of(item), warning)
        for key in ("any", "all", "none") if key in m
        for item, texts, index in text_lists(m[key])
        if (warning := comma_warning(texts, index)) is not None
    ]  # fmt: skip
    return Topic(
        id=topic_id,
        title=title,
        criteria=criteria,
        description=description,
        max_items=max_items,
        line=line_of(node),
        warnings=tuple(commas),
        examples=tuple(line_of(i) for k in ("like", "unlike") if k in m for i in r.items(m[k], k)),
    )


def _meant(node: yaml.Node, allowed: tuple[str, ...]) -> set[str]:
    """Return the keys that the unknown keys of a mapping are closest to (as did_you_mean
    suggests them)."""
    unknown = [str(k.value) for k, _v in node.value if str(k.value) not in allowed]
    if not unknown:
        return set()
    import difflib

    return {hint for name in unknown for hint in difflib.get_close_matches(name, allowed, n=1)}


def _named(topic_id: str | None) -> str:
    return "the topic" if topic_id is None else f"topic {topic_id!r}"


def _similarity(r: _Reader, node: yaml.Node) -> float:
    value = float(r.value(node, (int, float), "min_similarity"))
    if not 0 < value <= 1:
        raise r.fail(node, f"min_similarity must be above 0 and at most 1, not {value:g}")
    return value


_LINK_KEYS: tuple[str, ...] = ("check", "allow_hosts", "timeout", "concurrency", "per_host")
_LINK_KEYS += ("arxiv", "huggingface", "lookups_per_run", "arxiv_api", "huggingface_api")
_LINK_KEYS += ("github_api", "arxiv_delay")
_SETTINGS_KEYS = ("site", "inbox", "sources", "public_dir", "state", "schedule", "settle",
                  "stale_after", "feed", "links", "alerts", "arxiv_backfill")  # fmt: skip


def read_settings(path: Path | None, config_files: Iterable[Path] = ()) -> Settings:
    """Return the settings from a file, defaults for what it leaves out (or if path is None).

    `config_files`: the other config files (the subscriptions), whose folder public/ must
    stay out of, as this file's own (see check_places).
    """
    if path is None:
        return Settings()
    r = _Reader(path)
    root = _read(path)
    if root is None:
        return Settings()
    m = r.mapping(root, _SETTINGS_KEYS, "the settings file")
    s = Settings()
    values: dict[str, Any] = {}
    if "site" in m:
        site = r.mapping(m["site"], ("title", "base_url", "page_size"), "site")
        if "page_size" in site:
            values["page_size"] = _count(r, site["page_size"], "site.page_size", 1, MAX_ITEMS)
        if "title" in site:
            values["site_title"] = r.text(site["title"], "site.title")
        if "base_url" in site:
            url = _http_url(r, site["base_url"], "site.base_url")
            values["base_url"] = url if url.endswith("/") else url + "/"
    if "inbox" in m:
        values["inbox"] = tuple(Path(p) for p in r.texts(m["inbox"], "inbox"))
    if "public_dir" in m:
        try:  # a folder, or s3://bucket/prefix; any other URL is an error, never a folder
            folder, bucket = public_place(r.text(m["public_dir"], "public_dir"))
        except ConfigError as e:
            raise r.fail(m["public_dir"], e.message) from e
        if bucket is None:
            values["public_dir"] = folder
        else:
            values["public_url"] = bucket
    if "state" in m:
        try:  # a file, or postgresql://; any other URL is an error, never a folder
            state_file, state_url = state_place(r.text(m["state"], "state"))
        except ConfigError as e:
            raise r.fail(m["state"], e.message) from e
        if state_url is None:
            values["state"] = state_file
        else:
            values["state_url"] = state_url
    if "schedule" in m:
        sched = r.mapping(m["schedule"], ("every", "cron"), "schedule")
        if len(sched) != 1:
            raise r.fail(m["schedule"], "schedule takes one of 'every' or 'cron'")
        if "every" in sched:
            values["schedule_every"] = _duration(r, sched["every"], "schedule.every", least=1)
        else:
            values["schedule_every"] = None
            cron = r.text(sched["cron"], "schedule.cron")
            from feeds.schedule import crontab  # APScheduler: only for a config with a cron

            try:  # read by the scheduler code that will run it: no second judge of cron
                crontab(cron)
            except ValueError as e:
                raise r.fail(sched["cron"], f"schedule.cron {cron!r}: {e}") from e
            values["schedule_cron"] = cron
    if "settle" in m:
        values["settle"] = _duration(r, m["settle"], "settle")
    if "stale_after" in m:
        values["stale_after"] = _duration(r, m["stale_after"], "stale_after", least=60)
    if "sources" in m:
        urls: list[str] = []
        categories: list[str] = []
        for item in r.items(m["sources"], "sources"):
            if isinstance(item, yaml.MappingNode):  # `- arxiv: [cs.CL, cs.LG]`
                follow = r.mapping(item, ("arxiv",), "a source")
                categories += [_category(r, n) for n in r.items(follow["arxiv"], "arxiv")]
            else:
                urls.append(_http_url(r, item, "sources"))
        values["sources"] = tuple(urls)
        values["arxiv"] = tuple(dict.fromkeys(categories))
    if "arxiv_backfill" in m:
        values["arxiv_backfill"] = _duration(r, m["arxiv_backfill"], "arxiv_backfill", least=3600)
    if "alerts" in m:
        values["alerts"] = tuple(_alert(r, node) for node in r.items(m["alerts"], "alerts"))
    if "feed" in m:
        feed = r.mapping(m["feed"], ("max_items",), "feed")
        if "max_items" in feed:
            values["max_items"] = _count(r, feed["max_items"], "feed.max_items", 1, MAX_ITEMS)
    if "links" in m:
        links = r.mapping(m["links"], _LINK_KEYS, "links")
        lv: dict[str, Any] = {}
        for key in ("check", "arxiv", "huggingface"):
            if key in links:
                lv[key] = r.value(links[key], (bool,), f"links.{key}")
        for key, least, most in (
            ("concurrency", 1, MAX_CONCURRENCY),
            ("per_host", 1, MAX_CONCURRENCY),
            ("lookups_per_run", 0, MAX_LOOKUPS),
        ):
            if key in links:
                lv[key] = _count(r, links[key], f"links.{key}", least, most)
        for key in ("arxiv_api", "huggingface_api", "github_api"):
            if key in links:
                lv[key] = _http_url(r, links[key], f"links.{key}")
        if "allow_hosts" in links:
            lv["allow_hosts"] = r.texts(links["allow_hosts"], "links.allow_hosts")
        if "arxiv_delay" in links:
            lv["arxiv_delay"] = _duration(r, links["arxiv_delay"], "links.arxiv_delay")
        if "timeout" in links:
            lv["timeout"] = _duration(r, links["timeout"], "links.timeout", least=0.1)
        values["links"] = LinkSettings(**lv)
    settings = replace(s, **values)
    # Said here, at the line of what this file sets, if it is at fault; check_places says it
    # again for the paths in effect (the command line's --public, --inbox, --state applied).
    overlap = places_problem(settings, (path, *config_files))
    if overlap is not None:
        keys, message = overlap
        node = next((m[key] for key in keys if key in m), None)
        if node is not None:
            raise r.fail(node, message)
    return settings


def _http_url(r: _Reader, node: yaml.Node, what: str) -> str:
    url = r.text(node, what)
    problem = http_url_problem(url)  # the rule the network and the pages go by
    if problem is not None:
        raise r.fail(node, f"{what} must be an absolute http(s) URL with a host, not {url!r}"
                     f" ({problem})")  # fmt: skip
    return url


def _alert(r: _Reader, node: yaml.Node) -> AlertDestination:
    """Return an alert destination, checked now: its `${NAME}`s are set and Apprise knows
    its URL (the messages never quote the URL: it may hold secrets)."""
    from feeds.alerts.deliver import describe  # Apprise: only for a config with alerts
    from feeds.alerts.env import check_syntax, expand, unset_names

    a = r.mapping(node, ("to", "topics", "every", "max_papers"), "an alert")
    if "to" not in a:
        raise r.fail(node, "an alert needs `to:`, an Apprise URL (mailto://, ntfy://, json://...)")
    to = r.text(a["to"], "alerts.to")
    line = line_of(a["to"])
    check_syntax(to, file=str(r.path), line=line)
    # An unset variable is no error here: cron and systemd may set it where the run happens,
    # and a run without it stops only this destination (feeds.alerts.send).
    if not unset_names(to, os.environ):
        describe(expand(to, os.environ, file=str(r.path), line=line))  # raises, saying why
    topics = r.texts(a["topics"], "alerts.topics") if "topics" in a else None
    every = _duration(r, a["every"], "alerts.every", least=60) if "every" in a else None
    most = _count(r, a["max_papers"], "alerts.max_papers", 1, 10_000) if "max_papers" in a else None
    return AlertDestination(to, topics, every, most, str(r.path), line)


def _category(r: _Reader, node: yaml.Node) -> str:
    """Return an arXiv category (`cs.CL`, `hep-th`, `cond-mat.stat-mech`)."""
    from feeds.sources.arxiv.harvest import valid_category

    name = r.text(node, "arxiv")
    if not valid_category(name):
        raise r.fail(node, f"{name!r} is not an arXiv category (like cs.CL, hep-th, math.AG)")
    return name


def check_alert_topics(settings: Settings, topics: Iterable[str]) -> None:
    """Raise ConfigError for an alert that names a topic the subscriptions do not have."""
    known = set(topics)
    for alert in settings.alerts:
        for topic in alert.topics or ():
            if topic not in known:
                also = did_you_mean(topic, sorted(known))
                message = f"alerts: no topic {topic!r} in the subscriptions{also}"
                raise ConfigError(message, file=alert.file, line=alert.line)


def _count(r: _Reader, node: yaml.Node, what: str, least: int, most: int) -> int:
    """Return a whole number from least to most, or raise ConfigError naming the range."""
    n: int = r.value(node, (int,), what)
    if not least <= n <= most:
        raise r.fail(node, f"{what} must be at least {least:,} and at most {most:,}")
    return n


def _duration(r: _Reader, node: yaml.Node, what: str, least: float = 0) -> float:
    try:
        seconds = parse_duration(r.text(node, what))
    except ValueError as e:
        raise r.fail(node, f"{what}: {e}") from e
    if seconds < least:
        raise r.fail(node, f"{what} must be at least {least:g}s")
    if seconds > MAX_DAYS * _UNITS["d"]:  # also 400 nines, which a float holds as infinity
        raise r.fail(node, f"{what} must be at most {MAX_DAYS}d")
    return seconds


_COMMAS = re.compile(r"[,，]")  # NFKC makes the full-width comma a comma


def comma_warning(items: tuple[str, ...], index: int) -> str | None:
    """Return a warning for the term `items[index]` if it holds a comma, suggesting the list
    `items` with it split; None for other terms and for regular expressions.

    YAML reads `any: 幻觉, hallucinat*` as the one term "幻觉, hallucinat*" (a comma
    separates only inside [...]), which matches only that text, comma included; so does a
    quoted item, `[a, "b, c"]`."""
    term = items[index]
    if not _COMMAS.search(term) or regex_source(term) is not None:
        return None
    parts = [p.strip() for p in _COMMAS.split(term) if p.strip()]
    listed = [*items[:index], *parts, *items[index + 1 :]]
    return (
        f"{term!r} is one term, comma included (a comma separates terms only in a list);"
        f" for {len(parts)} terms write [{', '.join(listed)}]"
    )
