"""The configuration as frozen objects, and loading it (from a cache when the files are
unchanged: validating a thousand topics costs more than the rest of a run that has nothing
to do). Reading and validating the YAML files is feeds.configfile's work."""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from feeds import __version__

# Bump when the pickled objects change shape in a way the code stamp below would not see.
CACHE_FORMAT = 1


FIELDS = ("title", "summary", "authors", "institutions", "comments", "venue")
DEFAULT_FIELDS = ("title", "summary")


@dataclass(frozen=True)
class Criteria:
    """A topic's matching rules, as validated config gives them."""

    any: tuple[str, ...] = ()
    all: tuple[tuple[str, ...], ...] = ()
    none: tuple[str, ...] = ()
    fields: tuple[str, ...] = DEFAULT_FIELDS
    authors: tuple[str, ...] = ()
    institutions: tuple[str, ...] = ()
    venues: tuple[str, ...] = ()

    @property
    def positive(self) -> bool:
        return bool(self.any or self.all or self.authors or self.institutions or self.venues)


@dataclass(frozen=True)
class Topic:
    id: str
    title: str
    criteria: Criteria
    description: str | None = None
    max_items: int | None = None
    line: int = 0

    # Both are kept in the state and compared on every run; computed once and cached with
    # the config. The repr of a frozen dataclass of tuples of strings is stable.
    @cached_property
    def fingerprint(self) -> str:
        """A hash of what decides the topic's papers (not its title or size)."""
        import hashlib  # hashlib loads OpenSSL (~3 ms): not on a run that reads the cache

        return hashlib.sha256(repr(self.criteria).encode()).hexdigest()[:16]

    @cached_property
    def looks(self) -> str:
        """A hash of what the topic's pages show besides its papers (title, size)."""
        import hashlib
        import json

        data = [self.title, self.description, self.max_items]
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class LinkSettings:
    check: bool = True
    allow_hosts: tuple[str, ...] = ()
    timeout: float = 20.0  # total time for one URL, redirects included
    concurrency: int = 8
    per_host: int = 2
    arxiv: bool = True  # look up papers without a code link on arXiv...
    huggingface: bool = True  # ...and on Hugging Face's paper pages
    lookups_per_run: int = 20  # arXiv allows one request per 3 s: bound a run's time
    arxiv_delay: float = 3.0  # seconds between arXiv requests, as arXiv asks
    arxiv_api: str = "https://export.arxiv.org/api/query"
    huggingface_api: str = "https://huggingface.co/api"
    github_api: str = "https://api.github.com"


@dataclass(frozen=True)
class Settings:
    site_title: str = "paperfeeds"
    base_url: str = "http://localhost:8000/"
    page_size: int = 500  # papers per page of a topic's reading list
    inbox: tuple[Path, ...] = (Path("seeds"),)
    sources: tuple[str, ...] = ()
    public_dir: Path = Path("public")
    state: Path = Path(".paperfeeds/state.sqlite3")
    schedule_every: float | None = 900.0
    schedule_cron: str | None = None
    settle: float = 5.0
    stale_after: float = 3 * 86400.0  # a source unchanged this long is reported as stale
    max_items: int = 100
    links: LinkSettings = field(default_factory=LinkSettings)


@dataclass(frozen=True)
class Config:
    settings: Settings
    topics: tuple[Topic, ...]
    subscriptions_path: Path


def load_settings(path: Path | None, config_files: tuple[Path, ...] = ()) -> Settings:
    """Return the settings from a file, defaults for what it leaves out (or if path is None).

    `config_files`: the other config files, whose folders public/ must stay out of.
    """
    from feeds.configfile import read_settings

    return read_settings(path, config_files)


def load_subscriptions(path: Path) -> tuple[Topic, ...]:
    """Return the topics of a subscriptions file, or raise ConfigError."""
    from feeds.configfile import read_subscriptions

    return read_subscriptions(path)


def load(subscriptions: Path, settings: Path | None) -> Config:
    """Return the whole validated configuration.

    The result is cached (in the user's cache folder) under the exact bytes of both files,
    the working folder and the code that reads them; any difference reads the files again.
    """
    key = _cache_key(subscriptions, settings)
    path = _cache_path(subscriptions, settings)
    if key is not None:
        cached = cache_read(path, key)
        if isinstance(cached, Config):
            return cached
    config = Config(
        settings=load_settings(settings, (subscriptions,)),
        topics=load_subscriptions(subscriptions),
        subscriptions_path=subscriptions,
    )
    if key is not None:
        for topic in config.topics:  # computed now, so that the cache holds them
            _ = topic.fingerprint, topic.looks
        cache_write(path, key, config)
    return config


def cache_dir() -> Path:
    """Where derived, disposable data goes: $XDG_CACHE_HOME/paperfeeds or ~/.cache/paperfeeds."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "paperfeeds"


def code_stamp() -> list[tuple[str, int, int]]:
    # A changed reader (a new field, a new rule) must not be answered from an old cache.
    here = Path(__file__).parent
    stamp = []
    for name in ("config.py", "configfile.py", "match.py", "model.py", "text.py", "yamlload.py"):
        st = (here / name).stat()
        stamp.append((name, st.st_mtime_ns, st.st_size))
    return stamp


def _cache_key(subscriptions: Path, settings: Path | None) -> tuple[Any, ...] | None:
    try:
        files = [p.read_bytes() if p is not None else None for p in (subscriptions, settings)]
        return (CACHE_FORMAT, __version__, os.getcwd(), code_stamp(), files)
    except OSError:
        return None  # a missing file: let the reader say so, with its usual message


def _cache_path(subscriptions: Path, settings: Path | None) -> Path:
    # One file per (folder, files) place, overwritten on change: the cache cannot grow.
    import zlib

    where = f"{os.getcwd()}\0{subscriptions}\0{settings}".encode()
    return cache_dir() / f"config-{zlib.crc32(where):08x}.pickle"


def cache_read(path: Path, key: object) -> object | None:
    """Return what cache_write stored at path under an equal key; None for a missing,
    damaged or foreign file, or another key (a miss is never an error)."""
    import gc

    collecting = gc.isenabled()
    gc.disable()  # unpickling makes many small objects that live on: nothing to collect
    try:
        with path.open("rb") as f:
            stored_key, value = pickle.load(f)
    except Exception:  # noqa: BLE001 -- a missing, damaged or foreign file is just a miss
        return None
    finally:
        if collecting:
            gc.enable()
    return value if stored_key == key else None


def cache_write(path: Path, key: object, value: object) -> None:
    """Store value under key at path (atomically); a cache that cannot be written is none."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, path)
    except OSError:
        pass  # no cache (a read-only home, say): every run does the work, as before
