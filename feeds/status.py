"""What `feeds status` reports, gathered from the state (read-only)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from feeds.config import Config
from feeds.errors import StateError
from feeds.links.policy import LOOKUPS_KEY, NETWORK_KEY, Outage, say_outage
from feeds.model import SourceState
from feeds.say import count
from feeds.sources import stale_reason
from feeds.state import Store


def gather(config: Config, *, verbose: bool = False) -> dict[str, Any]:
    """Return the status report as plain data (also what --json prints).

    `verbose`: also every link in error, with its host and the checker's own note."""
    path = config.settings.state
    if not path.exists():
        raise StateError("no state yet: run `feeds run` first", file=str(path))
    store = Store(path, datetime.now(UTC))
    try:
        members = store.member_counts()
        last = store.last_run()
        extra = {"links_in_error": _links_in_error(store)} if verbose else {}
        return {
            "state": str(path),
            **store.counts(),
            "rejected_digests": [
                {"name": r.name, "seen": r.seen.isoformat(), "reason": r.reason}
                for r in store.rejected()
            ],
            "skipped_records": [str(d) for d in store.diagnostics()],
            "topics": {t.id: members.get(t.id, 0) for t in config.topics},
            "link_health": store.link_health(datetime.now(UTC)),
            "lookups": store.lookup_counts(),
            "network": _outage(store.meta(NETWORK_KEY)),
            "lookup_apis": _outage(store.meta(LOOKUPS_KEY)),
            **extra,
            "sources": [_source(src, config) for src in store.sources()],
            "last_run": None if last is None else {
                "started": last.started.isoformat(),
                "finished": last.finished.isoformat() if last.finished else None,
                "summary": last.summary,
            },
        }  # fmt: skip
    finally:
        store.close()


def _outage(text: str | None) -> dict[str, Any] | None:
    """Return what the state keeps of an outage (see links.policy), or None if none was seen."""
    outage = Outage.from_text(text)
    if outage.since is None:
        return None
    return {"down": outage.down, **json.loads(outage.to_text()), "said": say_outage(outage)}


def _links_in_error(store: Store) -> list[dict[str, Any]]:
    """Return the links in error, with what the checker said, by host."""
    # Read-only, and only for --verbose; a Store method (`url_checks(status)`) would be the
    # place for this query.
    rows = store.db.execute(
        "SELECT url, note, http_status, checked, due, failures FROM url_checks"
        " WHERE status = 'error' ORDER BY url"
    )
    found = [
        {"url": url, "host": urlsplit(url).hostname or "", "note": note,
         "http_status": code, "checked": checked, "due": due, "failures": failures}
        for url, note, code, checked, due, failures in rows
    ]  # fmt: skip
    return sorted(found, key=lambda x: (x["host"], x["url"]))


def _source(src: SourceState, config: Config) -> dict[str, Any]:
    stale = stale_reason(src, datetime.now(UTC), timedelta(seconds=config.settings.stale_after))
    return {
        "url": src.url,
        "last_ok": src.last_ok.isoformat() if src.last_ok else None,
        "last_change": src.last_change.isoformat() if src.last_change else None,
        "failures": src.failures,
        "error": src.error,
        "stale": stale,
    }


def render_text(report: dict[str, Any]) -> str:
    lines = [
        f"state: {report['state']}",
        f"digests: {report['digests']} ingested, {report['rejected']} rejected",
        f"papers: {report['papers']}",
    ]
    for r in report["rejected_digests"]:
        lines.append(f"  rejected {r['name']} ({r['seen']}): {r['reason']}")
    if report["skipped_records"]:
        lines.append(f"skipped records: {len(report['skipped_records'])}")
        lines.extend(f"  {d}" for d in report["skipped_records"])
    lines.append("topics:")
    width = max((len(t) for t in report["topics"]), default=0)
    for topic_id, n in report["topics"].items():
        lines.append(f"  {topic_id:<{width}}  {count(n, 'paper')}")
    health = ", ".join(f"{n} {s}" for s, n in report["link_health"].items()) or "none"
    lines.append(f"links: {report['links']} ({health})")
    if report["network"]:
        lines.append(f"network: {report['network']['said']}")
    if report["lookups"]:
        looked = ", ".join(f"{n} {k}" for k, n in report["lookups"].items())
        lines.append(f"lookups: {looked}")
    if report["lookup_apis"] and report["lookup_apis"]["down"]:
        lines.append(f"lookup APIs: {report['lookup_apis']['said']}")
    if "links_in_error" in report:
        lines.append(f"links in error: {len(report['links_in_error'])}")
        for x in report["links_in_error"]:
            code = f" (HTTP {x['http_status']})" if x["http_status"] else ""
            lines.append(f"  {x['host']}: {x['url']}{code}")
            lines.append(f"      {x['note']}; checked {x['checked']}, next {x['due']}")
    for src in report["sources"]:
        health = f"stale: {src['stale']}" if src["stale"] else f"ok, changed {src['last_change']}"
        lines.append(f"source {src['url']}: {health}")
    last = report["last_run"]
    if last:
        s = last["summary"]
        if not last["finished"]:
            took = "did not finish"
        elif "seconds" in s:
            took = f"took {s['seconds']:.1f} s"
        else:  # a run from before durations were kept
            took = f"finished {last['finished']}"
        lines.append(
            f"last run: {last['started']}, {took}; {s.get('digests', 0)} new digests, "
            f"{s.get('papers_new', 0)} new papers, exit {s.get('exit_code', '?')}"
        )
    return "\n".join(lines)
