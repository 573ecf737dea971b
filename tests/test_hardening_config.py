"""Config that could hang, crash or destroy is refused at load with `file:line` and exit 2.

- `/regex/` terms run on RE2 (linear time): a catastrophic expression finishes, and what RE2
  cannot run (backreferences, lookarounds...) is a config error, with RE2's reason.
- Numbers and durations are bounded (no OverflowError later), and so is the nesting of
  YAML values (no RecursionError).
- public/ may not overlap an inbox folder or a config file's folder, nor hold the state.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import re2
from hypothesis import example, given, settings
from hypothesis import strategies as st

from feeds.config import FIELDS, Criteria, Settings, Topic, load, load_settings, load_subscriptions
from feeds.config import yamlfile as yamlload
from feeds.config.read import read_settings
from feeds.errors import ConfigError
from feeds.match.cache import cached_matcher
from feeds.match.fast import Matcher
from feeds.match.fields import paper_fields
from feeds.match.reference import TopicMatcher, match_papers
from feeds.match.report import check_topics
from feeds.match.terms import IGNORECASE_ASCII_TWINS as _IGNORECASE_ASCII_TWINS
from feeds.match.terms import compile_term, normalize, required_literal
from feeds.model import Institution, Paper
from feeds.settings import check_places
from tests.conftest import ROOT, make_workspace, run_feeds
from tests.test_config import TOPIC_HEAD, expect_error, write, y
from tests.test_match_equivalence import seed_papers

# --- 1. regular expressions: linear time, validated by the engine that runs them ------------

TITLE = "Speculative decoding with draft models for efficient large language model inference"
PATHOLOGICAL = [
    pytest.param("/([a-z]+ ?)*:/", id="words-then-colon"),
    pytest.param("/(a+)+$/", id="nested-plus"),
    pytest.param("/(x+x+)+y/", id="overlapping-plus"),
    pytest.param("/^(([a-z])+.)+[A-Z]([a-z])+$/", id="owasp"),
]


def _long_papers() -> list[Paper]:
    """Ordinary titles and summaries, long enough for a backtracking engine to never end."""
    return [
        Paper(paper_id="p1", title=TITLE, summary=" ".join([TITLE] * 4)),
        Paper(paper_id="p2", title=f"Scaling {'a' * 40}! {'x' * 40}", summary=TITLE.lower()),
        Paper(
            paper_id="p3",
            title=TITLE.upper(),
            institutions=(Institution("Aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"),),
        ),
    ]


@pytest.mark.parametrize("term", PATHOLOGICAL)
def test_a_catastrophic_regex_finishes_in_every_matcher(term: str) -> None:
    """Python's re would backtrack for ages on each of these; RE2 runs in linear time. The
    test just runs them: the reference matcher, the fast one and `feeds check`'s report."""
    papers = _long_papers()
    topics = [
        ("any", Criteria(any=(term,), fields=FIELDS)),
        ("none", Criteria(any=("speculative",), none=(term,), fields=FIELDS)),
        ("institutions", Criteria(institutions=(term,))),
    ]
    slow = list(match_papers([(tid, TopicMatcher(c)) for tid, c in topics], papers))
    matcher = Matcher(topics)
    fast = [(tid, p.paper_id, hits) for p in papers for tid, hits in matcher.match(p)]
    assert fast == slow
    report = check_topics([Topic(tid, tid, c) for tid, c in topics], iter(papers))
    assert report[0] == len(papers)


UNSUPPORTED = [
    pytest.param(r"/(a)\1/", "invalid escape sequence", id="backreference"),
    pytest.param("/(?=x)/", "invalid perl operator", id="lookahead"),
    pytest.param("/(?<!x)y/", "invalid perl operator", id="lookbehind"),
    pytest.param("/a++/", "bad repetition operator", id="possessive"),
    pytest.param("/(?P<n>a)(?P=n)/", "invalid", id="named-backreference"),
]


@pytest.mark.parametrize(("term", "reason"), UNSUPPORTED)
def test_what_re2_cannot_run_is_a_config_error_with_its_reason(
    tmp_path: Path, term: str, reason: str
) -> None:
    text = y(*TOPIC_HEAD[:3], "    any:", "      - fine", f"      - '{term}'")
    e = expect_error(load_subscriptions, write(tmp_path, text), 6, f"bad term {term!r} in any")
    assert reason in e.message
    with pytest.raises(re.error, match=reason):  # the matcher's own contract: re.error
        compile_term(term)


@pytest.mark.parametrize(("term", "reason"), UNSUPPORTED[:2])
def test_feeds_check_refuses_what_re2_cannot_run_with_file_line_and_exit_2(
    tmp_path: Path, term: str, reason: str
) -> None:
    ws = make_workspace(tmp_path)
    name = "config/regex.yaml"
    (tmp_path / name).write_text(
        y("topics:", "  - id: a", "    title: A", "    any:", "      - fine", f"      - '{term}'"),
        encoding="utf-8",
    )
    done = run_feeds(tmp_path, "check", "--subscriptions", name, "--inbox", str(ws.inbox),
                     "--public", str(ws.public), "--state", str(ws.state))  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"error: {name}:6: bad term "), done.stderr
    assert reason in first
    assert "Traceback" not in done.stderr
    assert not ws.public.exists()


# The regular expressions of the shipped config, the README, the benchmarks' forms and the
# tests: RE2 takes each for what Python's re took it for, on the seeds and on text with
# accents, full-width forms, CJK and separators (dotless ı aside: Python's re alone takes it
# for an i, which Unicode case folding does not).
SHIPPED_REGEXES = [
    "/^position:/", "/diffus(ion|e)/", "/llms?/", "/model|推理/", "/infer/", "/dec/", "/l+m/",
    "/abc/", "/^ab/", "/ab?c/", "/llm|ab/", "/Kab/", "/IAB/", "/sab/", "/a\\x00b/",
    "/ab(c|d)/", "/^$/", "/x*/", "/^diffusion/", "/decodings?/",
    "/reinforcement[- ]?(model|network)s?/",
]  # fmt: skip
ODD_TEXTS = [
    "Position: LLMs are ＬＬＭ", "ſab KAB sab", "Diffusé 扩散LLM推理 model", "a\x00b", "", "abd",
    "ÉCOLE de l'ab", "Reinforcement-Networks", "ab c", "Kelvin \u212aab",
]  # fmt: skip


def test_shipped_regexes_match_as_they_did_with_python_re() -> None:
    config_terms = [
        t
        for topic in load(ROOT / "config" / "subscriptions.yaml", None).topics
        for t in topic.criteria.any
        if t.startswith("/")
    ]
    assert config_terms  # the example config has one
    texts = [v for p in seed_papers() for v in paper_fields(p).values()]
    texts += [normalize(t) for t in ODD_TEXTS]
    for term in dict.fromkeys([*config_terms, *SHIPPED_REGEXES]):
        python = re.compile(term[1:-1], re.IGNORECASE)
        ours = compile_term(term)
        for text in texts:
            assert ours.search(text) == bool(python.search(text)), (term, text)


def test_twins_cover_what_re2_takes_for_ascii_ignoring_case() -> None:
    """The fast matcher looks for a regex's leading literal, or a twin of an ASCII letter:
    every non-ASCII character that RE2 (ignoring case) takes for ASCII must be a twin."""
    every = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF)
    options = re2.Options()
    options.case_sensitive = False
    taken = re2.compile("[a-z0-9 ]", options).findall(every)
    assert taken
    assert set(taken) <= set(_IGNORECASE_ASCII_TWINS)


_pieces = st.sampled_from(
    [*("abc", "ab", "x", "|", "(", ")", "?", "*", "+", "{2}", "[", "]", "^", "[^", "(?:"),
     *("\\|", "\\b", " ", ".", "\\Q", "\\E", "\\pL", "[[:alpha:]]", "\\z", "(?i)", "(?s)")]
)  # fmt: skip
_texts = st.lists(st.sampled_from([*"abcxyz|()[]^ Q\\", "ı", "ſ", "\u212a", "é"]), max_size=12)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_pieces, min_size=1, max_size=8).map("".join), _texts.map("".join))
@example("abc\\Q(\\E|x", "x")
@example("abc\\Q[\\E|x", "x")
def test_a_regex_re2_matches_holds_its_literal_or_a_twin(source: str, text: str) -> None:
    """required_literal, which the fast matcher trusts, read against RE2's syntax: `\\Q...\\E`
    quotes brackets that would otherwise hide an alternation."""
    try:
        term = compile_term(f"/{source}/")
    except re.error:
        return
    literal = required_literal(source)
    normalized = normalize(text)
    if literal is not None and term.search(normalized):
        assert literal in normalized or any(t in normalized for t in _IGNORECASE_ASCII_TWINS)


def test_a_matcher_with_regexes_survives_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RE2's compiled expressions are pickled as their source and compiled again on load."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    topics = [
        ("position", Criteria(any=("/^position:/", "position paper*"))),
        ("diffusion", Criteria(any=("/diffus(ion|e)/",), none=("/survey|review/",))),
        ("institution", Criteria(institutions=("/univ.*/",))),
    ]
    papers = [*seed_papers(), *_long_papers()]
    expected = [(tid, p.paper_id, h) for p in papers for tid, h in Matcher(topics).match(p)]
    assert any(tid == "position" for tid, _p, _h in expected)
    cached_matcher(topics)  # built and saved
    re2.purge()  # nothing left in RE2's own cache: loading compiles again
    again = cached_matcher(topics)
    assert [(tid, p.paper_id, h) for p in papers for tid, h in again.match(p)] == expected
    re2.purge()
    loaded = pickle.loads(pickle.dumps(again, protocol=pickle.HIGHEST_PROTOCOL))
    assert [(tid, p.paper_id, h) for p in papers for tid, h in loaded.match(p)] == expected


# --- 2. values that crashed later: bounded now ---------------------------------------------

HUGE = "99999999999999999999999999"

TOO_LARGE_SETTINGS = [
    pytest.param(y("feed:", f"  max_items: {HUGE}"), 2, "feed.max_items", id="feed.max_items"),
    pytest.param(y("site:", f"  page_size: {HUGE}"), 2, "site.page_size", id="page_size"),
    pytest.param(y("links:", f"  concurrency: {HUGE}"), 2, "links.concurrency", id="concurrency"),
    pytest.param(y("links:", f"  per_host: {HUGE}"), 2, "links.per_host", id="per_host"),
    pytest.param(y("links:", f"  lookups_per_run: {HUGE}"), 2, "links.lookups_per_run",
                 id="lookups"),
    pytest.param(y("links:", "  concurrency: 100000"), 2, "at most 1,000", id="threads"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "line", "what"), TOO_LARGE_SETTINGS)
def test_numbers_too_large_for_the_settings(tmp_path: Path, text: str, line: int, what: str):
    e = expect_error(load_settings, write(tmp_path, text, "settings.yaml"), line, what)
    assert "at most" in e.message


def test_max_items_too_large_in_a_topic_names_the_range(tmp_path: Path) -> None:
    text = y(*TOPIC_HEAD, f"    max_items: {HUGE}")
    e = expect_error(load_subscriptions, write(tmp_path, text), 5, "max_items")
    assert "at least 1 and at most 1,000,000" in e.message


def test_the_largest_values_allowed_load(tmp_path: Path) -> None:
    topics = load_subscriptions(write(tmp_path, y(*TOPIC_HEAD, "    max_items: 1000000")))
    assert topics[0].max_items == 1_000_000
    text = y("feed:", "  max_items: 1000000", "schedule: {every: 365d}", "links:",
             "  lookups_per_run: 0", "  timeout: 365d")  # fmt: skip
    s = load_settings(write(tmp_path, text, "settings.yaml"))
    assert (s.max_items, s.schedule_every, s.links.lookups_per_run) == (10**6, 365 * 86400.0, 0)


@pytest.mark.parametrize(
    ("text", "what"),
    [
        pytest.param(y("# c", "schedule: {every: 99999999999d}"), "schedule.every", id="every"),
        pytest.param(y("# c", "settle: 99999999999d"), "settle", id="settle"),
        pytest.param(y("# c", "stale_after: 99999999999d"), "stale_after", id="stale_after"),
        pytest.param(y("links:", "  timeout: 99999999999d"), "links.timeout", id="timeout"),
        pytest.param(y("links:", "  arxiv_delay: 99999999999d"), "links.arxiv_delay", id="delay"),
        pytest.param(y("# c", f"settle: {'9' * 400}s"), "settle", id="infinite"),
        pytest.param(y("# c", "settle: 366d"), "settle", id="a-day-too-long"),
    ],
)
def test_durations_too_long(tmp_path: Path, text: str, what: str) -> None:
    e = expect_error(load_settings, write(tmp_path, text, "settings.yaml"), 2, what)
    assert "at most 365d" in e.message


def test_feeds_run_with_a_huge_max_items_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    text = ws.subscriptions.read_text(encoding="utf-8").replace(
        "    title: Speculative decoding\n",
        f"    title: Speculative decoding\n    max_items: {HUGE}\n",
        1,
    )
    assert HUGE in text
    ws.subscriptions.write_text(text, encoding="utf-8")
    done = run_feeds(tmp_path, "run", *ws.cli_args())
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(f"error: {ws.subscriptions}:"), done.stderr
    assert "max_items must be at least 1 and at most 1,000,000" in done.stderr
    assert not ws.public.exists()


def _deep_flow(depth: int) -> str:
    return "[" * depth + "x" + "]" * depth


def _deep_mapping(depth: int) -> str:
    return "{a: " * depth + "x" + "}" * depth


@pytest.fixture(params=["libyaml", "python"])
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both parsers PyYAML may use: libyaml (when built with it) and its own Python one."""
    if request.param == "python":
        monkeypatch.setattr(yamlload, "_FastLoader", yamlload._Loader)
    return str(request.param)


@pytest.mark.parametrize("depth", [21, 100, 1000, 20000])
@pytest.mark.parametrize("nest", [_deep_flow, _deep_mapping])
def test_values_nested_too_deep_are_a_config_error(
    tmp_path: Path, loader: str, depth: int, nest: Callable[[int], str]
) -> None:
    value = nest(depth)
    subs = write(tmp_path, y(*TOPIC_HEAD, f"    description: {value}"))
    e = expect_error(load_subscriptions, subs, 5, "nested more than")
    assert "deep" in e.message
    settings_file = write(tmp_path, y("site:", f"  title: {value}"), "settings.yaml")
    expect_error(load_settings, settings_file, 2, "nested more than")


def test_block_values_nested_too_deep_point_at_the_first_level_too_many(
    tmp_path: Path, loader: str
) -> None:
    lines = ["topics:"] + [" " * (2 * i) + "- " + "x:" for i in range(1, 40)]
    lines[-1] += " 1"
    expect_error(load_subscriptions, write(tmp_path, y(*lines)), 11, "nested more than 20")


def test_nesting_up_to_the_limit_is_only_a_shape_error(tmp_path: Path, loader: str) -> None:
    subs = write(tmp_path, y(*TOPIC_HEAD, f"    description: {_deep_flow(17)}"))
    expect_error(load_subscriptions, subs, 5, "description must be text")


# --- 3. public/ apart from the inputs and the config ----------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (the working folder): seeds/, config/ and nothing else yet."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "seeds").mkdir()
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "subscriptions.yaml").write_text(y(*TOPIC_HEAD))
    return tmp_path


OVERLAPS = [
    pytest.param(y("# c", "public_dir: seeds"), 2, "is the inbox folder seeds", id="inbox"),
    pytest.param(y("state: ../s", "public_dir: ."), 2, "contains the inbox folder", id="contains"),
    pytest.param(y("# c", "public_dir: seeds/site"), 2, "is inside the inbox", id="inside-inbox"),
    pytest.param(y("# c", "public_dir: out/../seeds"), 2, "inbox folder seeds", id="dotdot"),
    pytest.param(y("inbox: [digests, public]"), 1, "is the inbox folder public", id="inbox-key"),
    pytest.param(y("inbox: [out]", "public_dir: config"), 2, "the folder of", id="config"),
    pytest.param(
        y("inbox: [../in]", "state: ../s", "public_dir: ."),
        3,
        "contains the folder of",
        id="config-in",
    ),
    pytest.param(y("# c", "state: public/s.sqlite3"), 2, "must not be inside public/", id="state"),
    pytest.param(y("public_dir: site", "state: site/db/s"), 2, "inside public/", id="state-in"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), OVERLAPS)
def test_public_dir_overlapping_inputs_or_config_is_refused_at_its_line(
    project: Path, text: str, line: int, fragment: str
) -> None:
    settings_file = write(project / "config", text, "settings.yaml")
    expect_error(load_settings, settings_file, line, fragment)
    # Through load() as the CLI calls it, which also knows the subscriptions file.
    expect_error(
        lambda p: load(Path("config/subscriptions.yaml"), p), settings_file, line, fragment
    )


def test_public_dir_reached_through_a_symlink_is_refused(project: Path) -> None:
    os.symlink(project / "seeds", project / "digests")
    settings_file = write(project, y("inbox: [digests]", "public_dir: seeds"), "settings.yaml")
    expect_error(load_settings, settings_file, 2, "is the inbox folder digests")


def test_the_subscriptions_folder_is_known_to_load(project: Path) -> None:
    (project / "topics").mkdir()
    shutil.move(project / "config" / "subscriptions.yaml", project / "topics" / "subs.yaml")
    settings_file = write(project, y("# c", "public_dir: topics"), "settings.yaml")
    load_settings(settings_file)  # alone, it cannot know
    expect_error(lambda p: load(Path("topics/subs.yaml"), p), settings_file, 2, "topics/subs.yaml")


def test_public_dir_inside_the_config_folder_is_fine(project: Path) -> None:
    """Config files at the top of a project, public/ beside them: the config folder is the
    project's, public/ is inside it, and nothing of either is in the other's way."""
    settings_file = write(project, y("public_dir: site", "inbox: [seeds]"), "settings.yaml")
    assert load(Path("config/subscriptions.yaml"), settings_file).settings.public_dir == Path(
        "site"
    )
    check_places(read_settings(settings_file), [settings_file, project / "config" / "x.yaml"])


@pytest.mark.parametrize(
    ("public", "inbox", "state", "fragment"),
    [
        pytest.param("seeds", "seeds", "s.sqlite3", "is the inbox folder seeds", id="inbox"),
        pytest.param("seeds/x/..", "seeds", "s.sqlite3", "is the inbox folder", id="dotdot"),
        pytest.param(".", "seeds", "../s", "contains the inbox folder", id="contains"),
        pytest.param("config", "seeds", "s.sqlite3", "config/subscriptions.yaml", id="config"),
        pytest.param("out", "seeds", "out/s.sqlite3", "inside public/", id="state"),
    ],
)
def test_check_places_refuses_the_final_paths(
    project: Path, public: str, inbox: str, state: str, fragment: str
) -> None:
    """What the CLI checks once --public, --inbox and --state are applied."""
    s = replace(Settings(), public_dir=Path(public), inbox=(Path(inbox),), state=Path(state))
    with pytest.raises(ConfigError, match=re.escape(fragment)) as info:
        check_places(s, [Path("config/subscriptions.yaml"), None])
    assert info.value.line is None
    check_places(replace(s, public_dir=Path("site"), state=Path("s")), [Path("config/x.yaml")])


@pytest.mark.parametrize("public", ["inbox", ".", "config"])
def test_the_command_line_cannot_publish_among_the_digests_or_the_config(
    tmp_path: Path, public: str
) -> None:
    ws = make_workspace(tmp_path / "ws")
    before = sorted(p.name for p in ws.inbox.iterdir())
    args = [a if a != str(ws.public) else str(ws.root / public) for a in ws.cli_args()]
    r = run_feeds(ws.root, "run", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("error: ")
    assert sorted(p.name for p in ws.inbox.iterdir()) == before
    assert not (ws.root / public / "index.html").exists()


def test_a_number_of_five_thousand_digits_is_a_config_error_with_its_line(
    tmp_path: Path,
) -> None:
    huge = "9" * 5000
    topics = write(tmp_path, y(*TOPIC_HEAD, f"    max_items: {huge}"))
    expect_error(load_subscriptions, topics, 5, "max_items is a number of 5,000 characters")
    settings = write(tmp_path, y("feed:", f"  max_items: {huge}"), "settings.yaml")
    expect_error(read_settings, settings, 2, "is a number of 5,000 characters")


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (y("site:", "  base_url: http://example.org:99999/"), 2,
         "its port is not a number from 0 to 65535"),
        (y("sources:", '  - "https://[::1/x"'), 2, "its host cannot be read"),
        (y("links:", "  arxiv_api: http://example.org:x/"), 2, "its port is not a number"),
    ],
)  # fmt: skip
def test_web_addresses_in_settings_follow_the_one_rule(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    expect_error(read_settings, write(tmp_path, text, "settings.yaml"), line, fragment)


@pytest.mark.parametrize("where", ["settings", "option"])
def test_a_state_url_is_a_config_error_never_a_local_folder(tmp_path: Path, where: str) -> None:
    """Any scheme but postgresql:// (see tests/test_postgres.py)."""
    ws = make_workspace(tmp_path / "ws")
    url = "mysql://papers:pw@db.example.org:3306/feeds"
    args = [*ws.cli_args()]
    if where == "option":
        args[args.index("--state") + 1] = url
    else:
        args = args[: args.index("--state")] + args[args.index("--state") + 2 :]
        (ws.root / "s.yaml").write_text(f"state: {url}\n", encoding="utf-8")
        args += ["--settings", str(ws.root / "s.yaml")]
    r = run_feeds(ws.root, "run", *args)
    assert r.returncode == 2, r.stderr
    assert "a state on mysql:// is not supported" in r.stderr
    assert "postgresql://user@host:port/database" in r.stderr  # what is
    assert "papers" not in r.stderr  # the rest of the URL may hold a password
    assert not (ws.root / "mysql:").exists()
