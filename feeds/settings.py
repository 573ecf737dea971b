"""The settings (config/settings.yaml), with their defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


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
