"""What the commands share: their options, reading the config with the command line's
overrides, and turning a FeedsError into a message and an exit status."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from feeds.config import load
from feeds.errors import ConfigError, ConfigErrors, FeedsError, LockHeld, exit_status
from feeds.settings import Config, check_places, public_place, state_place

DEFAULT_SUBSCRIPTIONS = Path("config/subscriptions.yaml")

DEFAULT_SETTINGS = Path("config/settings.yaml")

# The options the commands share, declared once. Each command lists those it uses; those it
# would ignore are still taken (scripts pass the same options to every command), unlisted.
_OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "subscriptions": (("--subscriptions",), {
        "type": click.Path(path_type=Path), "default": DEFAULT_SUBSCRIPTIONS,
        "show_default": True, "help": "Topics file."}),
    "settings": (("--settings",), {
        "type": click.Path(path_type=Path), "default": None,
        "help": f"Settings file [default: {DEFAULT_SETTINGS} if it exists]."}),
    "inbox": (("--inbox",), {
        "type": click.Path(path_type=Path), "multiple": True,
        "help": "Folder of digests (repeatable); replaces the settings' inbox."}),
    # Text, not a click.Path: that would make `s3://bucket/site` the folder `s3:/bucket/site`.
    "public": (("--public",), {"type": str, "metavar": "PATH|s3://BUCKET/PREFIX",
                               "help": "Output folder, or an S3-compatible bucket."}),
    "state": (("--state",), {"type": str, "metavar": "FILE", "help": "State database file."}),
    "offline": (("--offline",), {"is_flag": True, "help": "No network: links are not checked."}),
    "quiet": (("--quiet", "-q"), {"is_flag": True, "help": "Print only problems."}),
    "json": (("--json", "as_json"), {"is_flag": True,
                                     "help": "Print a machine-readable summary."}),
}  # fmt: skip

ALL = tuple(_OPTIONS)

UNUSED = ("inbox", "public", "offline")  # by check and status


def options(
    *names: str, unlisted: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Return a decorator adding the shared options `names` (in this order), and `unlisted`
    ones, accepted and ignored (the command's function takes them as **_ignored)."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed((*names, *unlisted)):
            decls, attrs = _OPTIONS[name]
            f = click.option(*decls, **attrs, hidden=name in unlisted)(f)
        return f

    return decorate


def load_config(
    subscriptions: Path,
    settings: Path | None,
    inbox: tuple[Path, ...] = (),
    public: Path | str | None = None,
    state: Path | str | None = None,
) -> Config:
    if settings is None and DEFAULT_SETTINGS.exists():
        settings = DEFAULT_SETTINGS
    if subscriptions == DEFAULT_SUBSCRIPTIONS and not subscriptions.exists():
        # A folder without a config: most likely a first try. Say how to get one.
        message = "file not found: `feeds init` writes an example config (and an inbox)"
        raise ConfigError(message, file=str(subscriptions))
    config = load(subscriptions, settings)
    values: dict[str, Any] = {}
    if inbox:
        values["inbox"] = tuple(inbox)
    if public:  # a folder replaces a bucket of the settings, and the other way round
        folder, url = public_place(str(public))
        values["public_url"] = url
        if folder is not None:
            values["public_dir"] = folder
    if state:  # a file replaces a PostgreSQL state of the settings, and the other way round
        file, url = state_place(str(state))
        values["state_url"] = url
        if file is not None:
            values["state"] = file
    s = replace(config.settings, **values)
    check_places(s, (subscriptions, settings))
    # Alerts' `${NAME}`s are not read here: an unset one stops only its destination, when
    # a run sends (feeds.alerts.send), and `feeds check` warns of it.
    return replace(config, settings=s)


def inbox_exists(config: Config, options: tuple[Path, ...]) -> None:
    """Raise a usage error (exit 2) naming the first inbox folder that does not exist."""
    from feeds.sources.inbox import shown

    for folder in config.settings.inbox:
        if not folder.is_dir():
            where = "given with --inbox" if options else "the settings' inbox"
            raise ConfigError(f"inbox folder {shown(str(folder))} does not exist ({where})")


def fail(e: FeedsError) -> None:
    # A command run once is not run again by anyone: the user is (`feeds watch` says its own).
    advice = ". Try again when it has finished" if isinstance(e, LockHeld) else ""
    # Each error of a config file on a line of its own, as `error: file:line: ...`: the
    # form editors and grep read, for the second error as for the first.
    for each in e.errors if isinstance(e, ConfigErrors) else (e,):
        click.echo(f"error: {each}{advice}", err=True)
    sys.exit(exit_status(e))


def progress_line(message: str) -> None:
    click.echo(f"\r\033[K{message[:100]}", nl=False, err=True)


class _Unread(io.RawIOBase):
    """A standard stream's file that a reader who went away cannot fail: once its pipe is
    closed (`feeds run | head -1`), what is written is dropped."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.gone = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data: Any) -> int:
        size = len(memoryview(data))
        if not self.gone:
            try:
                return os.write(self.fd, data)
            except BrokenPipeError:
                self.gone = True
        return size


def unread_output_is_no_failure() -> None:
    """Make writing to a closed standard output or error a no-op, not an error.

    A run that did its work must not fail because nobody reads what it says: click exits
    1, without a word, on the first write to a closed pipe, and the run's own status (and
    the rest of what it had to say to the other stream) is lost.
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, io.TextIOWrapper):  # already replaced (a test's capture)
            continue
        stream.flush()
        buffered = io.BufferedWriter(_Unread(stream.fileno()))
        setattr(sys, name, io.TextIOWrapper(
            buffered, encoding=stream.encoding, errors=stream.errors,
            line_buffering=stream.line_buffering, write_through=stream.write_through,
        ))  # fmt: skip
