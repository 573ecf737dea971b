"""Hostile and changing library files: each gives a clear error at `file:line` or a skipped
item with its reason, never a traceback, a hang, or hours; a library replaced while it is
read is read again by the next run."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from feeds.config import library, load
from tests.conftest import Workspace
from tests.test_library import LIBRARY_TOPIC, LK, LK_BIB, MINEDRAFT_BIB, _project

Cli = Callable[..., CompletedProcess[str]]


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config cache of this test's own (the commands it starts inherit it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _ws(tmp_path: Path, name: str, content: str | None = None) -> Workspace:
    files = {} if content is None else {name: content}
    return _project(tmp_path / "p", LIBRARY_TOPIC.format(library=name), files)


def _check(cli: Cli, ws: Workspace) -> CompletedProcess[str]:
    return cli(ws.root, "check", "--subscriptions", str(ws.subscriptions),
               "--state", str(ws.state), timeout=60)  # fmt: skip


def test_latex_nested_300_deep_skips_its_entry_with_the_reason(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    deep = "\\textbf{" * 300 + "x" + "}" * 300
    bib = f"@article{{deep,\n  title = {{Deep}},\n  abstract = {{{deep}}}\n}}\n\n{LK_BIB}"
    ws = _ws(tmp_path, "refs.bib", bib)
    r = _check(feeds_cli, ws)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "refs.bib:1: could not be read: its LaTeX is nested too deep to decode" in r.stdout
    ran = feeds_cli(ws.root, "run", *ws.cli_args())
    assert ran.returncode == 0, ran.stderr


def test_csl_json_nested_1000_deep_is_a_skipped_item_with_the_reason(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    good = '{"title": "LK Losses: Direct Acceptance Rate Optimization for Speculative Decoding"}'
    text = f"[\n{good},\n" + "[" * 1000 + "]" * 1000 + "\n]\n"
    ws = _ws(tmp_path, "refs.json", text)
    r = _check(feeds_cli, ws)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "refs.json:3: could not be read: nested too deep" in r.stdout


@pytest.mark.parametrize("command", ["check", "run"])
def test_a_fifo_as_the_library_is_a_config_error_not_a_hang(
    tmp_path: Path, feeds_cli: Cli, command: str
) -> None:
    ws = _ws(tmp_path, "lib.bib")
    os.mkfifo(ws.subscriptions.parent / "lib.bib")
    args = ws.cli_args() if command == "run" else ["--subscriptions", str(ws.subscriptions)]
    try:
        r = feeds_cli(ws.root, command, *args, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"feeds {command} waited for a writer to the FIFO")
    assert r.returncode == 2, r.stderr
    assert (
        "subscriptions.yaml:4: library 'lib.bib' cannot be read: it is not a regular file"
    ) in r.stderr


def test_a_folder_as_the_library_is_a_config_error(tmp_path: Path, feeds_cli: Cli) -> None:
    ws = _ws(tmp_path, "lib.bib")
    (ws.subscriptions.parent / "lib.bib").mkdir()
    r = _check(feeds_cli, ws)
    assert r.returncode == 2
    assert "library 'lib.bib' cannot be read: it is a folder" in r.stderr


def test_a_library_replaced_while_it_is_read_is_read_again_next_time(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _ws(tmp_path, "refs.bib", MINEDRAFT_BIB)
    path = ws.subscriptions.parent / "refs.bib"
    parse = library.parse
    replaced: list[bool] = []

    def replace_while_reading(*args: Any, **kwargs: Any) -> Any:
        # Better BibTeX writes a new export beside the old and renames it into place, at
        # any moment: here, while the old one is being parsed.
        if not replaced:
            new = path.with_name("refs.bib.new")
            new.write_text(MINEDRAFT_BIB + "\n" + LK_BIB, encoding="utf-8")
            new.replace(path)
            replaced.append(True)
        return parse(*args, **kwargs)

    monkeypatch.setattr(library, "parse", replace_while_reading)
    first = load(ws.subscriptions, None)
    assert replaced
    assert LK not in [i.title for i in first.topics[0].criteria.library[0].items]  # read before
    second = load(ws.subscriptions, None)  # the file is not what the first load read
    titles = [i.title for i in second.topics[0].criteria.library[0].items]
    assert LK in titles


def test_a_huge_abstract_with_latex_is_bounded_and_kept(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    abstract = "Some $x^2$ text \\emph{with} LaTeX. " * 540_000  # 19 MB
    big = f"@article{{big,\n  title = {{Big: {{A}} Paper}},\n  abstract = {{{abstract}}}\n}}\n"
    many = "".join(
        f"@article{{e{i},\n  title = {{Entry {i}}},\n  abstract = {{{abstract[:15_000]}}}\n}}\n"
        for i in range(200)
    )  # 3 MB of LaTeX more than a file's decoding budget
    ws = _ws(tmp_path, "refs.bib", big + many)
    decoded: list[int] = []
    decoder = library._decoder()
    real = decoder.latex_to_text

    def counting(text: str) -> str:
        decoded.append(len(text))
        return str(real(text))

    monkeypatch.setattr(decoder, "latex_to_text", counting)
    config = load(ws.subscriptions, None)
    [lib] = config.topics[0].criteria.library
    assert len(lib.items) == 201
    assert lib.items[0].title == "Big: A Paper"
    assert lib.items[0].abstract is not None
    assert len(lib.items[0].abstract) <= library.MAX_FIELD
    assert max(decoded) <= library.MAX_FIELD
    assert sum(decoded) <= library.MAX_DECODED
    assert "\\emph" not in lib.items[0].abstract  # decoded
    assert "{" not in (lib.items[-1].abstract or "")  # past the budget: braces dropped
    decoded.clear()
    again = load(ws.subscriptions, None)  # what was decoded is kept
    assert decoded == []
    assert again.topics[0].criteria.library[0].items == lib.items
