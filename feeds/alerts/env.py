"""`${NAME}` in alert destinations, taken from the environment. Pure: text and environ in.

Only `${NAME}` is special (NAME: letters, digits and `_`, not starting with a digit). A `$`
not followed by `{` is an ordinary character, so a password such as `pa$word` or `pa$$word`
is kept as written: there is no `$$` escape, since it would silently change such values. A
literal `${` is written `$%7B`, the URL's own escape, which Apprise decodes like any other.
A value is not expanded again.

A value is percent-encoded where it lands (Apprise decodes user, password, path and query
values), so no value can change the URL's structure: a password `hunter2@evil.example`
stays a password instead of making `evil.example` the host that receives the alert (and
its tail the host that output shows). Only a `${NAME}` that is the whole URL is taken as
written, since then the variable is meant to hold the structure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from feeds.errors import ConfigError

if TYPE_CHECKING:
    from feeds.settings import AlertDestination

# A `${` and, when it forms a reference, the name: `${` alone is an error.
_REFERENCE = re.compile(r"\$\{(?:([A-Za-z_][A-Za-z0-9_]*)\})?")


class AlertsConfigError(ConfigError):
    """An alert destination cannot be used. The message never holds the destination's URL:
    it may hold secrets."""


class MissingVariable(AlertsConfigError):
    """A `${NAME}` whose variable is not set in the environment."""

    def __init__(self, name: str, *, file: str | None = None, line: int | None = None) -> None:
        super().__init__(
            f"alerts: environment variable {name} is not set (used as ${{{name}}})",
            file=file,
            line=line,
        )
        self.name = name


def expand(
    text: str, environ: Mapping[str, str], *, file: str | None = None, line: int | None = None
) -> str:
    """Return `text` with every `${NAME}` replaced by the variable's value, percent-encoded
    (unless the reference is the whole text: see the module's docstring).

    Raises MissingVariable for a variable that is not set (set and empty counts as set,
    as in a shell), AlertsConfigError for a `${` that does not form `${NAME}`.
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            # Say where, not what follows: the rest of the text may be a secret.
            raise AlertsConfigError(
                f"alerts: '${{' at character {match.start() + 1} does not start ${{NAME}} "
                "(letters, digits and _, then '}'); write $%7B for a literal '${'",
                file=file,
                line=line,
            )
        if name not in environ:
            raise MissingVariable(name, file=file, line=line)
        if match.end() - match.start() == len(text):  # the whole URL
            return environ[name]
        return quote(environ[name], safe="")

    return _REFERENCE.sub(value, text)


def check_syntax(text: str, *, file: str | None = None, line: int | None = None) -> None:
    """Raise AlertsConfigError for a `${` that does not form `${NAME}`; whether the
    variables are set is not asked (see unset_variables)."""
    expand(text, _Anything(), file=file, line=line)


class _Anything(Mapping[str, str]):
    """An environment where every variable is set (to nothing)."""

    def __getitem__(self, name: str) -> str:
        return ""

    def __contains__(self, name: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def unset_names(text: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    """Return the names of the `${NAME}`s in text whose variables are not set, each once."""
    names = (m.group(1) for m in _REFERENCE.finditer(text) if m.group(1))
    return tuple(dict.fromkeys(n for n in names if n not in environ))


def unset_variables(
    alerts: Iterable[AlertDestination], environ: Mapping[str, str]
) -> tuple[MissingVariable, ...]:
    """Return a MissingVariable (with its file:line) for each variable an alert destination
    uses that is not set: `feeds check` warns of them, and a run skips their destinations
    (a variable may be set where the run happens, under cron or systemd, and not here)."""
    return tuple(
        MissingVariable(name, file=dest.file, line=dest.line)
        for dest in alerts
        for name in unset_names(dest.to, environ)
    )
