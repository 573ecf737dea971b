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
from collections.abc import Iterator
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


def text_lists(node: yaml.Node) -> Iterator[tuple[yaml.ScalarNode, tuple[str, ...], int]]:
    """Yield each scalar of a value, lists within lists flattened, with the texts of the
    list it is an item of and its place there (a lone value: a list of one)."""
    if isinstance(node, yaml.ScalarNode):
        yield node, (str(node.value),), 0
    elif isinstance(node, yaml.SequenceNode):
        texts = tuple(_flow(n) for n in node.value)
        for index, item in enumerate(node.value):
            if isinstance(item, yaml.ScalarNode):
                yield item, texts, index
            else:
                yield from text_lists(item)


def _flow(node: yaml.Node) -> str:
    """Return a value as one line (`[a, b]`), for a suggestion."""
    if isinstance(node, yaml.SequenceNode):
        return "[" + ", ".join(_flow(n) for n in node.value) + "]"
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "{…}"


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
        line, message = in_words(e, text)
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


def in_words(e: yaml.MarkedYAMLError, text: str) -> tuple[int | None, str]:
    """Return the line of a YAML syntax error and what is wrong in plain words, from
    PyYAML's own problem, context and marks; the parser's words follow as detail.

    The line is where the mistake is: for a quote or bracket never closed, where it was
    opened (PyYAML notices only where it expected the end, often the next topic)."""
    problem, context = e.problem or "", e.context or ""
    at, start = e.problem_mark or e.context_mark, e.context_mark
    line = int(at.line) + 1 if at is not None else None
    began = int(start.line) + 1 if start is not None else None
    words = _words(problem, context, at, began, text)
    if words is None:
        detail = f" ({context} that starts at line {began})" if context and began else ""
        return line, f"YAML syntax: {problem or e}{detail}"
    if words[0]:  # said at the line where the unclosed thing began
        noticed = f"; noticed at line {line}" if line is not None and line != began else ""
        return began, f"YAML syntax: {words[1]} (PyYAML: {problem}{noticed})"
    return line, f"YAML syntax: {words[1]} (PyYAML: {problem})"


_BLOCK = "the block that starts at line"


def _words(
    problem: str, context: str, at: yaml.Mark | None, began: int | None, text: str
) -> tuple[bool, str] | None:
    """Return (whether said at the start line, the words) for the problems people make
    most, or None for the others (said in the parser's words alone)."""
    if problem.startswith("found character") and "cannot start any token" in problem:
        char = _char_at(text, at)
        if char == "\t":
            return False, "a tab; YAML indents with spaces only (replace the tab with spaces)"
        return False, f"a value cannot start with {char!r}; put the value in quotes"
    if problem.startswith("found undefined alias"):
        return False, "a value cannot start with '*' (an alias in YAML); put it in quotes"
    if problem == "found unexpected end of stream" and "quoted scalar" in context:
        return True, "a quote opened here is never closed"
    if problem.startswith("found unknown escape character"):
        return False, (
            "an unknown backslash escape in double quotes; use single quotes for text with"
            " backslashes ('/\\d+-bit/')"
        )
    if problem.startswith("expected ',' or ']'") and began is not None:
        return True, "a list opened with '[' here is not closed with ']' (or lacks a ',')"
    if problem.startswith("expected ',' or '}'") and began is not None:
        return True, "a mapping opened with '{' here is not closed with '}' (or lacks a ',')"
    if problem == "mapping values are not allowed here" and at is not None:
        lines = text.splitlines()
        before = lines[at.line][: at.column] if at.line < len(lines) else ""
        if ": " in before or before.rstrip().endswith(":"):
            return False, (
                "a colon inside a value that is not quoted; put the value in quotes"
                f" ({_quoted(lines[at.line])})"
            )
        return False, "this line is indented more than the keys it belongs with"
    if problem.startswith("expected <block end>, but found"):
        found = problem.rsplit("but found ", 1)[1]
        block = f" ({_BLOCK} {began})" if began else ""
        if found in ("'-'", "'<block sequence start>'"):
            return False, (
                "a list item ('- ') at the wrong indentation: it lines up with no list"
                f" above it{block}"
            )
        if found in ("'<block mapping start>'", "'?'"):
            return False, f"a key at the wrong indentation: it lines up with no key above it{block}"
        if found == "'<scalar>'":
            return False, "text after a quoted value; quote the whole value"
        if found in ("']'", "'}'"):
            return False, f"a {found} that closes nothing"
    if problem == "but found another document":
        return False, "a second document ('---'); the file holds one"
    return None


def _char_at(text: str, at: yaml.Mark | None) -> str:
    """Return the character at a mark (libyaml's messages do not name it)."""
    lines = text.splitlines()
    if at is None or at.line >= len(lines) or at.column >= len(lines[at.line]):
        return ""
    return lines[at.line][at.column]


def _quoted(line: str) -> str:
    """Return a `key: value` line with its value in quotes, as a suggestion."""
    key, _colon, value = line.strip().removeprefix("- ").partition(": ")
    value = value.strip().replace('"', '\\"')
    return f'{key}: "{value}"'


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
