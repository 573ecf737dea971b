"""Alerts in whole cycles, with real parts: a real SMTP server and a real JSON webhook on
127.0.0.1 receive what `run` sends after it publishes. No flood, no loss, no repeats; a
destination that is down keeps its papers; secrets stay out of every output."""

from __future__ import annotations

import base64
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from feeds.alerts.env import unset_variables
from feeds.alerts.send import send_pending
from feeds.cli.run import print_summary
from feeds.config import Config, load
from feeds.errors import ConfigError
from feeds.pipeline import RunSummary, run
from tests.conftest import ROOT, Workspace
from tests.linkserver import LinkServer, _Handler, send
from tests.mailserver import MailServer

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)  # a Monday
TOKEN = "hook-token-Zq81x"
Cli = Callable[..., CompletedProcess[str]]
SEEDS = sorted((ROOT / "seeds").glob("*.txt"))


class Hook:
    """A JSON webhook that records what it receives and can be made to fail."""

    def __init__(self, web: LinkServer) -> None:
        self.bodies: list[dict[str, object]] = []
        self.tokens: list[str] = []
        self.auth: list[str] = []  # the Authorization header of each body received
        self.status = 200
        web.route("/hook", self._handle)
        self.url = f"json://127.0.0.1:{web.port}/hook?+X-Token=${{HOOK_TOKEN}}"

    def _handle(self, req: _Handler) -> None:
        body = json.loads(req.rfile.read(int(req.headers["Content-Length"])))
        if self.status == 200:
            self.bodies.append(body)
            self.tokens.append(req.headers.get("X-Token", ""))
            self.auth.append(req.headers.get("Authorization", ""))
        send(req, self.status, body=b"{}")


@pytest.fixture
def hook(web: LinkServer, monkeypatch: pytest.MonkeyPatch) -> Hook:
    monkeypatch.setenv("HOOK_TOKEN", TOKEN)
    return Hook(web)


def _setup(
    ws: Workspace, alerts: str, *, first_seed_only: bool = True, base_url: str | None = None
) -> Path:
    """Write settings with these alerts (and no link checks: tests never need the
    internet), and `base_url` when given (else the messages link to localhost, which a
    run that sends warns of); leave only the first seed in the inbox."""
    if first_seed_only:
        for extra in SEEDS[1:]:
            (ws.inbox / extra.name).unlink()
    settings = ws.root / "config" / "settings.yaml"
    site = f"site:\n  base_url: {base_url}\n" if base_url else ""
    settings.write_text(f"links:\n  check: false\nalerts:\n{alerts}{site}", encoding="utf-8")
    return settings


def _config(ws: Workspace, settings: Path) -> Config:
    return ws.config(settings=settings)


def _run(config: Config, when: datetime, *, offline_run: bool = False) -> RunSummary:
    return run(config, now=lambda: when, offline=offline_run)


def _history_cli(ws: Workspace, feeds_cli: Cli) -> CompletedProcess[str]:
    """`feeds run` before the alert destinations were added (settings without them)."""
    before = ws.root / "config" / "before-alerts.yaml"
    before.write_text("links:\n  check: false\n", encoding="utf-8")
    r = feeds_cli(ws.root, "run", "--quiet", *ws.cli_args(), "--settings", str(before))
    assert r.returncode == 0, r.stderr
    return r


def _history(config: Config, when: datetime) -> RunSummary:
    """Run before the alert destinations were added: what enters now is history to them."""
    return _run(replace(config, settings=replace(config.settings, alerts=())), when)


def _mail_url(mail: MailServer) -> str:
    return f"mailto://127.0.0.1:{mail.port}?from=papers@example.org&to=me@example.org&mode=insecure"


def _html(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("html",))
    assert part is not None
    return str(part.get_content())


def test_new_destinations_start_with_the_run_that_sees_them_then_one_message_a_cycle(
    workspace: Workspace, mail: MailServer, hook: Hook
) -> None:
    settings = _setup(
        workspace,
        f'  - to: "{_mail_url(mail)}"\n'
        f'  - to: "{hook.url}"\n    topics: [speculative-decoding, diffusion-language-models]\n',
    )
    config = _config(workspace, settings)
    first = _history(config, T0)  # before the destinations were added
    assert first.papers_new == 30

    # The run that first sees them sends them what entered in it (it sent nothing when
    # its papers entered in the same second as the destinations started), and nothing of
    # what was there before (no flood).
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)  # a new digest
    second = _run(config, T0 + timedelta(hours=1))
    assert second.exit_code == 0
    assert set(second.alerts_sent) == {
        f"email via 127.0.0.1:{mail.port}",
        f"webhook (json) at 127.0.0.1:{hook_port(hook)}",
    }
    [email] = mail.messages
    html = _html(email)
    assert "new papers in" in str(email["Subject"])
    assert "SpecPrune-VLA: Accelerating Vision-Language-Action Models" in html
    assert "通过动作感知的自推测剪枝加速视觉-语言-动作模型" in html  # Chinese intact
    assert "MineDraft" not in html  # entered before the destination: history
    assert "self-speculative in title" in html
    assert "http://localhost:8000/papers/" in html  # linked to the paper's page
    [body] = hook.bodies
    assert hook.tokens == [TOKEN]  # the secret reached the server, and only the server
    text = str(body["message"])
    assert "Speculative decoding" in text
    assert "SpecPrune-VLA" in text
    assert "Hallucination" not in str(body["title"])  # only its topics

    third = _run(config, T0 + timedelta(hours=2))  # nothing new: nothing sent again
    assert third.alerts_sent == {}
    assert len(mail.messages) == 1
    assert len(hook.bodies) == 1


def hook_port(hook: Hook) -> int:
    return int(hook.url.split(":")[2].split("/")[0])


def test_a_destination_that_is_down_keeps_its_papers_and_gets_them_once(
    workspace: Workspace, hook: Hook
) -> None:
    settings = _setup(workspace, f'  - to: "{hook.url}"\n')
    config = _config(workspace, settings)
    _history(config, T0)
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    hook.status = 503
    down = _run(config, T0 + timedelta(hours=1))
    assert (workspace.public / "feeds" / "all.atom.xml").is_file()  # published all the same
    assert down.papers_new == 30
    [(shown, why)] = down.alerts_failed.items()
    assert TOKEN not in why
    assert down.exit_code == 4
    assert hook.bodies == []
    hook.status = 200
    waiting = _run(config, T0 + timedelta(minutes=70))  # backing off: not yet tried again
    assert hook.bodies == []
    assert waiting.alerts_pending == {shown: 30}
    back = _run(config, T0 + timedelta(hours=3))
    assert back.alerts_sent == {shown: 30}
    assert back.exit_code == 0
    assert len(hook.bodies) == 1
    _run(config, T0 + timedelta(hours=4))
    assert len(hook.bodies) == 1  # once


def test_every_day_makes_one_digest_holding_everything_new(
    workspace: Workspace, hook: Hook
) -> None:
    settings = _setup(workspace, f'  - to: "{hook.url}"\n    every: 1d\n')
    config = _config(workspace, settings)
    _history(config, T0)
    _run(config, T0 + timedelta(minutes=1))  # starts the clock of the digest
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    first = _run(config, T0 + timedelta(hours=1))
    assert len(hook.bodies) == 1  # nothing was sent before: the first goes at once
    assert sum(first.alerts_sent.values()) == 30
    more = workspace.inbox / "later.txt"
    more.write_text(
        "ICML\n\nA Later Paper on Speculative Decoding\n\n推测解码的后续论文\n\n"
        "Ann Bell, Bo Chen\n\nAI总结 又一篇推测解码论文。\n",
        encoding="utf-8",
    )
    held = _run(config, T0 + timedelta(hours=5))  # the same day: held for the digest
    assert len(hook.bodies) == 1
    assert list(held.alerts_pending.values()) == [1]
    next_day = _run(config, T0 + timedelta(days=1))
    assert len(hook.bodies) == 2
    assert "A Later Paper on Speculative Decoding" in str(hook.bodies[1]["message"])
    assert sum(next_day.alerts_sent.values()) == 1


def test_an_edited_topic_that_gains_old_papers_is_one_short_message(
    workspace: Workspace, hook: Hook
) -> None:
    settings = _setup(
        workspace, f'  - to: "{hook.url}"\n    topics: [icml-2026]\n    max_papers: 5\n',
        first_seed_only=False,
    )  # fmt: skip
    subscriptions = workspace.subscriptions
    original = subscriptions.read_text(encoding="utf-8")
    subscriptions.write_text(original.replace("venues: [ICML]", "venues: [NeurIPS]"))
    config = _config(workspace, settings)
    _history(config, T0)
    subscriptions.write_text(original)  # now every ICML paper enters the topic
    edited = _run(_config(workspace, settings), T0 + timedelta(hours=1))
    assert edited.alerts_sent == {f"webhook (json) at 127.0.0.1:{hook_port(hook)}": 60}
    [body] = hook.bodies
    text = str(body["message"])
    assert "and 55 more" in text
    assert "http://localhost:8000/topics/icml-2026.html" in text
    assert "60 new papers" in str(body["title"])


def test_offline_sends_nothing_and_keeps_everything_pending(
    workspace: Workspace, hook: Hook
) -> None:
    settings = _setup(workspace, f'  - to: "{hook.url}"\n')
    config = _config(workspace, settings)
    _history(config, T0)
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    _run(config, T0 + timedelta(hours=1), offline_run=True)
    assert hook.bodies == []
    online = _run(config, T0 + timedelta(hours=2))
    assert sum(online.alerts_sent.values()) == 30
    assert len(hook.bodies) == 1


def test_secrets_stay_out_of_output_status_and_public(
    workspace: Workspace, web: LinkServer, feeds_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cret-Pa55-77"
    monkeypatch.setenv("HOOK_TOKEN", secret)
    hook = Hook(web)
    hook.status = 500
    settings = _setup(
        workspace,
        f'  - to: "json://user:{secret[:4]}${{HOOK_TOKEN}}@127.0.0.1:{hook_port(hook)}/hook?+Authorization=Bearer%20${{HOOK_TOKEN}}"\n',
    )
    args = [*workspace.cli_args(), "--settings", str(settings)]
    args.remove("--offline")
    env_run = _history_cli(workspace, feeds_cli)
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    failing = feeds_cli(workspace.root, "run", "--quiet", *args)
    assert failing.returncode == 4, failing.stderr
    assert "alert failed: webhook (json) at 127.0.0.1" in failing.stderr  # even with --quiet
    status = feeds_cli(workspace.root, "status", "--state", str(workspace.state),
                       "--settings", str(settings))  # fmt: skip
    status_json = feeds_cli(workspace.root, "status", "--json", "--state", str(workspace.state),
                            "--settings", str(settings))  # fmt: skip
    listing = feeds_cli(workspace.root, "alerts", "--settings", str(settings),
                        "--state", str(workspace.state))  # fmt: skip
    assert "30 papers pending" in status.stdout, status.stdout
    for out in (env_run, failing, status, status_json, listing):
        assert secret not in out.stdout + out.stderr
    for path in workspace.public.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert secret.encode() not in workspace.state.read_bytes()


def test_a_secret_with_an_at_sign_neither_reroutes_the_alert_nor_leaks(
    workspace: Workspace, web: LinkServer, hook: Hook, feeds_cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    secret = "hunter2@SECRETtail.internal"
    monkeypatch.setenv("HOOK_PASS", secret)
    web.route("/x", hook._handle)
    settings = _setup(workspace, f'  - to: "json://user:${{HOOK_PASS}}@127.0.0.1:{web.port}/x"\n')
    args = [*workspace.cli_args(), "--settings", str(settings)]
    args.remove("--offline")
    outs = [_history_cli(workspace, feeds_cli)]
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    outs.append(feeds_cli(workspace.root, "run", *args))
    assert outs[-1].returncode == 0, outs[-1].stderr
    assert len(hook.bodies) == 1  # delivered to 127.0.0.1, the host the URL names
    [auth] = hook.auth
    assert auth == "Basic " + base64.b64encode(f"user:{secret}".encode()).decode()
    outs += [
        feeds_cli(workspace.root, "status", "--state", str(workspace.state), "--settings",
                  str(settings)),
        feeds_cli(workspace.root, "alerts", "--state", str(workspace.state), "--settings",
                  str(settings)),
    ]  # fmt: skip
    assert f"webhook (json) at 127.0.0.1:{web.port}" in outs[-1].stdout
    for out in outs:
        for part in ("hunter2", "SECRETtail"):
            assert part not in out.stdout + out.stderr
    assert b"SECRETtail" not in workspace.state.read_bytes()
    assert b"hunter2" not in workspace.state.read_bytes()


def test_a_variable_that_is_the_whole_url_is_taken_as_written() -> None:
    from feeds.alerts.env import expand

    env = {"URL": "json://u:p@host/x?a=b", "P": "a@b/c?d#e"}
    assert expand("${URL}", env) == env["URL"]
    assert expand("json://u:${P}@host/x", env) == "json://u:a%40b%2Fc%3Fd%23e@host/x"


def test_a_missing_variable_is_no_config_error_and_is_named_with_its_line(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _setup(workspace, '  - to: "ntfy://ntfy.example.org/${NO_SUCH_TOPIC_VAR}"\n')
    monkeypatch.delenv("NO_SUCH_TOPIC_VAR", raising=False)
    config = load(workspace.subscriptions, settings)  # cron may set it where we do not
    [missing] = unset_variables(config.settings.alerts, os.environ)
    assert str(missing) == (
        f"{settings}:4: alerts: environment variable NO_SUCH_TOPIC_VAR is not set"
        " (used as ${NO_SUCH_TOPIC_VAR})"
    )


def test_check_warns_of_a_variable_unset_here_with_its_line(
    workspace: Workspace, feeds_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _setup(workspace, '  - to: "ntfy://ntfy.example.org/${NO_SUCH_TOPIC_VAR}"\n')
    monkeypatch.delenv("NO_SUCH_TOPIC_VAR", raising=False)
    args = ("--subscriptions", str(workspace.subscriptions), "--settings", str(settings),
            "--state", str(workspace.state))  # fmt: skip
    r = feeds_cli(workspace.root, "check", *args)
    assert r.returncode == 0, r.stderr  # a warning: cron may set it where check runs
    said = (f"{settings}:4: warning: alerts: environment variable NO_SUCH_TOPIC_VAR is not set"
            " (used as ${NO_SUCH_TOPIC_VAR})")  # fmt: skip
    assert said in r.stdout.splitlines()
    doc = json.loads(feeds_cli(workspace.root, "check", "--json", *args).stdout)
    assert said in doc["warnings"]
    monkeypatch.setenv("NO_SUCH_TOPIC_VAR", "set")
    assert "NO_SUCH_TOPIC_VAR" not in feeds_cli(workspace.root, "check", *args).stdout


def test_a_broken_reference_is_still_a_config_error_with_its_line(workspace: Workspace) -> None:
    settings = _setup(workspace, '  - to: "ntfy://ntfy.example.org/${UNSET_VAR}/${oops"\n')
    with pytest.raises(ConfigError, match=r"'\$\{' at character \d+ does not start"):
        load(workspace.subscriptions, settings)


def test_an_unset_variable_stops_only_its_destination(
    workspace: Workspace, web: LinkServer, hook: Hook, feeds_cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.delenv("SECOND_HOOK_TOKEN", raising=False)
    second = Hook(web)  # routed at /hook2 below, and /hook back to the first
    web.route("/hook2", second._handle)
    web.route("/hook", hook._handle)
    unset_url = f"json://127.0.0.1:{web.port}/hook2?+X-Token=${{SECOND_HOOK_TOKEN}}"
    settings = _setup(workspace, f'  - to: "{hook.url}"\n  - to: "{unset_url}"\n',
                      base_url="https://papers.example.org/")  # fmt: skip
    args = [*workspace.cli_args(), "--settings", str(settings)]
    args.remove("--offline")
    _history_cli(workspace, feeds_cli)
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    later = feeds_cli(workspace.root, "run", "--quiet", *args)  # before: exit 2, nothing done
    assert later.returncode == 4, later.stderr
    assert "SpecPrune-VLA" in (workspace.public / "feeds" / "all.atom.xml").read_text()
    assert len(hook.bodies) == 1  # the other destination is served
    assert second.bodies == []
    shown = f"webhook (json) at 127.0.0.1:{web.port}"
    assert (
        f"alert not sent: {shown} #2: environment variable SECOND_HOOK_TOKEN is not set"
        f" (${{SECOND_HOOK_TOKEN}} at {settings}:5); 30 papers pending"
    ) in later.stderr, later.stderr
    assert "alert failed" not in later.stderr
    monkeypatch.setenv("SECOND_HOOK_TOKEN", "now-set")  # as the env file of cron would
    fixed = feeds_cli(workspace.root, "run", "--quiet", *args)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stderr == ""
    [body] = second.bodies  # what waited for it, once
    assert "30 new papers" in str(body["title"])
    assert second.tokens == ["now-set"]


def _fail_once(workspace: Workspace, hook: Hook) -> tuple[Config, str]:
    """Return a config whose webhook failed at T0 + 1 h holding 30 papers, and its name."""
    settings = _setup(workspace, f'  - to: "{hook.url}"\n')
    config = _config(workspace, settings)
    _history(config, T0)
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    hook.status = 503
    down = _run(config, T0 + timedelta(hours=1))
    [shown] = down.alerts_failed
    assert down.exit_code == 4
    hook.status = 200  # the server is fixed
    return config, shown


def test_a_destination_waiting_out_its_backoff_says_so_and_is_no_new_failure(
    workspace: Workspace, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    config, shown = _fail_once(workspace, hook)
    waiting = _run(config, T0 + timedelta(minutes=70))  # backing off: not tried
    assert hook.bodies == []
    assert waiting.alerts_failed == {}  # nothing was tried: nothing failed now
    assert waiting.exit_code == 0  # cron mails no stale failure
    why = "Failed to send JSON POST notification: Servers are overloaded., error=503."
    assert waiting.alerts_waiting == {shown: f"waiting until 11:00 UTC after a failed try ({why})"}
    print_summary(waiting, config, quiet=True, offline=False)
    assert capsys.readouterr().err == ""  # a wait is said once, by the run that failed
    print_summary(waiting, config, quiet=False, offline=False)
    assert (
        f"alert waiting: {shown}: waiting until 11:00 UTC after a failed try ({why});"
        " 30 papers pending"
    ) in capsys.readouterr().err
    tomorrow = _run(config, T0 + timedelta(days=1, minutes=-30))  # the try is due: it is sent
    assert tomorrow.alerts_sent == {shown: 30}


def test_send_now_sends_what_is_pending_backoff_or_not(workspace: Workspace, hook: Hook) -> None:
    config, shown = _fail_once(workspace, hook)
    [outcome] = send_pending(config, now=lambda: T0 + timedelta(minutes=70))
    assert (outcome.shown, outcome.papers, outcome.ok) == (shown, 30, True)
    assert len(hook.bodies) == 1
    assert "30 new papers" in str(hook.bodies[0]["title"])
    assert _run(config, T0 + timedelta(hours=3)).alerts_sent == {}  # sent once


def test_send_now_on_the_command_line_reports_each_destination(
    workspace: Workspace, hook: Hook, feeds_cli: Cli
) -> None:
    settings = _setup(workspace, f'  - to: "{hook.url}"\n')
    config = _config(workspace, settings)
    _history(config, T0)
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    hook.status = 503
    _run(config, T0 + timedelta(hours=1))
    hook.status = 200
    args = ["alerts", "--settings", str(settings), "--state", str(workspace.state),
            "--subscriptions", str(workspace.subscriptions)]  # fmt: skip
    r = feeds_cli(workspace.root, *args, "--send-now", now=T0 + timedelta(minutes=70))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == f"webhook (json) at 127.0.0.1:{hook_port(hook)}: sent 30 papers\n"
    again = feeds_cli(workspace.root, *args, "--send-now", now=T0 + timedelta(minutes=71))
    assert again.stdout.endswith(": nothing pending\n"), again.stdout
    assert len(hook.bodies) == 1
    hook.status = 500
    shutil.copy(workspace.inbox / SEEDS[1].name, workspace.inbox / "again.txt")
    (workspace.inbox / "later.txt").write_text(
        "ICML\n\nA Later Paper on Speculative Decoding\n\n推测解码的后续论文\n\n"
        "Ann Bell, Bo Chen\n\nAI总结 又一篇推测解码论文。\n",
        encoding="utf-8",
    )
    _run(config, T0 + timedelta(hours=2))  # fails: 500
    failing = feeds_cli(workspace.root, *args, "--send-now", now=T0 + timedelta(hours=2, minutes=5))
    assert failing.returncode == 4
    assert ": failed: " in failing.stdout
    assert "(1 paper pending)" in failing.stdout


def test_a_test_message_that_arrives_ends_the_wait(
    workspace: Workspace, hook: Hook, feeds_cli: Cli
) -> None:
    config, shown = _fail_once(workspace, hook)
    settings = str(config.settings.alerts[0].file)
    r = feeds_cli(
        workspace.root, "alerts", "--test", "--settings", settings,
        "--state", str(workspace.state), "--subscriptions", str(workspace.subscriptions),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(hook.bodies) == 1  # the test message
    back = _run(config, T0 + timedelta(minutes=70))  # within the backoff: sent all the same
    assert back.alerts_sent == {shown: 30}
    assert back.alerts_waiting == {}


def test_alerts_test_sends_each_destination_a_test_message(
    workspace: Workspace, mail: MailServer, hook: Hook, feeds_cli: Cli
) -> None:
    settings = _setup(workspace, f'  - to: "{_mail_url(mail)}"\n  - to: "{hook.url}"\n')
    r = feeds_cli(workspace.root, "alerts", "--test", "--settings", str(settings),
                  "--subscriptions", str(workspace.subscriptions))  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"email via 127.0.0.1:{mail.port}: sent" in r.stdout
    assert "webhook (json) at 127.0.0.1" in r.stdout
    assert len(mail.messages) == 1
    assert "test message" in str(mail.messages[0]["Subject"])
    assert len(hook.bodies) == 1


def test_an_alert_naming_an_unknown_topic_is_a_config_error(workspace: Workspace) -> None:
    settings = _setup(
        workspace, '  - to: "ntfy://ntfy.example.org/papers"\n    topics: [halucination]\n'
    )
    with pytest.raises(ConfigError, match=r"no topic 'halucination'.*did you mean 'hallucination'"):
        load(workspace.subscriptions, settings)


def test_a_variable_gone_since_the_config_was_cached_stops_only_its_destination(
    workspace: Workspace, feeds_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOPIC_VAR", "papers")
    settings = _setup(workspace, '  - to: "ntfy://ntfy.example.org/${TOPIC_VAR}"\n')
    args = ["--subscriptions", str(workspace.subscriptions), "--settings", str(settings)]
    assert feeds_cli(workspace.root, "check", *args).returncode == 0  # cached now
    monkeypatch.delenv("TOPIC_VAR")
    r = feeds_cli(workspace.root, "run", "--quiet", *workspace.cli_args()[2:], *args)
    assert r.returncode == 0, r.stderr  # offline: no alert is sent, none fails
    assert (workspace.public / "feeds" / "all.atom.xml").is_file()
