"""The state on PostgreSQL (SPEC.md, "Beyond one machine"), end to end: `feeds` commands
against a real PostgreSQL server on 127.0.0.1 (tests/postgres.py), publishing to a real
S3-compatible bucket (SeaweedFS, tests/test_bucket.py). The state layer's own tests run on
both engines (tests/test_store.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import feedparser
import pytest

from feeds.errors import StateError
from feeds.settings import mirror_dir
from feeds.state import Store
from feeds.state.lock import exclusive, holder
from tests.conftest import Workspace, make_workspace, run_feeds
from tests.postgres import PostgresServer
from tests.test_bucket import BUCKET, Seaweed, files_of, seaweed  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]


def _args(ws: Workspace, url: str, *more: str) -> list[str]:
    args = ws.cli_args()
    args[args.index("--state") + 1] = url
    return [*args, *more]


def _start_run(ws: Workspace, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "feeds", "run", "--json", *args],
                            cwd=ws.root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def _papers(url: str) -> int:
    store = Store.reader(url)
    try:
        return int(store.db.execute("SELECT count(*) FROM papers").fetchone()[0])
    finally:
        store.close()


def test_the_seeds_publish_the_same_site_from_either_engine(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """The same run over the seeds, with a SQLite state and with a PostgreSQL one: every
    published file is the same but for the times of the run (the output's contract does
    not depend on the engine)."""
    sqlite_ws = make_workspace(tmp_path / "sqlite")
    pg_ws = make_workspace(tmp_path / "pg")
    done = run_feeds(sqlite_ws.root, "run", *sqlite_ws.cli_args())
    assert done.returncode == 0, done.stderr
    done = run_feeds(pg_ws.root, "run", *_args(pg_ws, postgres.new_database()))
    assert done.returncode == 0, done.stderr
    a, b = files_of(sqlite_ws.public), files_of(pg_ws.public)
    assert set(a) == set(b)
    assert len(a) > 90
    # Pages and reading lists name no time of the run: byte for byte the same.
    for key in a:
        if key.endswith(".html"):
            assert a[key] == b[key], key
    for key in ("feeds/icml-2026.atom.xml", "feeds/all.rss.xml"):
        sq = feedparser.parse((sqlite_ws.public / key).read_bytes())
        pg = feedparser.parse((pg_ws.public / key).read_bytes())
        assert [e.id for e in sq.entries] == [e.id for e in pg.entries]
        assert len(pg.entries) > 0


def test_two_runs_started_at_once_publish_once_to_the_bucket(
    postgres: PostgresServer,
    seaweed: Seaweed,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    """Two watchers (two folders: two machines) on one PostgreSQL state take turns: the
    papers are ingested once, the site goes up once; the one that comes second has nothing
    new to ingest and nothing to upload."""
    url = postgres.new_database()
    one, two = make_workspace(tmp_path / "one"), make_workspace(tmp_path / "two")
    public = f"s3://{BUCKET}/twice"
    runs = [_start_run(ws, seaweed.env(), *_args(ws, url, "--public", public))
            for ws in (one, two)]  # fmt: skip
    results = [(run.wait(timeout=180), *run.communicate()) for run in runs]
    for status, _out, err in results:
        assert status == 0, err
    summaries = [json.loads(out) for _status, out, _err in results]
    first, second = sorted(summaries, key=lambda s: -s["papers_new"])
    assert first["papers_new"] == 60
    assert second["papers_new"] == 0
    assert first["bucket"]["put"] > 90
    assert second["bucket"]["put"] == 0  # the same site: nothing uploaded again
    assert _papers(url) == 60
    winner = one if first is summaries[0] else two
    # The site's local mirror is in this machine's .paperfeeds/ (the state is elsewhere).
    local = mirror_dir(public, winner.root / ".paperfeeds" / "state.sqlite3")
    assert set(seaweed.objects("twice")) == set(files_of(local))


def test_a_run_from_another_folder_sees_the_papers_of_the_first(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.new_database()
    first = make_workspace(tmp_path / "first")
    done = run_feeds(first.root, "run", *_args(first, url))
    assert done.returncode == 0, done.stderr
    other = make_workspace(tmp_path / "other")
    for f in other.inbox.iterdir():
        f.unlink()  # nothing of its own to ingest
    done = run_feeds(other.root, "run", "--json", *_args(other, url))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["papers_new"] == 0
    assert len(list((other.public / "papers").glob("*.html"))) == 60
    icml = json.loads((other.public / "feeds" / "icml-2026.json").read_text("utf-8"))
    assert len(icml["items"]) == 60  # every seed paper is an ICML 2026 one
    status = run_feeds(other.root, "status", "--json", *_status_args(other, url))
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["papers"] == 60


def _status_args(ws: Workspace, url: str) -> list[str]:
    return ["--subscriptions", str(ws.subscriptions), "--state", url]


def test_status_says_which_machine_holds_the_lock(postgres: PostgresServer, tmp_path: Path) -> None:
    url = postgres.new_database()
    ws = make_workspace(tmp_path)
    assert holder(url) is None
    with exclusive(url):
        said = holder(url)
        assert said is not None
        assert f"paperfeeds on {socket.gethostname()} (pid {os.getpid()})" in said
        assert "from 127.0.0.1" in said
        done = run_feeds(ws.root, "status", *_status_args(ws, url))
        assert done.returncode == 0, done.stderr
        assert f"lock: held by paperfeeds on {socket.gethostname()} (pid {os.getpid()})" in (
            done.stdout
        )
        # Another publisher waits, then says who holds the lock, and where.
        start = time.monotonic()
        with pytest.raises(StateError) as caught, exclusive(url, wait=0.5):
            pass
        assert time.monotonic() - start >= 0.5
        assert f"(paperfeeds on {socket.gethostname()} (pid {os.getpid()})" in str(caught.value)
    assert holder(url) is None  # released with its session
    done = run_feeds(ws.root, "status", *_status_args(ws, url))
    assert "lock: free" in done.stdout


def test_the_lock_of_a_process_that_died_is_released(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.new_database()
    code = (
        "import os, sys\nfrom feeds.state.lock import exclusive\n"
        f"with exclusive({url!r}):\n    print('locked', flush=True)\n    os._exit(9)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=False)  # fmt: skip
    assert "locked" in done.stdout, done.stderr
    deadline = time.monotonic() + 10  # the server notices the connection is gone
    while holder(url) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    with exclusive(url, wait=5):
        pass


def test_the_password_of_the_state_is_never_shown(postgres: PostgresServer, tmp_path: Path) -> None:
    url = postgres.new_database().replace("paperfeeds@", "paperfeeds:hunter2secret@")
    ws = make_workspace(tmp_path)
    done = run_feeds(ws.root, "run", *_args(ws, url))
    assert done.returncode == 0, done.stderr
    status = run_feeds(ws.root, "status", *_status_args(ws, url))
    assert status.returncode == 0, status.stderr
    assert "paperfeeds:***@127.0.0.1" in status.stdout
    for out in (done.stdout, done.stderr, status.stdout, status.stderr):
        assert "hunter2" not in out


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://paperfeeds:pw@127.0.0.1:{port}/db?connect_timeout=3"
    ws = make_workspace(tmp_path)
    done = run_feeds(ws.root, "run", *_args(ws, url))
    assert done.returncode not in (0, 3), done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot open the state database" in done.stderr
    assert f"127.0.0.1:{port}" in done.stderr
    assert ":pw@" not in done.stderr
    assert not (ws.root / "postgresql:").exists()
    assert not (ws.public / "index.html").exists()


def test_settings_take_a_postgresql_state(postgres: PostgresServer, tmp_path: Path) -> None:
    url = postgres.new_database()
    ws = make_workspace(tmp_path)
    settings = ws.root / "config" / "settings.yaml"
    settings.write_text(f"state: {url}\n", "utf-8")
    args = ws.cli_args()
    i = args.index("--state")
    del args[i : i + 2]
    done = run_feeds(ws.root, "run", *args, "--settings", str(settings))
    assert done.returncode == 0, done.stderr
    assert _papers(url) == 60
    assert not ws.state.exists()  # no SQLite file was made beside it


def test_the_lock_and_its_holder_on_either_engine(state_place: Path | str) -> None:
    Store(state_place, datetime.now(UTC)).close()
    assert holder(state_place) is None
    with exclusive(state_place):
        said = holder(state_place)
        assert said is not None
        assert f"(pid {os.getpid()})" in said
        with (
            pytest.raises(StateError, match="another paperfeeds process"),
            exclusive(state_place, wait=0.3),
        ):
            pass
    assert holder(state_place) is None


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://paperfeeds@127.0.0.1:{port}/db?password=hunter2secret",
        "postgresql://paperfeeds:hunter2secret%zz@127.0.0.1:{port}/db",
        "postgresql://paperfeeds:hunter2secret@[::1:{port}/db",
    ],
)
def test_no_password_is_shown_however_the_url_is_written(tmp_path: Path, url: str) -> None:
    """In a parameter, in a URL that libpq cannot read (its message repeats the value), in
    one that Python cannot split: the commands say what is wrong without the secret."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = url.format(port=s.getsockname()[1])
    ws = make_workspace(tmp_path)
    for command in (["run", *_args(ws, url)], ["status", *_status_args(ws, url)]):
        done = run_feeds(ws.root, *command)
        assert done.returncode != 0
        assert "Traceback" not in done.stderr
        assert "hunter2" not in done.stdout + done.stderr, done.stderr
        assert "state" in done.stderr


def test_the_holder_is_said_to_a_role_that_cannot_see_its_details(
    postgres: PostgresServer,
) -> None:
    """A role without pg_read_all_stats sees no address or start time of another role's
    session: the lock's holder is said without them."""
    import psycopg

    url = postgres.new_database()
    database = url.rpartition("/")[2]
    with psycopg.connect(url, autocommit=True) as admin:
        for role in ("alice", "bob"):
            admin.execute(f"DROP ROLE IF EXISTS {role}")
            admin.execute(f"CREATE ROLE {role} LOGIN")
            admin.execute(f"GRANT CONNECT ON DATABASE {database} TO {role}")
    as_role = {r: url.replace("paperfeeds@", f"{r}@") for r in ("alice", "bob")}
    with exclusive(as_role["bob"]):
        said = holder(as_role["alice"])
        assert said is not None
        assert "None" not in said
        waiting = exclusive(as_role["alice"], wait=0.2)
        with pytest.raises(StateError, match="another paperfeeds process"), waiting:
            pass


def test_long_reads_stream_through_server_side_cursors(postgres: PostgresServer) -> None:
    """Every paper, a whole topic: read a batch at a time, and each cursor is closed when
    its reading ends, whole or cut short."""
    from feeds.model import Hit, Paper
    from feeds.state import encode_hits
    from feeds.text import paper_id

    url = postgres.new_database()
    store = Store(url, datetime.now(UTC))
    papers = [Paper(paper_id(f"Paper {n}"), f"Paper {n}", authors=("A B",)) for n in range(3000)]
    hits = encode_hits((Hit("paper", "title"),))
    with store.transaction():
        store.put_papers([(n + 1, p) for n, p in enumerate(papers)], "d1", datetime.now(UTC))
        rows = [("t", p.paper_id, n + 1, hits) for n, p in enumerate(papers)]
        store.add_members(rows, datetime.now(UTC))

    def open_cursors() -> int:
        return int(store.db.execute("SELECT count(*) FROM pg_cursors").fetchone()[0])

    reading = store.papers()
    first = next(reading)
    assert first.title == "Paper 0"
    assert open_cursors() == 1  # a server-side cursor, read 2,000 rows at a time
    assert store.paper_count() == 3000  # other queries run meanwhile
    reading.close()  # cut short
    assert open_cursors() == 0
    assert sum(1 for _ in store.papers()) == 3000
    assert sum(len(rows) for _k, rows in store.topic_parts("t", 500, 6)) == 3000
    assert len(list(store.topic_items("t"))) == 3000
    assert len(list(store.paper_pages(seqs=(1, 3001)))) == 3000
    assert open_cursors() == 0
    store.close()


def test_a_host_that_does_not_resolve_is_said_in_words(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    url = "postgresql://paperfeeds:pw@db.example.invalid:5432/feeds"
    done = run_feeds(ws.root, "run", *_args(ws, url))
    assert done.returncode not in (0, 3), done.stderr
    assert "failed to resolve host 'db.example.invalid'" in done.stderr
    assert "Errno" not in done.stderr
    assert "Traceback" not in done.stderr
