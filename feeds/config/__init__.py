"""The configuration, and loading it (from the cache when the files are unchanged:
validating a thousand topics costs more than the rest of a run that has nothing to do).
Reading and validating the YAML files is feeds.config.read's work; the types are
feeds.settings's and feeds.topics's."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from feeds.cache import Stamp, cached
from feeds.settings import Config, LinkSettings, Settings
from feeds.topics import DEFAULT_FIELDS, FIELDS, Criteria, Topic

__all__ = ["DEFAULT_FIELDS", "FIELDS", "Config", "Criteria", "LinkSettings", "Settings", "Topic",
           "load", "load_settings", "load_subscriptions", "warnings"]  # fmt: skip


def load_settings(path: Path | None, config_files: tuple[Path, ...] = ()) -> Settings:
    """Return the settings from a file, defaults for what it leaves out (or if path is None).

    `config_files`: the other config files, whose folders public/ must stay out of.
    """
    from feeds.config.read import read_settings

    return read_settings(path, config_files)


def load_subscriptions(path: Path) -> tuple[Topic, ...]:
    """Return the topics of a subscriptions file, or raise ConfigError."""
    from feeds.config.read import read_subscriptions

    return read_subscriptions(path)


def load(subscriptions: Path, settings: Path | None) -> Config:
    """Return the whole validated configuration.

    The result is cached (in the user's cache folder) under the exact bytes of both files,
    the working folder and the code that reads them, and the topics' library files as they
    were; any difference reads the files again.
    """

    def build() -> Config:
        from feeds.config.read import check_alert_topics

        config = Config(
            settings=load_settings(settings, (subscriptions,)),
            topics=load_subscriptions(subscriptions),
            subscriptions_path=subscriptions,
        )
        check_alert_topics(config.settings, (t.id for t in config.topics))
        for topic in config.topics:  # computed now, so that the cache holds them
            _ = topic.fingerprint, topic.looks
        return config

    def libraries(config: Config) -> list[tuple[Path, Stamp | None]]:
        return [(Path(lib.file), lib.stamp) for t in config.topics for lib in t.criteria.library]

    return cached("config", (subscriptions, settings), build, Config, libraries)


def warnings(config: Config, environ: Mapping[str, str]) -> list[str]:
    """Return what `feeds check` warns of, as `file:line: warning: ...`: what is valid but
    likely not meant (a term holding a comma, alerts linking to localhost), and an alert's
    `${NAME}` that is not set in `environ` (a run would skip that destination; cron may set
    it where this does not)."""
    from feeds.alerts.env import unset_variables
    from feeds.alerts.send import links_nobody_opens

    found = [f"{w.file}:{w.line}: warning: {w.message}" for t in config.topics for w in t.warnings]
    if not config.topics:  # valid, and a run would publish the all-papers feed alone
        found.append(f"{config.subscriptions_path}: warning: no topics: add one (see the"
                     " README's Topics); a run publishes only the all-papers feed")  # fmt: skip
    for e in unset_variables(config.settings.alerts, environ):
        found.append(f"{e.file}:{e.line}: warning: {e.message}")
    unopened = links_nobody_opens(config)
    if unopened:  # said where the alerts are, the first of them
        first = config.settings.alerts[0]
        found.append(f"{first.file}:{first.line}: warning: {unopened}")
    return found
