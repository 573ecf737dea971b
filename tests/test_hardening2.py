"""Hardening, second round: answers nested too deep to parse, a search index left incomplete
(a full disk), a run killed at the search step, control characters in inbox file names, and
a first publish into a folder that already holds the user's files.

Real parts: local HTTP servers on 127.0.0.1 (tests/linkserver.py), the real Pagefind, whole
`feeds run` processes (killed with SIGKILL where that is the point), /proc for processes.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feeds.pipeline import run
from feeds.publish import search
from tests.conftest import Workspace, make_workspace, pagefind_env, run_feeds, slow_feeds
from tests.linkserver import LinkServer, reply

T0 = datetime(2026, 12, 4, 7, 0, tzinfo=UTC)

# --- 4. JSON nested 300,000 deep from the GitHub and Hugging Face APIs -----------------------

DEEP = b"[" * 300_000 + b"]" * 300_000  # 600 kB: under both APIs' size limits
CODED = "Speculative Drafting With Deep Answers"
UNCODED = "Lookups That Meet Deep Answers"


def test_json_nested_too_deep_is_a_bad_answer_and_the_run_stores_link_results(
    site: LinkServer, tmp_path: Path
) -> None:
    deep = reply(200, {"Content-Type": "application/json"}, DEEP)
    site.route("/repos/deep/repo", deep)  # GitHub's API, asked about the code link
    site.route("/api/papers/search", deep)  # Hugging Face, asked about the paper without
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "d.txt").write_text(
        f"ICML\n\n{CODED}\n\n深度回答的推测草稿\n\nAnn Lee\n\nAI总结 推测解码。\n\n"
        "Comments Code: https://github.com/deep/repo\n\n"
        f"{UNCODED}\n\n遇到深度回答的查询\n\nBo Li\n\nAI总结 推测解码。\n",
        encoding="utf-8",
    )
    (tmp_path / "subs.yaml").write_text(
        "topics:\n  - id: spec\n    title: Spec\n    any: [推测解码]\n", encoding="utf-8"
    )
    (tmp_path / "settings.yaml").write_text(
        "links:\n  allow_hosts: [127.0.0.1]\n  arxiv: false\n"
        f"  huggingface_api: {site.base}/api\n  github_api: {site.base}\n  timeout: 10s\n",
        encoding="utf-8",
    )
    args = ["--subscriptions", "subs.yaml", "--settings", "settings.yaml", "--inbox", "inbox",
            "--public", "public", "--state", "state.sqlite3"]  # fmt: skip
    done = run_feeds(tmp_path, "run", *args, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RecursionError" not in done.stdout + done.stderr
    asked = [r.path for r in site.requests]
    assert "/repos/deep/repo" in asked
    assert any(p.startswith("/api/papers/search") for p in asked)

    items = json.loads((tmp_path / "public/feeds/spec.json").read_bytes())["items"]
    item = next(i for i in items if i["title"] == CODED)
    (link,) = [x for x in item["_paperfeeds"]["links"] if "github.com/deep" in x["url"]]
    assert (link["status"], link["note"]) == ("error", "GitHub API: not a JSON object")

    # The result was stored: the link is not due again at once, and nothing is asked again.
    before = len(site.requests)
    again = run_feeds(tmp_path, "run", *args, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "/repos/deep/repo" not in [r.path for r in site.requests[before:]]


def test_parsers_take_deep_json_for_a_bad_answer() -> None:
    from feeds.links.enrich import LookupFailed, parse_huggingface

    with pytest.raises(LookupFailed, match="not JSON"):
        parse_huggingface(DEEP)
    with pytest.raises(LookupFailed, match="not JSON"):
        parse_huggingface(b'{"paper": ' * 200_000 + b"1" + b"}" * 200_000)


# --- 5. a search index left incomplete is rebuilt ------------------------------------------


def _findable(public: Path) -> set[str]:
    """Return the titles of the papers a browser could find through public/search/index.json:
    every file of each folder it names must be whole (Pagefind's are gzip), and each
    shard's fragments give its papers' titles (the primary's are the topics')."""
    root = public / "search"
    manifest = json.loads((root / "index.json").read_bytes())
    titles: set[str] = set()
    for rel in [manifest["primary"], *(s["dir"] for s in manifest["shards"])]:
        folder = root / rel
        entry = json.loads((folder / "pagefind-entry.json").read_bytes())
        for language in entry["languages"].values():
            gzip.decompress((folder / f"pagefind.{language['hash']}.pf_meta").read_bytes())
        for path in folder.rglob("*"):
            if path.suffix.startswith(".pf_") or path.suffix == ".pagefind":
                data = gzip.decompress(path.read_bytes())  # raises if cut short
                if path.suffix == ".pf_fragment" and rel != manifest["primary"]:
                    fragment = json.loads(data.removeprefix(b"pagefind_dcd"))
                    titles.add(fragment["meta"]["title"])
    return titles


FIRST_TITLE = "A Hypertoroidal Covering for Perfect Color Equivariance"


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_a_truncated_index_folder_is_rebuilt_by_the_next_run(
    workspace: Workspace, with_pagefind: None
) -> None:
    config = workspace.config()
    run(config, now=lambda: T0)
    assert FIRST_TITLE in _findable(workspace.public)
    root = workspace.public / "search"
    manifest = json.loads((root / "index.json").read_bytes())
    primary, shard = root / manifest["primary"], root / manifest["shards"][0]["dir"]
    # What a full disk leaves: the primary's runtime and a shard's files cut short.
    runtime = (primary / "pagefind.js").read_bytes()
    _cut(primary / "pagefind.js")
    _cut(next(primary.glob("*.pf_meta")))
    for fragment in sorted((shard / "fragment").iterdir())[:5]:
        _cut(fragment)
    (next(shard.glob("*.pf_meta"))).unlink()

    summary = run(config, now=lambda: T0 + timedelta(hours=1), repair=True)
    assert summary.files.search == ""
    assert FIRST_TITLE in _findable(workspace.public)
    manifest = json.loads((root / "index.json").read_bytes())
    assert (root / manifest["primary"] / "pagefind.js").read_bytes() == runtime
    assert not list(root.glob(".build-*"))


def test_a_shard_cut_short_is_rebuilt_by_the_next_publish(
    workspace: Workspace, with_pagefind: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "BIG", 20)  # shards 1-20, 21-40, 41-60; a new paper: 61
    monkeypatch.setattr(search, "SMALL", 5)
    config = workspace.config()
    run(config, now=lambda: T0)
    root = workspace.public / "search"
    manifest = json.loads((root / "index.json").read_bytes())
    runtime = (root / manifest["primary"] / "pagefind.js").read_bytes()
    _cut(next((root / manifest["shards"][0]["dir"]).glob("*.pf_meta")))
    (root / manifest["shards"][1]["dir"] / "pagefind-entry.json").unlink()
    _cut(root / manifest["primary"] / "pagefind.js")
    (workspace.inbox / "zz_new.txt").write_text(
        "ICML\n\nFaster Cascades via Speculative Decoding\n\n通过推测解码实现更快的级联\n\n"
        "Ann Lee\n\nAI总结 推测解码。\n",
        "utf-8",
    )
    summary = run(config, now=lambda: T0 + timedelta(hours=1))  # an ordinary run
    assert summary.files.search == ""
    found = _findable(workspace.public)
    assert {FIRST_TITLE, "Faster Cascades via Speculative Decoding"} <= found
    assert len(found) == 61
    manifest = json.loads((root / "index.json").read_bytes())
    assert (root / manifest["primary"] / "pagefind.js").read_bytes() == runtime


def test_an_index_written_incomplete_is_never_named_and_is_built_next_time(
    workspace: Workspace, with_pagefind: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = search.pagefind_binary()
    assert real is not None
    # Pagefind on a full disk: it says all went well, but its files are cut short.
    full_disk = tmp_path / "pagefind-full-disk"
    full_disk.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, subprocess, sys\n"
        f"done = subprocess.run([{str(real)!r}, *sys.argv[1:]])\n"
        "if '--output-path' in sys.argv:\n"
        "    out = pathlib.Path(sys.argv[sys.argv.index('--output-path') + 1])\n"
        "    for p in out.rglob('*.pf_*'):\n"
        "        p.write_bytes(p.read_bytes()[: p.stat().st_size // 3])\n"
        "sys.exit(done.returncode)\n"
    )
    full_disk.chmod(0o755)
    monkeypatch.setenv("PAGEFIND_BINARY_PATH", str(full_disk))
    summary = run(workspace.config(), now=lambda: T0)
    assert summary.exit_code == 0
    assert summary.files.search.startswith("the search index was not updated")
    assert not (workspace.public / "search" / "index.json").exists()

    monkeypatch.setenv("PAGEFIND_BINARY_PATH", str(real))
    again = run(workspace.config(), now=lambda: T0 + timedelta(hours=1))
    assert again.files.search == ""
    assert FIRST_TITLE in _findable(workspace.public)


# --- 6. a run killed with SIGKILL takes its children with it --------------------------------


def _children(pid: int) -> set[int]:
    """Return the processes whose parent is pid (read from /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.add(int(entry))
    return found


def _running(pid: int) -> bool:
    """Return True while pid is a process that has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _wait_gone(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while (alive := {p for p in pids if _running(p)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def _end(pids: set[int]) -> None:
    for pid in pids:  # what a failed test left running: only processes it started
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


def test_sigkill_at_the_search_step_ends_pagefind_and_the_next_run_leaves_nothing(
    tmp_path: Path, with_pagefind: None
) -> None:
    ws = make_workspace(tmp_path / "ws")
    real = search.pagefind_binary()
    assert real is not None
    marks, temp = tmp_path / "marks", tmp_path / "tmp"
    marks.mkdir()
    temp.mkdir()
    # Pagefind on a big shard: it starts its output and takes its time.
    slow = tmp_path / "pagefind-slow"
    slow.write_text(
        f"#!{sys.executable}\n"
        "import os, pathlib, sys, time\n"
        "if '--output-path' in sys.argv:\n"
        "    out = pathlib.Path(sys.argv[sys.argv.index('--output-path') + 1])\n"
        "    out.mkdir(parents=True, exist_ok=True)\n"
        "    (out / 'pagefind-entry.json').write_text('{')\n"
        f"    (pathlib.Path({str(marks)!r}) / str(os.getpid())).touch()\n"
        "    time.sleep(60)\n"
        f"os.execv({str(real)!r}, [{str(real)!r}, *sys.argv[1:]])\n"
    )
    slow.chmod(0o755)
    env = {**pagefind_env(), "TMPDIR": str(temp), "PAGEFIND_BINARY_PATH": str(slow)}
    cmd = [sys.executable, "-m", "feeds", "run", *ws.cli_args()]
    proc = subprocess.Popen(cmd, cwd=ws.root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    started: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while not (started := {int(p.name) for p in marks.iterdir()}):
            assert proc.poll() is None, "the run ended before its search step"
            assert time.monotonic() < deadline, "the search step never began"
            time.sleep(0.02)
        assert list(temp.glob("paperfeeds-search-*")), "no staging folder"
        started |= _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert _wait_gone(started, 5) == set(), "Pagefind outlived the run"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        _end(started)
    assert list((ws.public / "search").glob(".build-*")), "the kill left no build folder"

    env["PAGEFIND_BINARY_PATH"] = str(real)
    again = subprocess.run(cmd, cwd=ws.root, env=env, capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert list(temp.glob("paperfeeds-search-*")) == []
    assert list((ws.public / "search").glob(".build-*")) == []
    assert FIRST_TITLE in _findable(ws.public)


def test_sigkill_mid_publish_ends_the_helper(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    script = slow_feeds(tmp_path, 0.5, helped=True)  # a part of 5 pages takes 2.5 s
    proc = subprocess.Popen([sys.executable, str(script), "run", *ws.cli_args()], cwd=ws.root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    helpers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while not helpers:  # a helper at work: a temp file of its own, being written
            assert proc.poll() is None, "the run ended before a helper wrote"
            assert time.monotonic() < deadline, "no helper wrote anything"
            writers = {int(p.name.split(".")[-2]) for p in ws.public.rglob(".*.tmp")}
            helpers = writers & _children(proc.pid)
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert _wait_gone(helpers, 1.5) == set(), "the helper outlived the run"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        _end(helpers)


# --- 8. control characters in inbox file names ----------------------------------------------


def test_shown_escapes_control_characters() -> None:
    from feeds.sources.inbox import shown

    assert shown("inbox/a\nrejected: evil.txt") == "inbox/a\\x0arejected: evil.txt"
    assert shown("a\rb\tc\x1b[31m\x7fd\x85e\u2028f") == "a\\x0db\\x09c\\x1b[31m\\x7fd\\x85e\\u2028f"
    assert shown("zz\udcff.txt") == "zz\\xff.txt"  # not UTF-8: as before
    assert shown("推测解码.txt") == "推测解码.txt"
    assert shown("plain/name.txt") == "plain/name.txt"


def test_a_newline_in_a_file_name_forges_no_line_of_output(workspace: Workspace) -> None:
    for path in workspace.inbox.iterdir():
        path.unlink()
    (workspace.inbox / "a\nrejected: evil.txt").write_text("no papers here\n", "utf-8")
    done = run_feeds(workspace.root, "run", *workspace.cli_args())
    status = run_feeds(workspace.root, "status", "--subscriptions", str(workspace.subscriptions),
                       "--state", str(workspace.state))  # fmt: skip
    for out in (done.stdout + done.stderr, status.stdout + status.stderr):
        assert "a\\x0arejected: evil.txt" in out, out
        assert not [line for line in out.splitlines() if line.startswith("rejected: evil")], out


# --- 9. a first publish into a folder that holds the user's files ---------------------------


def test_a_first_publish_keeps_the_files_it_did_not_write(workspace: Workspace) -> None:
    mine = {
        "papers/notes.html": b"<p>my notes</p>\n",
        "feeds/mine.xml": b"<rss/>\n",
        "feeds/other.rss.xml": b"<rss/>\n",
        "topics/reading.html": b"<p>to read</p>\n",
    }
    for rel, data in mine.items():
        (workspace.public / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace.public / rel).write_bytes(data)
    config = workspace.config()
    run(config, now=lambda: T0)
    run(config, now=lambda: T0 + timedelta(hours=1), repair=True)  # a full build again
    for rel, data in mine.items():
        assert (workspace.public / rel).read_bytes() == data, rel
    assert (workspace.public / "feeds" / "all.rss.xml").is_file()


def test_a_removed_topic_s_files_still_go_in_a_full_publish(workspace: Workspace) -> None:
    config = workspace.config()
    run(config, now=lambda: T0)
    assert (workspace.public / "feeds" / "hallucination.json").is_file()
    text = workspace.subscriptions.read_text("utf-8")
    start = text.index("  - id: hallucination")
    end = text.find("  - id:", start + 1)
    workspace.subscriptions.write_text(text[:start] + (text[end:] if end > 0 else ""), "utf-8")
    run(workspace.config(), now=lambda: T0 + timedelta(hours=1), repair=True)
    assert not list(workspace.public.glob("feeds/hallucination.*"))
    assert not (workspace.public / "topics" / "hallucination.html").exists()
    assert (workspace.public / "feeds" / "all.json").is_file()
