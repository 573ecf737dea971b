"""The one exception family of paperfeeds.

Library code raises these; the CLI maps them to messages and exit statuses.
Third-party errors are wrapped once, at the boundary, with the cause chained.
"""

from __future__ import annotations

# Exit statuses of the commands (README "Commands").
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2  # a usage or config error: nothing was done
EXIT_REJECTED = 3  # published, but some inputs were rejected
EXIT_UNDELIVERED = 4  # published, but some alert destinations failed (their papers wait)
EXIT_INTERRUPTED = 130  # stopped by Ctrl-C (128 + SIGINT), as shells report it


class FeedsError(Exception):
    """Base of every error paperfeeds raises on purpose."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line

    def __str__(self) -> str:
        where = self.file or ""
        if where and self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}" if where else self.message


class ConfigError(FeedsError):
    """The subscriptions or settings cannot be used; nothing was written."""


class ConfigErrors(ConfigError):
    """Every error of one config file, in the file's order: fixing them takes one run, not
    one run each. `message`, `file` and `line` are the first's, with the others' lines
    after its message, so that str() says each at its own place, one a line."""

    def __init__(self, errors: tuple[ConfigError, ...]) -> None:
        first = errors[0]
        rest = "".join(f"\n{e}" for e in errors[1:])
        super().__init__(first.message + rest, file=first.file, line=first.line)
        self.errors = errors

    # Exceptions unpickle by calling the class with `args` (here the joined message).
    def __reduce__(self) -> tuple[type[ConfigErrors], tuple[tuple[ConfigError, ...]]]:
        return type(self), (self.errors,)


class DigestRejected(FeedsError):
    """A whole digest file is unusable (not text, an HTML page, no records)."""


class StateError(FeedsError):
    """The state database cannot be opened, is locked, or is from a newer version."""


class LockHeld(StateError):
    """Another process holds the state's lock: it is publishing. What to do about it is the
    caller's to say (`feeds run`: try again when it has finished; `feeds watch`: nothing,
    its next cycle tries again)."""


class PublishError(FeedsError):
    """public/ cannot be written (permissions, a full disk, a file where a folder should be).

    The files published before stay whole, and the state still marks what was not
    published: the next run writes it.
    """


def exit_status(error: BaseException) -> int:
    """Return the exit status of a command that ends with this error: 2 for a config or
    usage error (nothing was done), 130 for an interrupt (as a shell reports Ctrl-C), else 1."""
    if isinstance(error, ConfigError):
        return EXIT_USAGE
    return EXIT_INTERRUPTED if isinstance(error, KeyboardInterrupt) else EXIT_FAILURE
