"""`${NAME}` in alert destinations, taken from the environment. Pure: text and environ in.

Only `${NAME}` is special (NAME: letters, digits and `_`, not starting with a digit). A `$`
not followed by `{` is an ordinary character, so a password such as `pa$word` or `pa$$word`
is kept as written: there is no `$$` escape, since it would silently change such values. A
literal `${` is written `$%7B`, the URL's own escape, which Apprise decodes like any other.
A value is inserted as it is and not expanded again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from feeds.errors import ConfigError

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
    """Return `text` with every `${NAME}` replaced by the variable's value.

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
        return environ[name]

    return _REFERENCE.sub(value, text)
