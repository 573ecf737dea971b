"""The validated configuration, and the matcher built from it, are cached under what they
are made from."""

from __future__ import annotations

from pathlib import Path

import pytest

from feeds import cache as config_module
from feeds.cache import cache_dir
from feeds.config import Criteria, load
from feeds.config import read as configfile
from feeds.errors import ConfigError
from feeds.match import fast as match
from feeds.match.cache import cached_matcher
from feeds.model import Paper

TOPICS = """\
topics:
  - id: decoding
    title: Speculative decoding
    any: [speculative decoding]
"""


def _refuse(*_args: object) -> None:
    raise AssertionError("the files were read again")


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subscriptions.yaml").write_text(TOPICS)
    (tmp_path / "settings.yaml").write_text("site:\n  title: Lab papers\n")
    return tmp_path


def test_an_unchanged_config_is_answered_from_the_cache(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load(files / "subscriptions.yaml", files / "settings.yaml")
    assert len(list(cache_dir().glob("config-*.pickle"))) == 1
    monkeypatch.setattr(configfile, "read_subscriptions", _refuse)
    monkeypatch.setattr(configfile, "read_settings", _refuse)
    again = load(files / "subscriptions.yaml", files / "settings.yaml")
    assert again == first
    assert again.settings.site_title == "Lab papers"


def test_any_edit_reads_the_files_again(files: Path) -> None:
    load(files / "subscriptions.yaml", files / "settings.yaml")
    (files / "subscriptions.yaml").write_text(TOPICS.replace("Speculative", "Fast"))
    (files / "settings.yaml").write_text("site:\n  title: Other\n")
    config = load(files / "subscriptions.yaml", files / "settings.yaml")
    assert config.topics[0].title == "Fast decoding"
    assert config.settings.site_title == "Other"
    # Still one cache file for this place: edits overwrite it.
    assert len(list(cache_dir().glob("config-*.pickle"))) == 1


def test_an_error_is_reported_every_time_and_never_cached(files: Path) -> None:
    load(files / "subscriptions.yaml", None)
    (files / "subscriptions.yaml").write_text("topics:\n  - id: Bad Id\n    title: x\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"subscriptions.yaml:2: topic id .Bad Id."):
            load(files / "subscriptions.yaml", None)


def test_a_damaged_cache_file_is_a_miss(files: Path) -> None:
    load(files / "subscriptions.yaml", None)
    (cached,) = cache_dir().glob("config-*.pickle")
    cached.write_bytes(b"\x80\x05garbage")
    assert load(files / "subscriptions.yaml", None).topics[0].id == "decoding"


def test_changed_reading_code_is_a_miss(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load(files / "subscriptions.yaml", None)
    monkeypatch.setattr(config_module, "CACHE_FORMAT", config_module.CACHE_FORMAT + 1)
    calls: list[Path] = []
    real = configfile.read_subscriptions
    monkeypatch.setattr(configfile, "read_subscriptions", lambda p: calls.append(p) or real(p))
    load(files / "subscriptions.yaml", None)
    assert calls == [files / "subscriptions.yaml"]


def test_an_unwritable_cache_folder_only_costs_time(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (files / "blocked").write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(files / "blocked"))
    assert load(files / "subscriptions.yaml", None).topics[0].id == "decoding"
    assert load(files / "subscriptions.yaml", None).topics[0].id == "decoding"


def test_a_missing_file_is_still_a_clear_error(files: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load(files / "nope.yaml", None)


def _topics(*terms: str) -> list[tuple[str, Criteria]]:
    return [(f"t{n}", Criteria(any=(term,))) for n, term in enumerate(terms)]


def test_a_built_matcher_is_reused_while_the_topics_stay_the_same(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paper = Paper(paper_id="p", title="Speculative decoding for diffusion models")
    built = cached_matcher(_topics("speculative decoding", "diffusion"))
    assert len(list(cache_dir().glob("matcher-*.pickle"))) == 1

    def refuse(*_args: object) -> None:
        raise AssertionError("the matcher was built again")

    monkeypatch.setattr(match.Matcher, "_build", refuse)
    loaded = cached_matcher(_topics("speculative decoding", "diffusion"))
    assert loaded is not built
    assert loaded.match(paper) == built.match(paper) != []

    monkeypatch.undo()  # other topics, a damaged file: built again, and right
    monkeypatch.setenv("XDG_CACHE_HOME", str(files / "cache"))
    other = cached_matcher(_topics("diffusion"))
    assert [t for t, _h in other.match(paper)] == ["t0"]
    for path in cache_dir().glob("matcher-*.pickle"):
        path.write_bytes(path.read_bytes()[:100])
    again = cached_matcher(_topics("speculative decoding", "diffusion"))
    assert again.match(paper) == built.match(paper)


def test_compiled_templates_are_kept_and_a_bad_cache_is_only_a_miss(files: Path) -> None:
    import jinja2

    from feeds.publish import pages

    def compiled() -> bool:
        """Whether loading a template compiles it, with a fresh environment."""
        pages._env.cache_clear()
        called = []
        real = jinja2.Environment.compile
        with pytest.MonkeyPatch.context() as m:
            m.setattr(
                jinja2.Environment, "compile", lambda *a, **k: called.append(1) or real(*a, **k)
            )
            pages._env().get_template("topic.html")
        return bool(called)

    try:
        assert compiled()  # the first time
        saved = list((cache_dir() / "templates").iterdir())
        assert saved
        assert not compiled()  # then loaded
        for path in saved:  # damaged: Jinja's header intact, the rest not
            path.write_bytes(jinja2.bccache.bc_magic + b"\x80garbage")
        assert compiled()
        assert not compiled()  # and saved again
        (files / "blocked").write_text("a file where the cache folder would go")
        with pytest.MonkeyPatch.context() as m:
            m.setenv("XDG_CACHE_HOME", str(files / "blocked"))
            assert compiled()  # no cache, and no error
            assert compiled()
    finally:
        pages._env.cache_clear()


def test_the_code_stamp_covers_every_module_of_the_package() -> None:
    """Derived from the package, not a hand-kept list: the reference matcher, the config
    reader and any module added later are in it, and a moved file cannot crash a run."""
    package = Path(config_module.__file__).parent
    names = {name for name, _mtime, _size in config_module.code_stamp()}
    assert {"match/reference.py", "config/read.py", "model.py"} <= names
    assert names == {str(p.relative_to(package)) for p in package.rglob("*.py")}
