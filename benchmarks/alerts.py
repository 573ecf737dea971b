"""Measure what alerts add to a cycle: 1,000 topics, 50 destinations, one run.

    python benchmarks/alerts.py [--papers 20000] [--topics 1000] [--destinations 50]

A state is built from synthetic digests (benchmarks/generate.py) with the topics; then a
new digest arrives, twice, in two copies of that state: once without alerts (the baseline
measured in this run) and once with `--destinations` JSON webhooks on a local HTTP server,
each following 20 topics (every one following some). Printed: both cycles' wall time,
the time of the alerts step alone, its parts (preparing the messages from the state,
delivering them through Apprise), and the messages received. Only ratios mean anything on
another machine; nothing here is a pass or fail.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import write_digests, write_topics  # noqa: E402
from feeds import pipeline  # noqa: E402
from feeds.alerts import send as alerts_send  # noqa: E402
from feeds.config import Config, load  # noqa: E402
from feeds.settings import AlertDestination  # noqa: E402

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


RECEIVED: list[int] = []  # the size of each message the webhook received


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        RECEIVED.append(len(body))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: object) -> None:
        pass


def _config(work: Path, subscriptions: Path, alerts: tuple[AlertDestination, ...]) -> Config:
    config = load(subscriptions, None)
    links = replace(config.settings.links, check=False)
    s = replace(config.settings, inbox=(work / "inbox",), public_dir=work / "public",
                state=work / "state.sqlite3", links=links, alerts=alerts)  # fmt: skip
    return replace(config, settings=s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=20_000)
    ap.add_argument("--topics", type=int, default=1_000)
    ap.add_argument("--destinations", type=int, default=50)
    ap.add_argument("--new", type=int, default=500, help="papers in the new digest")
    args = ap.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    tmp = Path(tempfile.mkdtemp(prefix="paperfeeds-bench-alerts-"))
    try:
        digests = tmp / "digests"
        files = write_digests(digests, args.papers + args.new, per_file=args.new)
        subscriptions = write_topics(tmp / "subscriptions.yaml", args.topics, narrow=True)
        topic_ids = [t.id for t in load(subscriptions, None).topics]
        base = tmp / "base"
        (base / "inbox").mkdir(parents=True)
        for f in files[:-1]:
            shutil.copy(f, base / "inbox" / f.name)
        t = time.perf_counter()
        pipeline.run(_config(base, subscriptions, ()), now=lambda: T0)
        print(f"state: {args.papers:,} papers, {args.topics:,} topics, built in "
              f"{time.perf_counter() - t:.1f}s")  # fmt: skip
        destinations = tuple(
            AlertDestination(
                f"json://127.0.0.1:{port}/hook/{n}",
                tuple(topic_ids[(n * 20 + k) % len(topic_ids)] for k in range(20)),
            )
            for n in range(args.destinations)
        )
        timings: dict[str, float] = {}
        real_send = alerts_send.send_alerts

        def timed_send(*a: object, **kw: object) -> tuple[alerts_send.Outcome, ...]:
            t = time.perf_counter()
            out = real_send(*a, **kw)  # type: ignore[arg-type]
            timings["alerts"] = time.perf_counter() - t
            return out

        alerts_send.send_alerts = timed_send  # type: ignore[assignment]
        results: dict[str, list[float]] = {"without alerts": [], "with alerts": []}
        steps: list[float] = []
        # Alternately, three times each: the machine's load drifts, a pair does not.
        for trial in range(3):
            for name, alerts in (("without alerts", ()), ("with alerts", destinations)):
                work = tmp / f"{name.replace(' ', '-')}-{trial}"
                shutil.copytree(base, work)
                config = _config(work, subscriptions, alerts)
                # The same cycles in both: the destinations start at the first (no flood).
                pipeline.run(config, now=lambda: T0 + timedelta(minutes=1))
                shutil.copy(files[-1], work / "inbox" / files[-1].name)
                RECEIVED.clear()
                t = time.perf_counter()
                summary = pipeline.run(config, now=lambda: T0 + timedelta(hours=1))
                results[name].append(time.perf_counter() - t)
                shutil.rmtree(work)
                if alerts:
                    steps.append(timings["alerts"])
        sent = sum(summary.alerts_sent.values())
        kb = sum(RECEIVED) / 1e3
        print(f"  {len(RECEIVED)} messages received ({kb:.0f} kB), announcing {sent:,}"
              f" papers in all; failed: {len(summary.alerts_failed)}")  # fmt: skip
        base_time = sorted(results["without alerts"])[1]
        with_time = sorted(results["with alerts"])[1]
        timings["alerts"] = sorted(steps)[1]
        print(f"new {args.new}-paper digest, without alerts: {base_time * 1000:,.0f} ms"
              " (baseline, median of 3)")  # fmt: skip
        ratio = with_time / base_time
        print(f"new {args.new}-paper digest, with {args.destinations} destinations: "
              f"{with_time * 1000:,.0f} ms (x{ratio:.2f} the baseline)")  # fmt: skip
        print(f"  the alerts step alone: {timings['alerts'] * 1000:,.0f} ms "
              f"({timings['alerts'] * 1000 / args.destinations:.1f} ms a destination, "
              f"{alerts_send.SENDERS} at a time)")  # fmt: skip
        numbers = {"baseline_ms": base_time, "with_ms": with_time, "alerts_ms": timings["alerts"]}
        print(json.dumps({k: round(v * 1000) for k, v in numbers.items()}))
    finally:
        server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
