"""Hardening, third round: a slow alert receiver, passwords in malformed state URLs, a first
publish among the user's files, how a failed run ended, S3 errors in words, the whole
settings menu, the systemd and cron examples, links nobody can open, weak ETags, config
mistakes said at their line, and smaller things a user trips over.

Real parts: HTTP servers on 127.0.0.1 (tests/linkserver.py), whole `feeds` processes, real
files and SQLite states, a real SeaweedFS (tests/test_bucket.py), systemd-analyze.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import yaml

from feeds.alerts.deliver import deliver
from feeds.alerts.send import DEFAULT_MAX_PAPERS, send_pending
from feeds.config import Config, load
from feeds.errors import ConfigError
from feeds.pipeline import run
from feeds.settings import LinkSettings, Settings
from feeds.state import place_shown
from tests.conftest import ROOT, Workspace, serve
from tests.linkserver import LinkServer, _Handler, send
from tests.test_bucket import KEY, SECRET, Seaweed, seaweed  # noqa: F401 (seaweed: a fixture)

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
SEEDS = sorted((ROOT / "seeds").glob("*.txt"))
Cli = Callable[..., CompletedProcess[str]]

# --- 1. a receiver that answers after Apprise's own 4 s gets one message ------------------

SLOW = 6.0  # seconds the receiver takes: beyond Apprise's default 4 s, within our 30 s


class SlowHook:
    """A JSON webhook that takes `delay` seconds to answer, and counts what it receives."""

    def __init__(self, web: LinkServer, delay: float) -> None:
        self.delay = delay
        self.bodies: list[dict[str, object]] = []
        web.route("/hook", self._handle)
        self.url = f"json://127.0.0.1:{web.port}/hook"

    def _handle(self, req: _Handler) -> None:
        self.bodies.append(json.loads(req.rfile.read(int(req.headers["Content-Length"]))))
        if not req.server.owner.stop.wait(self.delay):
            send(req, 200, body=b"{}")


def _alerting(ws: Workspace, url: str) -> Path:
    for extra in SEEDS[1:]:
        (ws.inbox / extra.name).unlink()
    settings = ws.root / "config" / "settings.yaml"
    settings.write_text(f'links:\n  check: false\nalerts:\n  - to: "{url}"\n', encoding="utf-8")
    return settings


def _without_alerts(config: Config) -> Config:
    """The config as it was before its alert destinations were added."""
    return replace(config, settings=replace(config.settings, alerts=()))


def test_a_receiver_that_answers_after_seconds_gets_one_message(
    workspace: Workspace, web: LinkServer
) -> None:
    hook = SlowHook(web, SLOW)
    config = workspace.config(settings=_alerting(workspace, hook.url))
    run(_without_alerts(config), now=lambda: T0)  # before the destination was added
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    second = run(config, now=lambda: T0 + timedelta(hours=1))
    assert second.alerts_failed == {}, second.alerts_failed
    assert list(second.alerts_sent.values()) == [30]
    for _ in range(2):  # `feeds alerts --send-now`, twice: nothing is pending any more
        [outcome] = send_pending(config, now=lambda: T0 + timedelta(hours=2))
        assert (outcome.ok, outcome.papers) == (True, 0)
    assert len(hook.bodies) == 1


def test_the_urls_own_read_timeout_overrides_the_wait(web: LinkServer) -> None:
    from tests.test_alerts import MINEDRAFT, SITE, compose

    hook = SlowHook(web, SLOW)
    late = deliver(hook.url + "?rto=0.5", compose([MINEDRAFT], SITE), timeout=30)
    assert not late.ok
    assert late.error
    assert late.error.endswith("(no answer within 0.5 s)"), late.error


# --- 2. a password written unencoded in a state URL is never printed ----------------------

ISSUE_URL = "postgresql://u:Zx9@:/#?&%'\"qSECRET@127.0.0.1:5432/db"
UNCLEAR = [  # a password holding each character that ends it early, in one parser or another
    "postgresql://u:Zx9#qSECRET@127.0.0.1:5432/db",
    "postgresql://u:Zx9@qSECRET@127.0.0.1:5432/db",
    "postgresql://u:Zx9/qSECRET@127.0.0.1:5432/db",
    "postgresql://u:Zx9?qSECRET@127.0.0.1:5432/db",
    "postgresql://u:Zx9?a=qSECRET@127.0.0.1:5432/db",
    ISSUE_URL,
]


@pytest.mark.parametrize("url", UNCLEAR)
def test_a_state_url_whose_password_is_not_encoded_is_refused_without_a_word_of_it(
    url: str, workspace: Workspace, feeds_cli: Cli
) -> None:
    from feeds.settings import state_place
    from feeds.state._pg import shown

    for said in (shown(url), place_shown(url)):
        assert "SECRET" not in said
        assert "Zx9" not in said
    with pytest.raises(ConfigError) as e:
        state_place(url)
    assert "SECRET" not in str(e.value)
    assert "Zx9" not in str(e.value)
    if url == ISSUE_URL:
        r = feeds_cli(workspace.root, "status", "--state", url,
                      "--subscriptions", str(workspace.subscriptions))  # fmt: skip
        assert r.returncode == 2, r.stdout + r.stderr
        said = r.stdout + r.stderr
        assert "SECRET" not in said
        assert "Zx9" not in said
        assert "%40" in said
        assert "PGPASSWORD" in said
        assert "~/.pgpass" in said


def test_an_unclear_state_url_in_the_settings_is_an_error_at_its_line(
    workspace: Workspace,
) -> None:
    settings = workspace.root / "config" / "settings.yaml"
    settings.write_text(f"site:\n  title: x\nstate: {json.dumps(ISSUE_URL)}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load(workspace.subscriptions, settings)
    assert str(e.value).startswith(f"{settings}:3: state postgresql://…: ")
    assert "SECRET" not in str(e.value)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("postgresql://papers:pa%40ss@127.0.0.1:5433/feeds", "papers:***@127.0.0.1:5433/feeds"),
        ("postgresql://papers@127.0.0.1/feeds?user=a%40b", "papers@127.0.0.1/feeds?user=a%40b"),
        ("postgresql://127.0.0.1/feeds?password=qSECRET", "127.0.0.1/feeds?password=***"),
    ],
)
def test_a_state_url_written_as_libpq_reads_it_is_shown_without_its_password(
    url: str, said: str
) -> None:
    from feeds.settings import state_place
    from feeds.state._pg import shown

    assert state_place(url) == (None, url)
    assert shown(url) == "postgresql://" + said


@pytest.mark.parametrize(
    "url", ["s3://AKIAEXAMPLE:qHIDDEN@bkt/site", "s3://AKIAEXAMPLE:qHID/DEN@bkt/site"]
)
def test_keys_written_into_a_bucket_url_are_refused_without_a_word_of_them(url: str) -> None:
    from feeds.settings import public_place

    with pytest.raises(ConfigError) as e:
        public_place(url)
    assert "HID" not in str(e.value)
    assert "AKIAEXAMPLE" not in str(e.value)
    assert "AWS_ACCESS_KEY_ID" in str(e.value)


# --- 3. a first publish into a folder keeps the user's files, whatever their names --------

USER_FILES = {
    "topics/icml/99.html": b"<p>my own page</p>\n",
    "topics/icml/notes.txt": b"mine\n",
    "search/t-user/x.js": b"// my own script\n",
    "search/p/mine/a.txt": b"mine\n",
    "search/.build-notes/a.txt": b"mine\n",
    "feeds/.drafts.tmp": b"mine\n",
}
ICML = "topics:\n  - id: icml\n    title: ICML\n    venues: [ICML]\n"


def _user_files(public: Path) -> None:
    for rel, data in USER_FILES.items():
        (public / rel).parent.mkdir(parents=True, exist_ok=True)
        (public / rel).write_bytes(data)


def test_a_first_publish_keeps_the_users_files_that_look_like_ours(
    workspace: Workspace, with_pagefind: None
) -> None:
    workspace.subscriptions.write_text(ICML, encoding="utf-8")
    settings = workspace.root / "config" / "settings.yaml"
    settings.write_text("site:\n  page_size: 10\n", encoding="utf-8")  # 60 papers: 5 parts
    _user_files(workspace.public)
    first = run(workspace.config(settings=settings), now=lambda: T0)
    assert first.exit_code == 0
    assert first.files.search == ""  # the search index was built
    assert (workspace.public / "topics/icml/5.html").is_file()
    assert sorted(p.name for p in (workspace.public / "search").glob("t-*")) != ["t-user"]
    for rel, data in USER_FILES.items():
        assert (workspace.public / rel).read_bytes() == data, rel

    # Our own parts still go when the list gets shorter, and when the topic goes; the
    # user's stay, and so does the folder that holds them.
    settings.write_text("site:\n  page_size: 20\n", encoding="utf-8")  # 2 parts
    run(workspace.config(settings=settings), now=lambda: T0 + timedelta(hours=1))
    parts = sorted(p.name for p in (workspace.public / "topics/icml").glob("*.html"))
    assert parts == ["1.html", "2.html", "99.html"]
    workspace.subscriptions.write_text(ICML.replace("icml", "icml-2026"), encoding="utf-8")
    run(workspace.config(settings=settings), now=lambda: T0 + timedelta(hours=2))
    assert sorted(p.name for p in (workspace.public / "topics/icml").iterdir()) == [
        "99.html",
        "notes.txt",
    ]
    assert not (workspace.public / "feeds/icml.atom.xml").exists()
    for rel, data in USER_FILES.items():
        assert (workspace.public / rel).read_bytes() == data, rel


# --- 4. how every run ended, and 5. S3 errors in words, on a real SeaweedFS ---------------


def _feeds(ws: Workspace, env: dict[str, str], *args: str) -> CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "feeds", *args, "--subscriptions", str(ws.subscriptions),
         "--state", str(ws.state)],
        cwd=ws.root, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def test_a_run_that_failed_to_upload_is_recorded_with_what_it_did_and_why(
    seaweed: Seaweed,  # noqa: F811 (the fixture imported above)
    workspace: Workspace,
) -> None:
    public = ["--inbox", str(workspace.inbox), "--offline", "--public", "s3://missing-bkt/site"]
    failed = _feeds(workspace, seaweed.env(), "run", *public)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    reason = f"no such bucket 'missing-bkt' at {seaweed.endpoint}"
    assert failed.stderr == f"error: cannot list s3://missing-bkt/site: {reason}\n"

    status = _feeds(workspace, seaweed.env(), "status")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    [i] = [n for n, line in enumerate(lines) if line.startswith("last run:")]
    assert " failed while uploading after " in lines[i]
    assert lines[i].endswith(" s; 2 new digests, 60 new papers, exit 1"), lines[i]
    assert lines[i + 1] == f"  error: cannot list s3://missing-bkt/site: {reason}"
    report = json.loads(_feeds(workspace, seaweed.env(), "status", "--json").stdout)
    summary = report["last_run"]["summary"]
    assert (summary["exit_code"], summary["failed_while"]) == (1, "uploading")
    assert (summary["digests"], summary["papers_new"]) == (2, 60)
    assert summary["error"] == f"cannot list s3://missing-bkt/site: {reason}"


def test_a_run_that_succeeds_after_says_it_took_and_exited_0(workspace: Workspace) -> None:
    from feeds.cli.report import gather, render_text

    config = workspace.config()
    run(config, now=lambda: T0)
    [line] = [x for x in render_text(gather(config)).splitlines() if x.startswith("last run:")]
    assert " took " in line
    assert line.endswith("; 2 new digests, 60 new papers, exit 0"), line


def test_without_keys_a_bucket_says_so_and_never_names_the_metadata_address(
    seaweed: Seaweed,  # noqa: F811 (the fixture imported above)
    workspace: Workspace,
    tmp_path: Path,
) -> None:
    env = seaweed.env()
    del env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    env.update(HOME=str(tmp_path), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    args = ["--inbox", str(workspace.inbox), "--offline", "--public", "s3://site/nokeys"]
    done = _feeds(workspace, env, "run", *args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == (
        "error: cannot use s3://site/nokeys: no S3 credentials: set AWS_ACCESS_KEY_ID and"
        " AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)\n"
    )
    # A profile of the shared credentials file holds them: the upload goes through.
    (tmp_path / "credentials").write_text(
        f"[lab]\naws_access_key_id = {KEY}\naws_secret_access_key = {SECRET}\n", "utf-8"
    )
    env.update(AWS_PROFILE="lab", AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "credentials"))
    again = _feeds(workspace, env, "run", *args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "index.html" in seaweed.objects("nokeys")


def test_the_services_own_code_and_message_are_said(
    seaweed: Seaweed,  # noqa: F811 (the fixture imported above)
    workspace: Workspace,
) -> None:
    env = {**seaweed.env(), "AWS_ACCESS_KEY_ID": "not-a-key"}
    args = ["--inbox", str(workspace.inbox), "--offline", "--public", "s3://site/badkey"]
    done = _feeds(workspace, env, "run", *args)
    assert done.returncode == 1
    assert done.stderr == (
        "error: cannot list s3://site/badkey: InvalidAccessKeyId: The access key ID you"
        " provided does not exist in our records.\n"
    )


@pytest.mark.parametrize(
    "said",
    [  # what obstore says when it asked the cloud's metadata service for credentials
        (
            "Generic S3 error: Error performing PUT http://169.254.169.254/latest/api/token in"
            " 2.1s, after 3 retries, max_retries: 3, retry_timeout: 60s  - HTTP error: error"
            " sending request\n\nDebug source: ..."
        ),
        "Generic S3 error: Error performing GET http://169.254.170.2/v2/credentials - HTTP",
    ],
)
def test_a_failed_ask_for_instance_credentials_is_said_in_words(said: str) -> None:
    from feeds.publish.s3 import NO_CREDENTIALS, reason

    assert reason(RuntimeError(said)) == NO_CREDENTIALS


# --- 6. `feeds init` writes the whole menu -----------------------------------------------

SETTING = re.compile(r"# ( *(?:- )?[a-z_]+:.*| *- .*| +#.*)")


def test_the_settings_feeds_init_writes_hold_every_setting(tmp_path: Path) -> None:
    from feeds.config.read import _LINK_KEYS, _SETTINGS_KEYS, read_settings

    example = (ROOT / "feeds" / "examples" / "settings.yaml").read_text("utf-8")
    lines = [m.group(1) for line in example.splitlines() if (m := SETTING.fullmatch(line))]
    uncommented = tmp_path / "settings.yaml"
    uncommented.write_text("\n".join(lines) + "\n", "utf-8")
    menu = yaml.safe_load(uncommented.read_text("utf-8"))
    assert set(menu) == set(_SETTINGS_KEYS)
    assert set(menu["links"]) == set(_LINK_KEYS)
    assert set(menu["site"]) == {"title", "base_url", "page_size"}
    [alert] = menu["alerts"]
    assert set(alert) == {"to", "topics", "every", "max_papers"}
    assert {"arxiv": ["cs.CL", "cs.LG"]} in menu["sources"]
    # The other engines, named where their settings are.
    assert "s3://bucket/prefix" in example
    assert "postgresql://user@host:port/database" in example
    # What it shows is valid, and the defaults it claims are the defaults.
    settings = read_settings(uncommented)
    assert settings.links == LinkSettings()
    assert settings.arxiv_backfill == Settings().arxiv_backfill
    assert settings.alerts[0].max_papers == DEFAULT_MAX_PAPERS


# --- 7. the systemd and cron examples ------------------------------------------------------

UNITS = ROOT / "contrib" / "systemd"
SERVICES = ("paperfeeds.service", "paperfeeds-watch.service")


def _section(unit: Path, name: str) -> dict[str, str]:
    """Return a unit file's section as key to value (the last of a key wins)."""
    out: dict[str, str] = {}
    current = ""
    for line in unit.read_text("utf-8").splitlines():
        if line.startswith("["):
            current = line.strip("[]")
        elif current == name and "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value
    return out


def test_the_shipped_units_verify_and_the_timer_fires_every_15_minutes(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    # The units as a user installs them: the project and env file where the units say.
    project = tmp_path / "srv"
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "bin" / "feeds").write_text("#!/bin/sh\n", "utf-8")
    (project / ".venv" / "bin" / "feeds").chmod(0o755)
    (tmp_path / "paperfeeds.env").write_text("", "utf-8")
    for unit in UNITS.iterdir():
        text = unit.read_text("utf-8").replace("/srv/paperfeeds", str(project))
        text = text.replace("/etc/paperfeeds.env", str(tmp_path / "paperfeeds.env"))
        (tmp_path / unit.name).write_text(text, "utf-8")
    names = [f"./{unit.name}" for unit in sorted(UNITS.iterdir())]
    verified = subprocess.run([analyze, "verify", *names], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout + verified.stderr == ""
    timer = _section(UNITS / "paperfeeds.timer", "Timer")
    assert timer.get("Persistent") == "true"
    calendar = subprocess.run(
        [analyze, "calendar", "--iterations=3", timer.get("OnCalendar", "")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert calendar.returncode == 0, calendar.stdout + calendar.stderr
    times = re.findall(r"(?:Next elapse|Iter\. #\d): \w+ \S+ (\d\d:\d\d:\d\d)", calendar.stdout)
    minutes = [int(t[:2]) * 60 + int(t[3:5]) for t in times]
    assert [(b - a) % 1440 for a, b in itertools.pairwise(minutes)] == [15, 15]


def test_a_persistent_timer_has_a_calendar_to_catch_up_on() -> None:
    # systemd honours Persistent= only with OnCalendar= (systemd.timer(5)).
    timer = _section(UNITS / "paperfeeds.timer", "Timer")
    if timer.get("Persistent") == "true":
        assert "OnCalendar" in timer
        assert not {"OnUnitActiveSec", "OnBootSec", "OnActiveSec"} & set(timer)


@pytest.mark.parametrize("unit", SERVICES)
def test_a_service_s_comment_names_every_line_to_change(unit: str) -> None:
    service = _section(UNITS / unit, "Service")
    comments = "\n".join(
        line for line in (UNITS / unit).read_text("utf-8").splitlines() if line.startswith("#")
    )
    for key, value in service.items():
        if "/srv/paperfeeds" in value:
            assert f"{key}=" in comments, (unit, key)
    assert "User=" in comments


def test_the_env_file_is_said_to_hold_every_secret_a_run_needs() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    secrets = readme[readme.index("### Secrets for cron and systemd") :]
    secrets = secrets[: secrets.index("\n## ")]
    for where in (secrets, *(UNITS / unit for unit in SERVICES), ROOT / "contrib" / "crontab"):
        text = where if isinstance(where, str) else where.read_text("utf-8")
        for name in ("PGPASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            assert name in text, (str(where)[:40], name)


def test_every_cron_line_of_the_readme_is_the_crontab_s_with_its_env_file() -> None:
    [job] = [x for x in (ROOT / "contrib" / "crontab").read_text("utf-8").splitlines()
             if re.match(r"^[*\d]", x)]  # fmt: skip
    readme = (ROOT / "README.md").read_text("utf-8")
    lines = [x for x in readme.splitlines() if re.match(r"^[*\d/,-]+ [*\d/,-]+ \* \* \*", x)]
    assert lines
    assert set(lines) == {job}


# --- 8. alerts that link to localhost -------------------------------------------------------

LOCAL_LINKS = (
    "alerts link to http://localhost:8000/, which opens only on this machine: set"
    " site.base_url to where public/ is served"
)


def test_check_and_the_run_that_sends_say_that_alerts_link_to_localhost(
    workspace: Workspace, web: LinkServer, feeds_cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    from feeds.cli.run import print_summary

    hook = SlowHook(web, 0)
    settings = _alerting(workspace, hook.url)
    check = feeds_cli(workspace.root, "check", "--settings", str(settings),
                      "--subscriptions", str(workspace.subscriptions), "--quiet")  # fmt: skip
    assert f"{settings}:4: warning: {LOCAL_LINKS}" in check.stdout, check.stdout
    config = workspace.config(settings=settings)
    run(_without_alerts(config), now=lambda: T0)  # before the destination was added
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    second = run(config, now=lambda: T0 + timedelta(hours=1))
    assert second.alerts_sent
    assert LOCAL_LINKS in second.warnings
    third = run(config, now=lambda: T0 + timedelta(hours=2))
    assert LOCAL_LINKS not in third.warnings  # nothing sent: nothing to say
    print_summary(second, config, quiet=True, offline=False)  # `feeds run --quiet` says it
    assert f"warning: {LOCAL_LINKS}\n" in capsys.readouterr().err
    assert "http://localhost:8000/papers/" in str(hook.bodies[0]["message"])

    # Set to where the site is served, nothing is said.
    settings.write_text(settings.read_text("utf-8") + "site:\n  base_url: https://x.org/p/\n")
    check = feeds_cli(workspace.root, "check", "--settings", str(settings),
                      "--subscriptions", str(workspace.subscriptions))  # fmt: skip
    assert "opens only on this machine" not in check.stdout


@pytest.mark.parametrize(
    ("url", "here"),
    [("http://localhost:8000/", True), ("http://127.0.0.1/", True), ("http://[::1]:9/", True),
     ("http://papers.localhost/", True), ("https://example.org/", False),
     ("http://10.0.0.7/", False)],
)  # fmt: skip
def test_only_loopback_addresses_open_only_here(url: str, here: bool) -> None:
    from feeds.urls import only_here

    assert only_here(url) is here


# --- 9. conditional requests compare entity tags weakly ------------------------------------


def test_serve_answers_a_weak_entity_tag_of_the_file_with_304(tmp_path: Path) -> None:
    from tests.test_serve import published, request, start_serve, stop

    ws = published(tmp_path / "ws")
    proc, port = start_serve(ws.public, ws.root)
    try:
        etag = request(port, "/feeds/all.atom.xml")[1]["etag"]
        for held in (f"W/{etag}", f'"nope", W/{etag}', f'W/"nope",{etag}'):
            status, headers, body = request(port, "/feeds/all.atom.xml", {"If-None-Match": held})
            assert (status, body, headers["etag"]) == (304, b"", etag), held
        other = request(port, "/feeds/all.atom.xml", {"If-None-Match": 'W/"nope"'})
        assert other[0] == 200
    finally:
        stop(proc)


@pytest.mark.parametrize(
    ("header", "holds"),
    [('"a-1"', True), ('W/"a-1"', True), (' "x" , W/"a-1" ', True), ("*", True),
     ('"a-1x"', False), ('W/"a-2"', False), ('"x,a-1"', False), ("", False)],
)  # fmt: skip
def test_if_none_match_is_a_weak_comparison(header: str, holds: bool) -> None:
    from feeds.serve import none_match_holds

    assert none_match_holds(header, '"a-1"') is holds


# --- 10. config: an empty list at its line, `check -q` says only problems, "1 paper" ------


@pytest.mark.parametrize("key", ["any", "none", "venues", "authors", "fields", "all", "like"])
def test_an_empty_list_beside_another_criterion_is_an_error_at_its_line(
    tmp_path: Path, key: str
) -> None:
    from feeds.config import load_subscriptions

    subs = tmp_path / "subscriptions.yaml"
    other = "venues: [ICML]" if key != "venues" else "any: [LLM]"
    subs.write_text(
        f"topics:\n  - id: a\n    title: A\n    {other}\n    {key}: []\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as e:
        load_subscriptions(subs)
    assert str(e.value) == f"{subs}:5: {key} must not be empty"
    subs.write_text(f"topics:\n  - id: a\n    title: A\n    {other}\n    {key}:\n", "utf-8")
    with pytest.raises(ConfigError) as e:
        load_subscriptions(subs)
    assert str(e.value).startswith(f"{subs}:5: {key} ")  # as `any:` with no value always was


def test_check_quiet_prints_only_problems(workspace: Workspace, feeds_cli: Cli) -> None:
    run(workspace.config(), now=lambda: T0)
    args = ["check", "-q", "--subscriptions", str(workspace.subscriptions),
            "--state", str(workspace.state)]  # fmt: skip
    assert feeds_cli(workspace.root, *args).stdout == ""  # nothing wrong: nothing said
    with workspace.subscriptions.open("a", encoding="utf-8") as f:
        f.write("  - id: lk\n    title: LK losses\n    any: [LK losses, zzqqxx]\n")
    quiet = feeds_cli(workspace.root, *args)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == "lk: warning: terms that match no stored paper: zzqqxx\n"


def test_a_count_of_one_is_singular_in_what_check_says(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    run(workspace.config(), now=lambda: T0)
    workspace.subscriptions.write_text(
        "topics:\n  - id: md\n    title: MD\n    like: ['MineDraft: A Framework for Batch"
        " Parallel Speculative Decoding']\n    min_similarity: 0.5\n",
        encoding="utf-8",
    )
    r = feeds_cli(workspace.root, "check", "--subscriptions", str(workspace.subscriptions),
                  "--state", str(workspace.state))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "  md: 1 paper like MineDraft (min_similarity 0.5)" in r.stdout.splitlines()


# --- 11. smaller things ---------------------------------------------------------------------


def test_a_closed_standard_output_does_not_fail_a_run_that_did_its_work(
    workspace: Workspace,
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "feeds", "run", *workspace.cli_args()],
        cwd=workspace.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.close()  # `| head -0`: the reader is gone before the run says a word
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert err == b""
    assert (workspace.public / "index.html").is_file()


def test_the_run_says_every_number_alike() -> None:
    from feeds.cli.run import print_summary
    from feeds.pipeline import RunSummary
    from feeds.publish.write import WriteStats

    summary = RunSummary(
        digests=1200, papers_new=10000, papers_total=10807, papers_updated=1500,
        links_found=2500, files=WriteStats(10807, 12268, 1001),
        bucket={"put": 12156, "deleted": 1001, "unchanged": 12268},
    )  # fmt: skip
    config = Config(Settings(public_url="s3://site/p"), (), Path("s.yaml"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_summary(summary, config, quiet=False, offline=True)
    said = out.getvalue()
    assert "digests: 1,200 new," in said
    assert "papers: 10,000 new, 1,500 updated, 10,807 in total" in said
    assert "links: 2,500 new in digests" in said
    assert "10,807 files written, 12,268 unchanged, 1,001 removed" in said
    assert "bucket: 12,156 objects uploaded, 1,001 deleted, 12,268 unchanged" in said
    numbers = [re.sub(r" in \S+$", "", line) for line in said.splitlines()]  # not the places
    assert not [line for line in numbers if re.search(r"\d{4}", line)]


def test_a_run_under_many_topics_names_the_largest_few_new_matches() -> None:
    from feeds.cli.run import GAINS_SHOWN, say_gains

    gains = {f"t{n:03}": n % 7 for n in range(120)}
    said = say_gains(gains)
    named = said.rpartition(" and ")[0].split(", ")
    assert len(named) == GAINS_SHOWN
    assert all(part.endswith("+6") for part in named)  # the largest
    assert said.endswith(f" and {sum(1 for n in gains.values() if n) - GAINS_SHOWN} more topics")
    assert say_gains({"a": 3, "b": 0, "c": 1}) == "a +3, c +1"  # a few: all, in order
    assert say_gains({"a": 0}) == "none"


def test_watch_says_its_times_with_seconds_and_skips_a_locked_cycle_without_advice(
    workspace: Workspace, tmp_path: Path
) -> None:
    from feeds.state.lock import exclusive

    settings = workspace.root / "config" / "settings.yaml"
    settings.write_text("schedule:\n  every: 20s\nlinks:\n  check: false\n", "utf-8")
    err = tmp_path / "watch.err"
    args = ["watch", *workspace.cli_args(), "--settings", str(settings)]
    with exclusive(workspace.state), err.open("w") as e:  # a `feeds run` is publishing
        proc = subprocess.Popen([sys.executable, "-m", "feeds", *args], cwd=workspace.root,
                                stdout=subprocess.DEVNULL, stderr=e)  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while "cycle skipped" not in err.read_text() and proc.poll() is None:
                assert time.monotonic() < deadline, err.read_text()
                time.sleep(0.1)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    log = err.read_text()
    assert re.search(r"every 20s: a cycle now, then \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", log), log
    [skipped] = [line for line in log.splitlines() if "cycle skipped" in line]
    assert "is publishing with this state" in skipped
    assert "try again" not in skipped.lower()  # it does, itself, at the next cycle


def test_run_says_to_try_again_when_another_process_publishes(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    from feeds.cli.common import fail
    from feeds.errors import LockHeld
    from feeds.state.lock import exclusive

    with exclusive(workspace.state), pytest.raises(LockHeld) as held:
        run(workspace.config(), now=lambda: T0, lock_wait=0.2)
    with pytest.raises(SystemExit) as exited:
        fail(held.value)
    assert exited.value.code == 1
    assert capsys.readouterr().err.endswith("waited 0s. Try again when it has finished\n")


def test_alerts_lists_the_destinations_before_the_first_run(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    settings = workspace.root / "config" / "settings.yaml"
    settings.write_text('alerts:\n  - to: "json://127.0.0.1:9/hook"\n', "utf-8")
    r = feeds_cli(workspace.root, "alerts", "--settings", str(settings),
                  "--state", str(workspace.state),
                  "--subscriptions", str(workspace.subscriptions))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (
        r.stdout == "alerts to webhook (json) at 127.0.0.1:9: nothing sent yet, 0 papers pending\n"
    )
    assert not workspace.state.exists()  # listing makes no state


def test_a_secret_that_is_part_of_a_word_leaves_apprise_s_words_whole(web: LinkServer) -> None:
    from tests.test_alerts import MINEDRAFT, SITE, compose

    web.route("/hook", lambda req: send(req, 500, body=b"{}"))
    url = f"json://127.0.0.1:{web.port}/hook?+X-Token=err&+X-Key=Ser"
    failed = deliver(url, compose([MINEDRAFT], SITE), timeout=30)
    assert failed.error == (
        "Failed to send JSON POST notification: Internal server error., error=500."
    )
    from feeds.alerts.deliver import _redact

    said = "refused err; token err, Ser-err: err"
    assert _redact(said, url, "webhook (json)") == "refused ***; token ***, ***-***: ***"


def test_an_alert_subject_quotes_titles_that_hold_and() -> None:
    from feeds.alerts.message import compose
    from tests.test_alerts import SITE, new

    papers = [new(1, "llm-rl", "LLM reasoning and RL"), new(2, "llm-rl", "LLM reasoning and RL"),
              new(3, "hall", "Hallucination"), new(4, "graphs", "Graphs, trees")]  # fmt: skip
    subject = compose(papers, SITE).subject
    assert subject == (
        "paperfeeds: 4 new papers in “LLM reasoning and RL”, “Graphs, trees”, “Hallucination”"
    )
    plain = compose([new(1, "hall", "Hallucination"), new(2, "spec", "Speculative")], SITE)
    assert plain.subject == "paperfeeds: 2 new papers in Hallucination, Speculative"


def test_serve_with_a_base_url_on_port_0_serves_on_a_free_port(workspace: Workspace) -> None:
    from tests.test_serve import request, stop

    run(workspace.config(), now=lambda: T0)
    settings = workspace.root / "config" / "settings.yaml"
    settings.write_text("site:\n  base_url: http://localhost:0/\n", "utf-8")
    proc = serve(workspace, settings)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.match(r"serving .* at http://localhost:(\d+)/ ", line)
        assert found, line
        port = int(found.group(1))
        assert port not in (0, 80)
        assert request(port, "/feeds.opml")[0] == 200
    finally:
        stop(proc)
    assert proc.stderr is not None
    assert f"Set site.base_url to http://localhost:{port}/" in proc.stderr.read()
