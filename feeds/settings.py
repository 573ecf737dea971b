"""The settings (config/settings.yaml), with their defaults."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from feeds.errors import ConfigError
from feeds.topics import Topic
from feeds.urls import ENCODE_USERINFO, shown_url, userinfo_unclear


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
class AlertDestination:
    """Where a topic alert goes (see feeds.alerts)."""

    # The Apprise URL as written: `${NAME}`s are read from the environment when it is used,
    # so that no secret is kept anywhere (the validated config is cached on disk).
    to: str
    topics: tuple[str, ...] | None = None  # None: every topic
    every: float | None = None  # seconds: at most one message per period (a digest)
    max_papers: int | None = None  # per message; the rest as "and N more"
    file: str = ""  # where it is configured, for messages
    line: int = 0

    @property
    def key(self) -> str:
        """Return what the state knows the destination by: a hash of it as written, so that
        neither the URL nor a rotated secret is kept, or resets it."""
        import hashlib

        return hashlib.sha256(self.to.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Settings:
    site_title: str = "paperfeeds"
    base_url: str = "http://localhost:8000/"
    page_size: int = 500  # papers per page of a topic's reading list
    inbox: tuple[Path, ...] = (Path("seeds"),)
    sources: tuple[str, ...] = ()
    public_dir: Path = Path("public")  # with public_url: the local mirror (see __post_init__)
    state: Path = Path(".paperfeeds/state.sqlite3")
    schedule_every: float | None = 900.0
    schedule_cron: str | None = None
    settle: float = 5.0
    stale_after: float = 3 * 86400.0  # a source unchanged this long is reported as stale
    max_items: int = 100
    links: LinkSettings = field(default_factory=LinkSettings)
    arxiv: tuple[str, ...] = ()  # arXiv categories followed (sources: [{arxiv: [cs.CL]}])
    arxiv_backfill: float = 7 * 86400.0  # a category's first harvest reads this far back
    alerts: tuple[AlertDestination, ...] = ()
    alerts_timeout: float = 30.0  # total time for one destination's message
    # `public_dir: s3://bucket/prefix`: the site is published into a local mirror, then
    # uploaded there (feeds.publish.bucket). None: public_dir is the site itself.
    public_url: str | None = None
    # `state: postgresql://user@host:port/db`: the state in PostgreSQL. `state` is then
    # only where this machine's own files go (its folder: the bucket's mirror, caches).
    state_url: str | None = None

    @property
    def database(self) -> Path | str:
        """Where the state is: the SQLite file, or the PostgreSQL URL."""
        return self.state_url or self.state

    def __post_init__(self) -> None:
        # The mirror is derived, never set: beside the state (so a --state given on the
        # command line moves it too), named for the URL (two buckets, two mirrors).
        if self.public_url is not None:
            object.__setattr__(self, "public_dir", mirror_dir(self.public_url, self.state))


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+)://")  # two letters at least: not `C://`
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")  # S3's rule for a bucket's name


def state_place(text: str) -> tuple[Path | None, str | None]:
    """Return where the state as written is: (a SQLite file, None), or (None, a
    `postgresql://` URL). Raise ConfigError for a URL of any other scheme: never a local
    folder named `mysql:`."""
    m = _SCHEME.match(text)
    if m is None:
        return Path(text), None
    if m.group(1).lower() not in ("postgresql", "postgres"):
        raise ConfigError(
            f"state {text[: m.end()]}…: a state on {m.group(1)}:// is not supported; give a"
            " SQLite file (default .paperfeeds/state.sqlite3) or a PostgreSQL URL,"
            " postgresql://user@host:port/database"
        )
    if userinfo_unclear(text):
        # Shown as its scheme alone: any part of it may be the password.
        raise ConfigError(
            f"state {text[: m.end()]}…: where the URL's user name and password end cannot be"
            f" told (an @, /, ? or # in them?); {ENCODE_USERINFO} in them, or leave the"
            " password out of the URL and set PGPASSWORD or put it in ~/.pgpass"
        )
    return None, text


def public_place(text: str) -> tuple[Path | None, str | None]:
    """Return where public_dir as written puts the site: (a folder, None), or (None, an
    `s3://bucket/prefix` URL, trailing slashes dropped).

    Raise ConfigError for a URL of any other scheme (`gs://`, `http://`): never a local
    folder of that name.
    """
    m = _SCHEME.match(text)
    if m is None:
        return Path(text), None
    shown = repr(shown_url(text))  # never a key written into the URL
    if m.group(1).lower() != "s3":
        raise ConfigError(
            f"public_dir {shown}: {m.group(1)}:// is not supported; give a folder or an"
            " S3-compatible bucket, s3://bucket/prefix"
        )
    bucket, _, prefix = text[m.end() :].partition("/")
    if "@" in bucket or userinfo_unclear(text):
        raise ConfigError(
            "public_dir s3://…: keys do not go in the URL; set AWS_ACCESS_KEY_ID and"
            " AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) in the environment"
        )
    if not _BUCKET.fullmatch(bucket):
        raise ConfigError(
            f"public_dir {shown}: {bucket!r} is not a bucket name (s3://bucket/prefix)"
        )
    prefix = prefix.strip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise ConfigError(f"public_dir {shown}: the prefix has an empty, `.` or `..` part")
    return None, f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"


def mirror_dir(url: str, state: Path) -> Path:
    """Return the local mirror of the site published to `url`: beside the state file."""
    import hashlib

    return Path(state).parent / f"public-{hashlib.sha256(url.encode()).hexdigest()[:12]}"


_APART = (
    "the site is written into public/ and a full build removes files there; "
    "give it a folder of its own"
)


def check_places(settings: Settings, config_files: Iterable[Path | None]) -> None:
    """Raise ConfigError when public/ holds the state, or is, contains or is inside an inbox
    folder, or is or contains the folder of a config file (the subscriptions, the settings).

    For the paths in effect: call it once the command line's --public, --inbox and --state
    replaced what the settings say. Paths compare resolved (symlinks, `..`).
    """
    problem = places_problem(settings, [p for p in config_files if p is not None])
    if problem is not None:
        raise ConfigError(problem[1])


def places_problem(s: Settings, config_files: Iterable[Path]) -> tuple[tuple[str, ...], str] | None:
    """Return the settings at fault (first the one to point at) and what is wrong with where
    public/ is, or None when it is apart from the state, the inputs and the config."""
    public = s.public_dir.resolve()
    if s.state_url is None and s.state.resolve().is_relative_to(public):
        return ("state", "public_dir"), (
            f"the state ({s.state}) must not be inside public/ ({s.public_dir})"
        )
    for inbox in s.inbox:
        how = _overlap(public, inbox.resolve(), inside=True)
        if how:
            message = f"public/ ({s.public_dir}) {how} the inbox folder {inbox}: {_APART}"
            return ("public_dir", "inbox"), message
    # Inside the folder of a config file is fine: with the config files at the top of a
    # project, that folder is the project's, and public/ is in it beside them.
    for file in config_files:
        how = _overlap(public, file.parent.resolve(), inside=False)
        if how:
            return ("public_dir",), f"public/ ({s.public_dir}) {how} the folder of {file}: {_APART}"
    return None


def _overlap(public: Path, folder: Path, *, inside: bool) -> str | None:
    """Return how public/ overlaps a folder, both resolved ("is", "contains", and if
    `inside`, "is inside"), or None when they are apart."""
    if public == folder:
        return "is"
    if folder.is_relative_to(public):
        return "contains"
    if inside and public.is_relative_to(folder):
        return "is inside"
    return None


@dataclass(frozen=True)
class Config:
    """The whole configuration: the settings and the topics, as read and validated by
    feeds.config."""

    settings: Settings
    topics: tuple[Topic, ...]
    subscriptions_path: Path
