"""The cron example of contrib/ runs as cron would, with no shell variables: the secrets of
alert URLs come from its env file, and a destination finds its `${NAME}`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, Workspace


def _cron_command() -> str:
    """Return the command of contrib/crontab's job (the line after its five time fields)."""
    [line] = [x for x in (ROOT / "contrib" / "crontab").read_text().splitlines()
              if re.match(r"^[*\d]", x)]  # fmt: skip
    return line.split(None, 5)[5]


def test_the_cron_line_reads_the_secrets_from_its_env_file(
    workspace: Workspace, tmp_path: Path
) -> None:
    settings = workspace.root / "config" / "settings.yaml"
    settings.write_text(
        f"inbox: [{workspace.inbox}]\nlinks:\n  check: false\n"
        'alerts:\n  - to: "json://127.0.0.1:9/hook?+X-Token=${HOOK_TOKEN}"\n',
        encoding="utf-8",
    )
    env_file = tmp_path / "paperfeeds.env"
    env_file.write_text("HOOK_TOKEN='a secret with spaces'\n", encoding="utf-8")
    command = (
        _cron_command()
        .replace("/srv/paperfeeds", str(workspace.root))
        .replace("/etc/paperfeeds.env", str(env_file))
        .replace(".venv/bin/feeds", f"{sys.executable} -m feeds")
    )
    cron_env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    r = subprocess.run(["/bin/sh", "-c", command], env=cron_env, capture_output=True,
                       text=True, timeout=120, check=False)  # fmt: skip
    # The destination is tried with its secret (and nothing listens at 127.0.0.1:9): it
    # fails as a delivery, not as a variable that is not set.
    assert r.returncode == 4, r.stderr
    assert "alert failed: webhook (json) at 127.0.0.1:9" in r.stderr
    assert "not set" not in r.stderr
    env_file.write_text("", encoding="utf-8")
    without = subprocess.run(["/bin/sh", "-c", command], env=cron_env, capture_output=True,
                             text=True, timeout=120, check=False)  # fmt: skip
    assert without.returncode == 4
    assert "environment variable HOOK_TOKEN is not set" in without.stderr


def test_the_systemd_units_load_an_env_file() -> None:
    for unit in ("paperfeeds.service", "paperfeeds-watch.service"):
        text = (ROOT / "contrib" / "systemd" / unit).read_text()
        assert "\nEnvironmentFile=/etc/paperfeeds.env\n" in text, unit
