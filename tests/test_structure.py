"""The house keeps its plan: no import cycle between modules (imports inside functions
included), HTTP only in the network package, one exception family. (Not a line count: a
module is split along a seam, never to stay under a number.)"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "feeds"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Return the modules of the package that a module imports, anywhere in it."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for wanted in targets:
            # The module itself, else the package it is in (`from feeds import x`).
            target = wanted
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """Return one import cycle of the graph (as a path), or None."""
    done: set[str] = set()
    for start, first in graph.items():
        stack = [(start, iter(sorted(first)))]
        path, on_path = [start], {start}
        while stack:
            node, rest = stack[-1]
            nxt = next(rest, None)
            if nxt is None:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
                continue
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done:
                stack.append((nxt, iter(sorted(graph[nxt]))))
                path.append(nxt)
                on_path.add(nxt)
    return None


def test_no_import_cycle() -> None:
    modules = _modules()
    known = set(modules)
    # A package imports its own modules by design (its __init__ gathers them): only the
    # edges from a module to others count, not a package to its children.
    graph = {
        name: {t for t in _imports(name, path, known) if not t.startswith(name + ".")}
        for name, path in modules.items()
    }
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def _room(name: str) -> str:
    """Return the room a module is in: its top-level folder (`feeds.match`), or the module
    itself when it stands at the top (`feeds.pipeline`)."""
    return ".".join(name.split(".")[:2])


def test_the_folders_and_top_level_modules_import_each_other_in_no_cycle() -> None:
    """The house reads top-down: cli above pipeline above the stages (sources, match,
    publish, links, alerts) above state and net. A folder that imports another one that
    imports it back (even inside a function) is no stop on one road."""
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = graph.setdefault(_room(name), set())
        edges |= {_room(t) for t in _imports(name, path, known)} - {_room(name), "feeds"}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_at_most_fifteen_top_level_modules() -> None:
    """What does not fit one of the stage folders stands at the top; a newcomer reads the
    top level as the table of contents, so it stays short."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 15, top


def test_every_exception_is_a_feeds_error() -> None:
    """One exception family: every class the package defines that is an exception derives
    from FeedsError (the CLI maps those to messages and exit statuses)."""
    import importlib
    import inspect

    from feeds.errors import FeedsError

    strays = []
    for name in _modules():
        if name == "feeds.__main__":  # importing it runs the command
            continue
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and not issubclass(value, FeedsError)
            ):
                strays.append(f"{name}.{value.__name__}")
    assert strays == []
