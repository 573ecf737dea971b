"""What a hostile or half-written inbox cannot do: crash a run, merge two papers silently,
leave a half-read digest half-read, or have a file that is not a digest quoted back."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from feeds.pipeline import run
from feeds.state import Store
from feeds.text import paper_id
from tests.conftest import Workspace

T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
Cli = Callable[..., CompletedProcess[str]]


def _record(title: str, authors: str, summary: str, comments: str = "") -> str:
    out = f"{title}\n\n{title}的中文标题\n\n{authors}\n\nAI总结 {summary}\n\n"
    return out + (f"Comments {comments}\n\n" if comments else "")


def _papers(state: Path) -> dict[str, dict[str, object]]:
    """The stored papers by title, as a reader of the state sees them."""
    db = sqlite3.connect(state)
    rows = db.execute("SELECT paper_id, title, authors, summary, comments FROM papers")
    out = {
        title: {"id": pid, "authors": json.loads(a), "summary": s, "comments": c}
        for pid, title, a, s, c in rows
    }
    db.close()
    return out


def _links(state: Path, pid: str) -> set[str]:
    db = sqlite3.connect(state)
    urls = {u for (u,) in db.execute("SELECT url FROM links WHERE paper_id = ?", (pid,))}
    db.close()
    return urls


# --- 4. a file name that is not UTF-8 -------------------------------------------------------


@pytest.mark.skipif(os.name != "posix", reason="POSIX file names are bytes")
def test_a_file_name_that_is_not_utf8_is_read_and_shown_escaped(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    name = os.fsdecode(b"zz\xff.txt")
    body = "ICML\n\n" + _record("A Paper Named Oddly", "Ann Bell, Bo Chen", "摘要。")
    body += "Lonely Title Only\n\n"  # a record that cannot be read: its file is named
    (workspace.inbox / name).write_text(body, encoding="utf-8")
    r = feeds_cli(workspace.root, "run", *workspace.cli_args())
    assert r.returncode == 3, r.stderr  # published, with a record problem
    assert "Traceback" not in r.stderr
    assert "zz\\xff.txt" in r.stdout + r.stderr  # shown escaped
    assert (workspace.public / "index.html").is_file()
    assert "A Paper Named Oddly" in _papers(workspace.state)
    # Read once: the next run knows the file by its exact (byte) name.
    again = feeds_cli(workspace.root, "run", *workspace.cli_args())
    assert "0 new" in again.stdout, again.stdout
    status = feeds_cli(workspace.root, "status", "--state", str(workspace.state))
    assert status.returncode == 0, status.stderr
    assert "zz\\xff.txt" in status.stdout


# --- 3. a file that is not a digest is not quoted -------------------------------------------


def test_a_link_to_a_secret_is_rejected_without_quoting_it(
    workspace: Workspace, feeds_cli: Cli, tmp_path: Path
) -> None:
    secret = tmp_path / "passwd"
    secret.write_text(
        "alice:x:0:0:alice-secret-token:/home/alice:/bin/bash\n\n"
        "daemon:x:1:1:daemon-secret-token:/usr/sbin:/usr/sbin/nologin\n"
    )
    (workspace.inbox / "evil.txt").symlink_to(secret)
    r = feeds_cli(workspace.root, "run", *workspace.cli_args())
    assert r.returncode == 3
    assert "evil.txt" in r.stdout + r.stderr
    assert "not a digest" in r.stdout + r.stderr
    status = feeds_cli(workspace.root, "status", "--state", str(workspace.state))
    for out in (r.stdout, r.stderr, status.stdout, status.stderr):
        assert "secret-token" not in out
        assert "alice" not in out
        assert "daemon" not in out


# --- 7. papers whose titles differ in a symbol are two papers -------------------------------


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Transformers ≥ RNNs on Long Sequences", "Transformers ≤ RNNs on Long Sequences"),
        ("P = NP", "P ≠ NP"),
        ("C++ Templates for Kernels", "C Templates for Kernels"),
        ("A+", "A"),
    ],
)
def test_titles_that_differ_in_a_symbol_stay_two_papers(
    workspace: Workspace, one: str, other: str
) -> None:
    (workspace.inbox / "x.txt").write_text(
        "ICML\n\n"
        + _record(one, "Ann Bell, Bo Chen", "第一篇。")
        + _record(other, "Cy Dunn, Di Eng", "第二篇。"),
        encoding="utf-8",
    )
    summary = run(workspace.config(), now=lambda: T0)
    assert not summary.problems
    papers = _papers(workspace.state)
    assert papers[one]["authors"] == ["Ann Bell", "Bo Chen"]
    assert papers[other]["authors"] == ["Cy Dunn", "Di Eng"]
    assert papers[other]["summary"] == "第二篇。"
    assert papers[one]["id"] != papers[other]["id"]
    assert (workspace.public / "papers" / f"{papers[other]['id']}.html").is_file()


def test_a_true_collision_is_reported_with_its_place(workspace: Workspace) -> None:
    # One title, no author in common: two papers that the identity cannot keep apart.
    (workspace.inbox / "x.txt").write_text(
        "ICML\n\n"
        + _record("Learning to Learn", "Ann Bell, Bo Chen", "第一篇。")
        + _record("Learning to Learn.", "Cy Dunn, Di Eng", "第二篇。"),
        encoding="utf-8",
    )
    summary = run(workspace.config(), now=lambda: T0)
    (problem,) = [p for p in summary.problems if p.file.endswith("x.txt")]
    assert problem.line == 11
    assert "other authors (Cy Dunn, Di Eng)" in problem.message
    assert summary.exit_code == 3
    store = Store(workspace.state, T0)
    assert any("Cy Dunn" in d.message for d in store.diagnostics())  # and in feeds status
    store.close()


def test_the_same_paper_with_more_authors_is_no_collision(workspace: Workspace) -> None:
    (workspace.inbox / "x.txt").write_text(
        "ICML\n\n"
        + _record("Learning to Learn", "Ann Bell", "第一篇。")
        + _record("Learning to Learn", "Ann Bell, Bo Chen", "第一篇。"),
        encoding="utf-8",
    )
    assert not run(workspace.config(), now=lambda: T0).problems


def test_a_state_from_before_gives_symbol_titles_their_own_ids(workspace: Workspace) -> None:
    title = "C++ Templates for Kernels"
    (workspace.inbox / "x.txt").write_text(
        "ICML\n\n" + _record(title, "Ann Bell", "第一篇。", "Code: https://github.com/a/b"),
        encoding="utf-8",
    )
    run(workspace.config(), now=lambda: T0)
    new_id = paper_id(title)
    old_id = paper_id("C Templates for Kernels")  # what the id was before symbols counted
    db = sqlite3.connect(workspace.state, isolation_level=None)
    for table in ("papers", "sightings", "links", "members"):
        db.execute(f"UPDATE {table} SET paper_id = ? WHERE paper_id = ?", (old_id, new_id))
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.close()
    said: list[str] = []
    run(workspace.config(), now=lambda: T0 + timedelta(hours=1), progress=said.append)
    assert any("symbols" in s for s in said)
    papers = _papers(workspace.state)
    assert papers[title]["id"] == new_id
    assert _links(workspace.state, new_id) == {"https://github.com/a/b"}
    assert (workspace.public / "papers" / f"{new_id}.html").is_file()
    feed = json.loads((workspace.public / "feeds" / "all.json").read_text())
    assert new_id in {i["_paperfeeds"]["paper_id"] for i in feed["items"]}
    # The other paper of the old key can now arrive as itself.
    (workspace.inbox / "y.txt").write_text(
        "ICML\n\n" + _record("C Templates for Kernels", "Cy Dunn", "第二篇。"), encoding="utf-8"
    )
    summary = run(workspace.config(), now=lambda: T0 + timedelta(hours=2))
    assert summary.papers_new == 1
    assert not summary.problems


# --- 8. a digest read while half-written is read again -------------------------------------


def test_a_digest_read_half_written_is_completed_by_the_next_reading(
    workspace: Workspace,
) -> None:
    full = (
        "ICML\n\n"
        + _record(
            "Half Written Paper",
            "Ann Bell, Bo Chen, Cy Dunn",
            "提出一种方法，完整的总结在这里。",
            "Code: https://github.com/lab/half-written",
        )
        + _record("Second Paper Here", "Di Eng, Ed Fox", "第二篇的总结。")
    )
    path = workspace.inbox / "latest.txt"
    cut = full.index("Cy Dunn") - 4  # a download stopped inside "Bo Chen"
    path.write_text(
        full[:cut] + "\n\nAI总结 提出一种方法\n\nComments Code: https://github.com/la\n"
    )
    run(workspace.config(), now=lambda: T0)
    first = _papers(workspace.state)["Half Written Paper"]
    assert first["authors"] == ["Ann Bell", "Bo Ch"]
    path.write_text(full)  # the download finished
    run(workspace.config(), now=lambda: T0 + timedelta(minutes=15))
    papers = _papers(workspace.state)
    now = papers["Half Written Paper"]
    assert now["authors"] == ["Ann Bell", "Bo Chen", "Cy Dunn"]
    assert now["summary"] == "提出一种方法，完整的总结在这里。"
    assert now["comments"] == "Code: https://github.com/lab/half-written"
    assert _links(workspace.state, str(now["id"])) == {"https://github.com/lab/half-written"}
    assert "Second Paper Here" in papers
    page = (workspace.public / "papers" / f"{now['id']}.html").read_text()
    assert "Cy Dunn" in page
    assert "github.com/la<" not in page
    assert '/la"' not in page


def test_a_new_reading_loses_nothing_another_digest_gave(workspace: Workspace) -> None:
    # The paper is in a second digest too: what that one said stays; only what the first
    # reading cut short is replaced.
    (workspace.inbox / "other.txt").write_text(
        "NeurIPS\n\n"
        + _record("Shared Paper", "Ann Bell", "另一个摘要。", "Project: https://x.github.io/p"),
        encoding="utf-8",
    )
    path = workspace.inbox / "latest.txt"
    path.write_text("ICML\n\n" + _record("Shared Paper", "Ann Bell", "另一个摘要。", "Code: x"))
    run(workspace.config(), now=lambda: T0)
    path.write_text("ICML\n\n" + _record("Shared Paper", "Ann Bell", "另一个摘要。", "Code: xyz"))
    run(workspace.config(), now=lambda: T0 + timedelta(minutes=15))
    paper = _papers(workspace.state)["Shared Paper"]
    assert "https://x.github.io/p" in str(paper["comments"])
    assert "Code: xyz" in str(paper["comments"])
    assert "https://x.github.io/p" in _links(workspace.state, str(paper["id"]))


def test_a_reading_with_record_problems_read_again_clean_has_none(
    workspace: Workspace,
) -> None:
    path = workspace.inbox / "latest.txt"
    good = _record("Complete Paper", "Ann Bell", "总结。")
    path.write_text("ICML\n\n" + good + "Cut Off Pap\n")
    assert run(workspace.config(), now=lambda: T0).problems
    path.write_text("ICML\n\n" + good + _record("Cut Off Paper", "Bo Chen", "总结二。"))
    assert not run(workspace.config(), now=lambda: T0 + timedelta(minutes=5)).problems
    store = Store(workspace.state, T0)
    assert not [d for d in store.diagnostics() if d.file.endswith("latest.txt")]
    store.close()
