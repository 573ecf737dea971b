"""What `feeds status` (and `feeds alerts`) report, gathered from the state (read-only)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from feeds.clock import utcnow
from feeds.errors import StateError
from feeds.links.policy import LOOKUPS_KEY, NETWORK_KEY, Outage, say_outage
from feeds.model import SourceState
from feeds.settings import AlertDestination, Config
from feeds.sources.inbox import shown
from feeds.sources.remote import failing_since, stale_reason
from feeds.state import Store, exists, place_shown
from feeds.state.lock import holder
from feeds.words import count


def gather(config: Config, *, verbose: bool = False) -> dict[str, Any]:
    """Return the status report as plain data (also what --json prints).

    `verbose`: also every link in error, with its host and the checker's own note."""
    path = config.settings.database
    if not exists(path):
        raise StateError("no state yet: run `feeds run` first", file=str(path))
    store = Store(path, utcnow())
    try:
        members = store.member_counts()
        last = store.last_run()
        extra = {"links_in_error": _links_in_error(store)} if verbose else {}
        rejected = store.rejected(_present)  # not those of files fixed or deleted since
        return {
            "state": place_shown(path),
            "lock": holder(path),  # who is publishing now (None: nobody)
            **store.counts(),
            "rejected": len(rejected),
            "rejected_digests": [
                # shown() again: a state written before names were escaped holds them raw
                {"name": shown(r.name), "seen": r.seen.isoformat(), "reason": r.reason}
                for r in rejected
            ],
            "skipped_records": [str(d) for d in store.diagnostics()],
            "topics": {t.id: members.get(t.id, 0) for t in config.topics},
            "link_health": store.link_health(utcnow()),
            "lookups": store.lookup_counts(),
            "network": _outage(store.meta(NETWORK_KEY)),
            "lookup_apis": _outage(store.meta(LOOKUPS_KEY)),
            **extra,
            "sources": [
                _source(src, config, failing_since(store, src.url)) for src in store.sources()
            ],
            "alerts": _alerts(config, store),
            "last_run": None if last is None else {
                "started": last.started.isoformat(),
                "finished": last.finished.isoformat() if last.finished else None,
                "summary": last.summary,
            },
        }  # fmt: skip
    finally:
        store.close()


def _present(path: str | bytes) -> bool:
    """Return False for an inbox file known to be deleted: gone from a folder that is
    there (`status` run from another folder than the runs finds neither: not deleted)."""
    return os.path.exists(path) or not os.path.isdir(os.path.dirname(path) or ".")


def alert_report(config: Config) -> list[dict[str, Any]]:
    """Return each alert destination as `feeds alerts` lists it (see _alerts); before the
    first run, with nothing sent yet (the state, made by that run, is not made here)."""
    path = config.settings.database
    if not exists(path):
        return _alerts(config, None)
    store = Store(path, utcnow())
    try:
        return _alerts(config, store)
    finally:
        store.close()


def _alerts(config: Config, store: Store | None) -> list[dict[str, Any]]:
    """Return each alert destination as status shows it: service and host (never the URL),
    last sent, papers pending, the last error."""
    records = {r.key: r for r in store.alert_records()} if store is not None else {}
    topics = [t.id for t in config.topics]
    out = []
    for dest in config.settings.alerts:
        record = records.get(dest.key)
        if record is None or store is None:  # not used by a run yet: it starts when it is
            out.append({"destination": _shown(dest), "last_sent": None, "pending": 0,
                        "error": None, "next_try": None})  # fmt: skip
            continue
        chosen = [t for t in (dest.topics if dest.topics is not None else topics) if t in topics]
        # Up to no time: a cycle's time may be a second ahead of the clock (two runs
        # within one second), and what it added is pending all the same.
        _per_topic, pending = store.alert_counts(chosen, record.watermark)
        out.append({
            "destination": record.shown,
            "last_sent": record.last_sent.isoformat() if record.last_sent else None,
            "pending": pending,
            "error": record.error if record.failures else None,
            "next_try": record.next_try.isoformat() if record.failures and record.next_try
            else None,
        })  # fmt: skip
    return out


def _shown(dest: AlertDestination) -> str:
    from feeds.alerts.deliver import describe
    from feeds.alerts.env import AlertsConfigError, expand

    try:
        return describe(expand(dest.to, os.environ))
    except AlertsConfigError as e:
        return f"the alert at {dest.file}:{dest.line} ({e.message})"


def alert_line(d: dict[str, Any]) -> str:
    """Return a destination of the report as a line: where, last sent, pending, trouble."""
    sent = f"last sent {d['last_sent']}" if d["last_sent"] else "nothing sent yet"
    line = f"alerts to {d['destination']}: {sent}, {count(d['pending'], 'paper')} pending"
    if d["error"]:
        line += f"; failing: {d['error']} (next try {d['next_try']})"
    return line


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


def _source(src: SourceState, config: Config, since: datetime | None) -> dict[str, Any]:
    stale_after = timedelta(seconds=config.settings.stale_after)
    stale = stale_reason(src, utcnow(), stale_after, since)
    return {
        "url": src.url,
        "last_ok": src.last_ok.isoformat() if src.last_ok else None,
        "last_change": src.last_change.isoformat() if src.last_change else None,
        "failures": src.failures,
        "error": src.error,
        "next_try": src.next_try.isoformat() if src.next_try else None,
        "stale": stale,
    }


def render_text(report: dict[str, Any]) -> str:
    lines = [
        f"state: {report['state']}",
        f"lock: held by {report['lock']}"
        if report["lock"]
        else "lock: free (no run is publishing)",
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
        if src["stale"]:
            health = f"stale: {src['stale']}"
        else:
            health = f"ok, last fetched {src['last_ok']}, new papers {src['last_change']}"
        if src["next_try"]:
            health += f"; next try {src['next_try']}"
        lines.append(f"source {src['url']}: {health}")
    last = report["last_run"]
    if last:
        lines.extend(_last_run(last, running=report["lock"] is not None))
    lines.extend(alert_line(d) for d in report.get("alerts", []))
    return "\n".join(lines)


def _last_run(last: dict[str, Any], *, running: bool) -> list[str]:
    """Return how the last run ended, in words: its exit status, what it did, and the
    error it failed with."""
    s = last["summary"]
    exit_code = s.get("exit_code", "?")
    if s.get("error"):
        took = f"failed while {s.get('failed_while', 'running')} after {s['seconds']:.1f} s"
    elif not last["finished"]:
        # No record of its end: it runs now, or it was killed (SIGKILL, a power cut).
        took = "running now" if running else "did not finish (killed, or its machine stopped)"
        exit_code = "none" if running else "unknown"
    elif "seconds" in s:
        took = f"took {s['seconds']:.1f} s"
    else:  # a run from before durations were kept
        took = f"finished {last['finished']}"
    did = (
        f"{count(s.get('digests', 0), 'new digest')}, {count(s.get('papers_new', 0), 'new paper')}"
    )
    lines = [f"last run: {last['started']}, {took}; {did}, exit {exit_code}"]
    if s.get("error"):
        lines.append(f"  error: {s['error']}")
    return lines
