"""Load YAML safely into nodes that remember their line numbers.

PyYAML's safe loader still turns `no`/`on`/`yes`/`off` into booleans, silently keeps the last
of two equal keys and expands aliases (a "billion laughs" bomb). We compose nodes with a
resolver that knows only `true`/`false`, refuse aliases and non-standard tags, report
duplicate keys, and bound how deeply lists and mappings nest (composing is recursive: a
value nested a thousand deep, `[[[[...]]]]`, would end in a RecursionError), so that every
value the config validator sees is what the user typed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from feeds.errors import ConfigError

_STANDARD_TAGS = {
    "tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null", "seq", "map")
}
# Lists and mappings within each other: the config files need 5 (the file, topics, a topic,
# all, a group); far below both Python's recursion limit and libyaml's own (1,000).
MAX_DEPTH = 20


class _TooDeep(ConfigError):
    """A list or mapping nested deeper than MAX_DEPTH, where it starts (raised inside the
    loader, which knows no file name; said with it by _too_deep)."""

    def __init__(self, line: int) -> None:
        super().__init__("nested too deep", line=line)


def _too_deep(where: str, line: int) -> ConfigError:
    return ConfigError(
        f"values nested more than {MAX_DEPTH} deep (lists and mappings within each other)",
        file=where,
        line=line,
    )


class _Loader(yaml.SafeLoader):
    """A safe loader whose only booleans are true and false (as in YAML 1.2), and which
    stops composing at a list or mapping nested deeper than MAX_DEPTH."""

    _depth = 0

    # `anchor: Any`: the anchor's name or None (the stubs say a dict).
    def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
        self._enter()
        try:
            return super().compose_sequence_node(anchor)
        finally:
            self._depth -= 1

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        self._enter()
        try:
            return super().compose_mapping_node(anchor)
        finally:
            self._depth -= 1

    def _enter(self) -> None:
        if self._depth == MAX_DEPTH:  # the next event starts the collection one too deep
            event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in the stubs
            raise _TooDeep(line=int(event.start_mark.line) + 1)
        self._depth += 1


# YAML 1.1 also reads 2026-01-01 as a date and `=` as a "value"; neither is a config value.
_DROPPED = {"tag:yaml.org,2002:" + t for t in ("bool", "timestamp", "value")}
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _DROPPED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

# libyaml's parser, when PyYAML has it, is much faster on a thousand topics; the resolver
# (which decides types) is the same customized one. Errors are reported by the Python
# parser, whose messages are clearer ("found character '\t' that cannot start any token").
# Its composer is C, which _Loader's depth bound cannot reach: _check bounds the nodes it
# made (libyaml refuses 1,000 levels itself, then the Python parser reports the depth).
_FastLoader: type[yaml.SafeLoader] = _Loader
if getattr(yaml, "__with_libyaml__", False):
    _FastLoader = type("_FastLoader", (yaml.CSafeLoader,), {})
    _FastLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


def line_of(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def compose(text: str, path: Path) -> yaml.Node | None:
    """Return the document's root node, or raise ConfigError with file and line."""
    where = str(path)
    try:
        return _compose(text, where, _FastLoader)
    except ConfigError:
        if _FastLoader is _Loader:
            raise
    return _compose(text, where, _Loader)  # the same error, in the Python parser's words


def _compose(text: str, where: str, loader: type[yaml.SafeLoader]) -> yaml.Node | None:
    try:
        # An alias needs an anchor (&name): without "&" in the text there is none to find,
        # and the extra pass over the events is skipped.
        events = yaml.parse(text, Loader=loader) if "&" in text else ()
        for event in events:
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                raise ConfigError(
                    "YAML aliases (*name) are not supported; write the value out",
                    file=where,
                    line=None if mark is None else int(mark.line) + 1,
                )
        root = yaml.compose(text, Loader=loader)
    except _TooDeep as e:
        raise _too_deep(where, e.line or 0) from e
    except yaml.MarkedYAMLError as e:
        problem = e.problem_mark or e.context_mark
        line = int(problem.line) + 1 if problem is not None else None
        message = f"YAML syntax: {e.problem or e}"
        start = e.context_mark
        if e.context and start is not None and int(start.line) + 1 != line:
            # PyYAML notices an unclosed [ or " only where it expected the end: say where
            # the thing that is not closed began.
            message += f" ({e.context} that starts at line {int(start.line) + 1})"
        raise ConfigError(message, file=where, line=line) from e
    except yaml.reader.ReaderError as e:  # a character YAML does not allow in a file
        line = text.count("\n", 0, e.position) + 1
        raise ConfigError(
            f"YAML: {e.reason} (character {e.character!r})", file=where, line=line
        ) from e
    except yaml.YAMLError as e:
        raise ConfigError(f"YAML: {e}", file=where) from e
    if root is not None:
        _check(root, where)
    return root


def _check(node: yaml.Node, where: str, depth: int = 0) -> None:
    if node.tag not in _STANDARD_TAGS:
        raise ConfigError(f"tag {node.tag!r} is not allowed here", file=where, line=line_of(node))
    if isinstance(node, yaml.CollectionNode):
        depth += 1
        if depth > MAX_DEPTH:
            raise _too_deep(where, line_of(node))
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, value in node.value:
            _check(key, where, depth)
            if not isinstance(key, yaml.ScalarNode):
                raise ConfigError("a key must be a plain value", file=where, line=line_of(key))
            if key.value in seen:
                raise ConfigError(
                    f"duplicate key {key.value!r} (first at line {seen[key.value]})",
                    file=where,
                    line=line_of(key),
                )
            seen[key.value] = line_of(key)
            _check(value, where, depth)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check(item, where, depth)


_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def scalar(node: yaml.ScalarNode) -> Any:
    """Return the Python value of a scalar node, typed by our resolver."""
    return _CONSTRUCTOR.construct_object(node)
