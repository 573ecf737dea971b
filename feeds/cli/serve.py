"""`feeds serve` and `feeds init`: public/ over HTTP for a reader, and a first config."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import click

from feeds.cli.common import DEFAULT_SETTINGS, fail
from feeds.errors import EXIT_FAILURE, ConfigError, FeedsError
from feeds.urls import only_here


@click.command()
@click.option("--public", type=click.Path(path_type=Path), help="Folder to serve.")
@click.option("--settings", type=click.Path(path_type=Path), default=None, help="Settings file.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=None,
    type=click.IntRange(0, 65535),
    help="Port (0: any free one)  [default: site.base_url's if local, else 8000]",
)
@click.option("--verbose", "-v", is_flag=True, help="Log every request.")
def serve(
    public: Path | None, settings: Path | None, host: str, port: int | None, verbose: bool
) -> None:
    """Serve public/ on this machine for a feed reader (feed content types, 304s)."""
    from feeds.config import load_settings
    from feeds.serve import make_server

    try:
        if settings is None and DEFAULT_SETTINGS.exists():
            settings = DEFAULT_SETTINGS
        site = load_settings(settings)
        if public is None and site.public_url is not None:
            message = f"public_dir is {site.public_url}: the bucket serves the site"
            raise ConfigError(message + " (`feeds serve` serves a folder: --public)")
        folder = public or site.public_dir
    except FeedsError as e:
        fail(e)
        return
    base = urlsplit(site.base_url)
    local = only_here(site.base_url)
    # Where the feeds' own links point; `:0` is a port too (not "none given": not 80).
    linked = base.port if base.port is not None else (443 if base.scheme == "https" else 80)
    if port is None:  # where the feeds' own links point, when that is this machine
        port = linked if local else 8000
    if not (folder / "index.html").is_file():
        click.echo(f"error: {folder}/index.html not found: run `feeds run` first", err=True)
        sys.exit(EXIT_FAILURE)
    address = f"[{host}]" if ":" in host else host  # an IPv6 address as a URL writes it
    try:
        server = make_server(folder, host, port)
    except OSError as e:
        click.echo(f"error: cannot listen on {address}:{port}: {e.strerror}", err=True)
        sys.exit(EXIT_FAILURE)
    server.verbose = verbose  # type: ignore[attr-defined]
    # Not "localhost" for ::1: some readers resolve that name to 127.0.0.1 only.
    shown = "localhost" if host == "127.0.0.1" else address
    if local and linked != server.server_address[1]:
        click.echo(
            f"note: the feeds' links point to {site.base_url} (site.base_url), not to this"
            f" server: a reader would follow them there. Set site.base_url to"
            f" http://{shown}:{server.server_address[1]}/ in the settings and `feeds run`.",
            err=True,
        )
    click.echo(f"serving {folder}/ at http://{shown}:{server.server_address[1]}/ (Ctrl-C stops)")
    click.echo(f"subscribe: http://{shown}:{server.server_address[1]}/feeds.opml")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@click.command()
@click.option(
    "--dir", "folder", default=".", show_default=True,
    type=click.Path(file_okay=False, path_type=Path), help="The project folder.",
)  # fmt: skip
def init(folder: Path) -> None:
    """Write an example config (topics and settings, commented) and an inbox folder.

    Files that exist are left as they are: init never overwrites."""
    from importlib.resources import files

    examples = files("feeds") / "examples"
    for name in ("subscriptions.yaml", "settings.yaml"):
        target = folder / "config" / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("x", encoding="utf-8") as f:  # "x": never over a file
                f.write((examples / name).read_text(encoding="utf-8"))
        except FileExistsError:
            click.echo(f"{target}: exists, left as it is")
            continue
        except OSError as e:
            click.echo(f"error: cannot write {target}: {e.strerror}", err=True)
            sys.exit(EXIT_FAILURE)
        click.echo(f"wrote {target}")
    inbox = folder / "seeds"
    if not inbox.exists():
        inbox.mkdir(parents=True)
        click.echo(f"made {inbox}/: the inbox, where digest files go")
        # One digest to start from: a first `feeds run` publishes feeds to look at.
        example = inbox / "example-digest.txt"
        example.write_text((examples / example.name).read_text(encoding="utf-8"), encoding="utf-8")
        click.echo(f"wrote {example}: five ICML 2026 papers, an example of the digest format")
    click.echo("next: edit the topics, put digests in the inbox (or name `sources:` in the"
               " settings), then `feeds run`")  # fmt: skip
