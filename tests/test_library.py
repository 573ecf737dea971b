"""Your library (reference managers): a topic's `library:` names a BibTeX, RIS or CSL JSON
export (Zotero, Better BibTeX) whose items are the topic's examples.

Covered here: reading the exports (`feeds.config.library.parse`, pure: LaTeX decoded, arXiv
ids and DOIs found, unreadable and untitled entries skipped at their line); topics by a
library through real `feeds run --offline` runs over a small ICML digest, for each kind
(papers like the library's are listed, the library's own papers are not, a paper removed
from the library comes back); what `feeds check` says of each library; config errors; the
config cache noticing library changes; and `like:` naming a paper by its DOI.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from feeds.cache import cache_dir
from feeds.config import load_subscriptions
from feeds.config.library import kind_of, parse
from feeds.errors import ConfigError
from feeds.match.likes import resolve
from feeds.model import Library, Link, Paper
from feeds.pipeline import run
from feeds.state import Store
from feeds.text import paper_id
from tests.conftest import Workspace

Cli = Callable[..., CompletedProcess[str]]
T0 = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)

MINEDRAFT = "MineDraft: A Framework for Batch Parallel Speculative Decoding"
LK = "LK Losses: Direct Acceptance Rate Optimization for Speculative Decoding"
TREE = "Tree Drafting for Speculative Decoding of Large Language Models"
SELF = "Self-Speculative Decoding with Early-Exit Draft Layers"
ADAPTIVE = "Adaptive Draft Length for Speculative Decoding in Batched LLM Serving"
OTHER_SPECULATIVE = {TREE, SELF, ADAPTIVE}
PROTEIN = "Protein Structure Prediction with Evolutionary Coupling Attention"
UNRELATED = {
    "Message Passing Graph Neural Networks for Molecular Property Prediction",
    PROTEIN,
    "Legged Robot Locomotion on Rough Terrain via Sim-to-Real Reinforcement Learning",
    "Spectral Clustering of Large Sparse Graphs with Random Projections",
    "Global Weather Forecasting with Fourier Neural Operators",
    "Causal Discovery from Irregular Time Series with Latent Confounders",
    "Differentially Private Synthetic Tabular Data via Marginal Queries",
    "Fairness-Aware Credit Scoring under Distribution Shift",
}
ADAPTIVE_DOI = "10.1145/3700000.3700001"  # in Adaptive Draft Length's comments


def _record(title: str, title_zh: str, authors: str, summary: str, comments: str = "") -> str:
    """Return a digest record as the seeds have them: its fields separated by blank lines."""
    fields = [title, title_zh, authors, f"AI总结 {summary}"]
    return "\n\n".join(fields + ([f"Comments {comments}"] if comments else []))


# A digest: the venue, then five papers on speculative decoding and eight on anything else.
DIGEST = "\n\n".join([
    "ICML",
    _record(MINEDRAFT, "MineDraft: 批量并行推测解码框架",
            "Zhenwei Tang, Arun Verma, Bryan Kian Hsiang Low",
            "提出MineDraft框架，通过批量并行设计将草稿生成与验证阶段重叠，"
            "显著提升推测解码的吞吐量和端到端延迟。", "Accepted at ICML 2026"),
    _record(LK, "LK损失：面向推测解码的接受率直接优化", "Alexander Samarin, Maria Ivanova",
            "提出LK损失，直接优化草稿模型在推测解码中的接受率，"
            "使草稿阶段生成的令牌更易通过验证阶段，从而提升推测解码的吞吐量和端到端延迟。"),
    _record(TREE, "面向大语言模型推测解码的树状草稿", "Wei Chen, Li Na",
            "提出树状草稿方法，草稿模型一次生成多条候选草稿令牌序列，由目标模型并行验证，"
            "提升推测解码的接受率与推理加速比。"),
    _record(SELF, "基于提前退出草稿层的自推测解码", "Hiroshi Sato, Emma Wilson",
            "利用目标模型的浅层作为草稿模型进行自推测解码，无需额外的草稿模型，"
            "并行验证草稿令牌，加速大语言模型推理。"),
    _record(ADAPTIVE, "批量大语言模型服务中推测解码的自适应草稿长度",
            "Carlos Mendez, Priya Raman",
            "根据接受率动态调整草稿长度，在批量推理服务中平衡草稿模型开销与并行验证，"
            "提升推测解码的吞吐量。", f"Journal version: https://doi.org/{ADAPTIVE_DOI}"),
    _record("Message Passing Graph Neural Networks for Molecular Property Prediction",
            "用于分子性质预测的消息传递图神经网络", "Anna Schmidt, Tom Baker",
            "提出一种消息传递图神经网络，利用分子图中原子与化学键的特征预测分子性质，"
            "在多个化学基准数据集上取得领先结果。"),
    _record(PROTEIN, "基于进化耦合注意力的蛋白质结构预测", "Yuki Tanaka, Omar Haddad",
            "利用多序列比对中的进化耦合信息预测蛋白质三维结构和残基接触图，"
            "提高了蛋白质折叠预测的精度。"),
    _record("Legged Robot Locomotion on Rough Terrain via Sim-to-Real Reinforcement Learning",
            "基于仿真到现实强化学习的足式机器人崎岖地形运动", "Lars Nilsson, Sofia Rossi",
            "在仿真环境中训练四足机器人的运动控制策略，借助域随机化迁移到真实机器人，"
            "实现崎岖地形上的稳定行走。"),
    _record("Spectral Clustering of Large Sparse Graphs with Random Projections",
            "基于随机投影的大规模稀疏图谱聚类", "Ivan Petrov, Grace Lee",
            "利用随机投影近似图拉普拉斯矩阵的特征向量，"
            "使谱聚类可扩展到数十亿条边的稀疏图，并给出聚类误差界。"),
    _record("Global Weather Forecasting with Fourier Neural Operators",
            "基于傅里叶神经算子的全球天气预报", "Mohammed Ali, Julia Novak",
            "使用傅里叶神经算子学习大气动力学，对全球气温、风速和降水进行中期天气预报，"
            "计算成本远低于数值天气预报。"),
    _record("Causal Discovery from Irregular Time Series with Latent Confounders",
            "含潜在混杂因子的不规则时间序列因果发现", "Pedro Alves, Hannah Kim",
            "针对采样不规则且存在潜在混杂因子的时间序列，"
            "提出基于连续时间模型的因果发现方法，识别变量之间的因果图。"),
    _record("Differentially Private Synthetic Tabular Data via Marginal Queries",
            "基于边际查询的差分隐私合成表格数据", "Nora Fischer, David Cohen",
            "通过选择并加噪低维边际查询生成满足差分隐私的合成表格数据，"
            "在隐私预算与下游任务效用之间取得更好权衡。"),
    _record("Fairness-Aware Credit Scoring under Distribution Shift",
            "分布偏移下的公平信用评分", "Lucia Romero, Kwame Mensah",
            "研究分布偏移下信用评分模型的群体公平性，"
            "提出重加权方法在保持准确率的同时减少不同人群之间的差异。"),
]) + "\n"  # fmt: skip

# What Zotero exported for MineDraft and LK Losses, in each format.
MINEDRAFT_BIB = (
    "@inproceedings{tang_minedraft:_2026,\n"
    "\ttitle = {{MineDraft}: {A} {Framework} for {Batch} {Parallel} {Speculative}"
    " {Decoding}},\n"
    "\tabstract = {Speculative decoding accelerates LLM inference by drafting tokens with a small"
    " draft model and verifying them in parallel. MineDraft overlaps drafting and verification"
    " across batches.},\n"
    "\tbooktitle = {{ICML}},\n"
    "\tauthor = {Tang, Zhenwei and Müller, Jörg},\n"
    "\tyear = {2026},\n"
    "}\n"
)
LK_BIB = (
    "@misc{samarin_lk_2026,\n"
    "\ttitle = {{LK} {Losses}: {Direct} {Acceptance} {Rate} {Optimization} for {Speculative}"
    " {Decoding}},\n"
    "\tdoi = {10.48550/arXiv.2601.00002},\n"
    "\tabstract = {We optimize the acceptance rate of draft tokens in speculative decoding"
    " directly.},\n"
    "\tpublisher = {arXiv},\n"
    "\tauthor = {Samarin, Alexander},\n"
    "\tyear = {2026},\n"
    "}\n"
)
ZOTERO_BIB = MINEDRAFT_BIB + "\n" + LK_BIB

MINEDRAFT_RIS = (
    "TY  - CONF\n"
    "TI  - MineDraft: A Framework for Batch Parallel Speculative Decoding\n"
    "AU  - Tang, Zhenwei\n"
    "T2  - ICML\n"
    "AB  - Speculative decoding accelerates LLM inference by drafting tokens with a small draft"
    " model and verifying them in parallel.\n"
    "PY  - 2026\n"
    "ER  - \n"  # RIS ends a record with `ER  - `, trailing space included
)
LK_RIS = (
    "TY  - GEN\n"
    "TI  - LK Losses: Direct Acceptance Rate Optimization for Speculative Decoding\n"
    "AU  - Samarin, Alexander\n"
    "DO  - 10.48550/arXiv.2601.00002\n"
    "PB  - arXiv\n"
    "ER  - \n"
)
ZOTERO_RIS = MINEDRAFT_RIS + "\n" + LK_RIS

MINEDRAFT_CSL = {
    "type": "paper-conference",
    "title": MINEDRAFT,
    "abstract": "Speculative decoding accelerates LLM inference by drafting tokens with a small"
    " draft model and verifying them in parallel.",
    "author": [{"family": "Tang", "given": "Zhenwei"}],
    "issued": {"date-parts": [["2026"]]},
}
LK_CSL = {
    "type": "article",
    "title": LK,
    "DOI": "10.48550/arXiv.2601.00002",
    "publisher": "arXiv",
    "author": [{"family": "Samarin", "given": "Alexander"}],
    "issued": {"date-parts": [["2026"]]},
}


def _csl(*items: dict[str, object]) -> str:
    return json.dumps(list(items), indent=2, ensure_ascii=False) + "\n"


# kind -> (file name, export of MineDraft and LK Losses, export of MineDraft alone)
EXPORTS = {
    "bibtex": ("refs.bib", ZOTERO_BIB, MINEDRAFT_BIB),
    "ris": ("refs.ris", ZOTERO_RIS, MINEDRAFT_RIS),
    "csljson": ("refs.json", _csl(MINEDRAFT_CSL, LK_CSL), _csl(MINEDRAFT_CSL)),
}

LIBRARY_TOPIC = """\
topics:
  - id: mine
    title: Papers like my library
    library: {library}
"""


# --- helpers ---


def _project(
    root: Path, topics: str, files: dict[str, str | bytes], digest: str = DIGEST
) -> Workspace:
    """Return a project folder: the digest in its inbox, the subscriptions and the library
    files (relative to the subscriptions, as users write them) in config/."""
    inbox = root / "inbox"
    inbox.mkdir(parents=True)
    (inbox / "icml-2026.txt").write_text(digest, encoding="utf-8")
    config = root / "config"
    config.mkdir()
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (config / name).write_bytes(data)
    subscriptions = config / "subscriptions.yaml"
    subscriptions.write_text(topics, encoding="utf-8")
    return Workspace(root, inbox, subscriptions, root / "public", root / "state" / "state.sqlite3")


def _feed_run(cli: Cli, ws: Workspace) -> dict[str, Any]:
    """Run `feeds run --offline --json` on the project; return its summary."""
    r = cli(ws.root, "run", "--json", *ws.cli_args())
    assert r.returncode == 0, r.stderr
    summary: dict[str, Any] = json.loads(r.stdout)
    return summary


def _check(cli: Cli, ws: Workspace, *options: str) -> CompletedProcess[str]:
    r = cli(ws.root, "check", *options, "--subscriptions", str(ws.subscriptions),
            "--state", str(ws.state))  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r


def _items(ws: Workspace, topic: str) -> dict[str, dict[str, Any]]:
    """Return the JSON Feed items of a topic by title."""
    doc = json.loads((ws.public / "feeds" / f"{topic}.json").read_bytes())
    return {item["title"]: item for item in doc["items"]}


def _matched(item: dict[str, Any]) -> list[dict[str, str]]:
    hits: list[dict[str, str]] = item["_paperfeeds"]["matched"]
    return hits


def _reading_list(ws: Workspace, topic: str) -> str:
    return (ws.public / "topics" / f"{topic}.html").read_text(encoding="utf-8")


def _line_of(text: str, start: str) -> int:
    """Return the 1-based line of text that starts with `start`."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(start))


def _rewrite_keeping_size_and_mtime(path: Path, text: str) -> None:
    """Write new content of the same size and give the file its old modification time
    back (as `cp -p` or a sync tool does): only its change time tells it changed."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    for _ in range(1000):  # a coarse clock: write until the change time has moved
        path.write_text(text, encoding="utf-8")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        if path.stat().st_ctime_ns != before.st_ctime_ns:
            return
    raise AssertionError("the file system never moved the change time")


def _store(path: Path, *papers: Paper, links: dict[str, list[Link]] | None = None) -> Store:
    """Return a state holding these papers (as one digest's) and links."""
    store = Store(path, T0)
    with store.transaction():
        store.put_papers([(n + 1, p) for n, p in enumerate(papers)], "digest", T0)
        for pid, found in (links or {}).items():
            store.add_links(pid, found)
    return store


def _paper(title: str, summary: str, **more: str) -> Paper:
    return Paper(paper_id=paper_id(title), title=title, summary=summary, venue="ICML", **more)


def _parse(text: str, kind: str, shown: str) -> Library:
    return parse(text, kind, "subscriptions.yaml", 4, shown)


def _members(ws: Workspace, topic: str) -> dict[str, tuple[str, ...]]:
    """Return a topic's members as the state keeps them: paper id -> the rest of the row
    (when it entered, the hits that say why)."""
    db = sqlite3.connect(ws.state)
    try:
        rows = db.execute("SELECT * FROM members WHERE topic_id = ?", (topic,)).fetchall()
    finally:
        db.close()
    return {str(r[1]): tuple(map(str, r[2:])) for r in rows}


def _config_cache_file() -> Path:
    """Return the one cached config of the test's own cache (see own_cache)."""
    (found,) = cache_dir().glob("config-*.pickle")
    return found


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config cache of this test's own (the commands it starts inherit it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


# --- reading the exports (pure) ---


def test_bibtex_from_zotero_gives_titles_without_latex_braces_and_abstracts() -> None:
    lib = _parse(ZOTERO_BIB, "bibtex", "refs.bib")
    assert [i.title for i in lib.items] == [MINEDRAFT, LK]
    assert [i.line for i in lib.items] == [1, 9]
    assert lib.items[0].abstract is not None
    assert lib.items[0].abstract.startswith("Speculative decoding accelerates LLM inference")
    assert (lib.read, lib.skipped, lib.path) == (2, (), "refs.bib")


def test_bibtex_accents_written_in_latex_and_in_utf8_read_the_same() -> None:
    text = r"""@book{latex,
	title = {M{\"u}ller and {\"O}zt{\"u}rk on {Z\"{u}rich} Caf{\'e}s},
}

@book{utf8,
	title = {Müller and Öztürk on {Zürich} Cafés},
}
"""
    lib = _parse(text, "bibtex", "refs.bib")
    assert [i.title for i in lib.items] == ["Müller and Öztürk on Zürich Cafés"] * 2


def test_bibtex_an_arxiv_doi_gives_the_arxiv_id() -> None:
    (_minedraft, lk) = _parse(ZOTERO_BIB, "bibtex", "refs.bib").items
    assert lk.doi == "10.48550/arxiv.2601.00002"
    assert lk.arxiv_id == "2601.00002"


def test_bibtex_eprint_with_archive_prefix_arxiv_gives_the_arxiv_id() -> None:
    text = """\
@article{tree_2026,
	title = {Tree Drafting for Speculative Decoding},
	eprint = {2601.00003v2},
	archivePrefix = {arXiv},
	primaryClass = {cs.CL},
}

@online{self_2026,
	title = {Self-Speculative Decoding},
	eprint = {2601.00004},
	eprinttype = {arxiv},
}

@article{not_arxiv,
	title = {A Paper in PubMed},
	eprint = {12345678},
	archivePrefix = {PubMed},
}
"""
    lib = _parse(text, "bibtex", "refs.bib")
    assert [i.arxiv_id for i in lib.items] == ["2601.00003", "2601.00004", None]


def test_bibtex_inproceedings_with_a_booktitle_is_an_item() -> None:
    (minedraft,) = _parse(MINEDRAFT_BIB, "bibtex", "refs.bib").items
    assert minedraft.title == MINEDRAFT
    assert (minedraft.doi, minedraft.arxiv_id) == (None, None)


def test_bibtex_an_entry_without_title_is_skipped_at_its_line() -> None:
    text = ZOTERO_BIB + "\n@misc{untitled_2026,\n\tauthor = {Nobody},\n\tyear = {2026},\n}\n"
    lib = _parse(text, "bibtex", "refs.bib")
    assert [i.title for i in lib.items] == [MINEDRAFT, LK]
    assert [str(d) for d in lib.skipped] == [
        f"refs.bib:{_line_of(text, '@misc{untitled')}: no title"
    ]
    assert lib.read == 3


def test_bibtex_an_entry_with_an_unbalanced_brace_is_skipped_as_unreadable_at_its_line() -> None:
    broken = "@article{broken_2026,\n\ttitle = {Unbalanced {Brace,\n\tyear = {2026},\n}\n"
    text = MINEDRAFT_BIB + "\n" + broken + "\n" + LK_BIB
    lib = _parse(text, "bibtex", "refs.bib")
    assert [i.title for i in lib.items] == [MINEDRAFT, LK]
    (skipped,) = lib.skipped
    assert (skipped.file, skipped.line) == ("refs.bib", _line_of(text, "@article{broken"))
    assert skipped.message.startswith("could not be read")


def test_ris_from_zotero_with_a_bom_and_crlf_line_ends() -> None:
    text = "\ufeff" + ZOTERO_RIS.replace("\n", "\r\n")
    lib = _parse(text, "ris", "refs.ris")
    assert [i.title for i in lib.items] == [MINEDRAFT, LK]
    assert [i.line for i in lib.items] == [1, 9]
    assert lib.items[0].abstract is not None
    assert lib.items[0].abstract.startswith("Speculative decoding accelerates")
    assert (lib.items[1].doi, lib.items[1].arxiv_id) == ("10.48550/arxiv.2601.00002", "2601.00002")
    assert lib.skipped == ()


def test_ris_a_record_without_its_er_line_is_skipped_at_its_line() -> None:
    cut = "TY  - JOUR\nTI  - An Export Cut Short\nAU  - Doe, Jane\n"
    text = MINEDRAFT_RIS + "\n" + cut + "\n" + LK_RIS
    lib = _parse(text, "ris", "refs.ris")
    assert [i.title for i in lib.items] == [MINEDRAFT, LK]
    (skipped,) = lib.skipped
    assert (skipped.file, skipped.line) == ("refs.ris", _line_of(text, "TY  - JOUR"))
    assert skipped.message.startswith("could not be read")
    assert lib.read == 3


def test_ris_a_record_without_title_is_skipped_at_its_line() -> None:
    text = ZOTERO_RIS + "\nTY  - JOUR\nAU  - Doe, Jane\nER  - \n"
    lib = _parse(text, "ris", "refs.ris")
    assert [i.title for i in lib.items] == [MINEDRAFT, LK]
    assert [str(d) for d in lib.skipped] == [f"refs.ris:{_line_of(text, 'TY  - JOUR')}: no title"]


def test_csl_json_items_are_read_and_one_without_title_is_skipped_at_its_line() -> None:
    text = _csl(MINEDRAFT_CSL, {"type": "article", "author": [{"family": "Doe"}]}, LK_CSL)
    lib = _parse(text, "csljson", "refs.json")
    assert [i.title for i in lib.items] == [MINEDRAFT, LK]
    assert lib.items[0].abstract == MINEDRAFT_CSL["abstract"]
    assert lib.items[1].arxiv_id == "2601.00002"
    second = [n for n, line in enumerate(text.splitlines(), 1) if line == "  {"][1]
    assert [str(d) for d in lib.skipped] == [f"refs.json:{second}: no title"]
    assert lib.read == 3


def test_csl_json_that_is_not_a_list_is_an_error() -> None:
    text = json.dumps({"items": [MINEDRAFT_CSL]})
    with pytest.raises(ConfigError, match=r"library 'refs.json'.*list") as caught:
        _parse(text, "csljson", "refs.json")
    assert (caught.value.file, caught.value.line) == ("subscriptions.yaml", 4)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("refs.bib", "bibtex"), ("My Library.BIB", "bibtex"), ("a.bibtex", "bibtex"),
     ("a.biblatex", "bibtex"), ("zotero.ris", "ris"), ("export.json", "csljson"),
     ("notes.txt", None), ("bib", None)],
)  # fmt: skip
def test_the_kind_of_a_library_is_told_by_its_suffix(name: str, kind: str | None) -> None:
    assert kind_of(name) == kind


# --- topics by a library, through real runs ---


@pytest.mark.parametrize("kind", list(EXPORTS))
def test_a_library_lists_papers_like_its_items_but_not_its_items_nor_unrelated_ones(
    tmp_path: Path, feeds_cli: Cli, kind: str
) -> None:
    name, export, _without_lk = EXPORTS[kind]
    ws = _project(tmp_path, LIBRARY_TOPIC.format(library=name), {name: export})
    _feed_run(feeds_cli, ws)
    listed = set(_items(ws, "mine"))
    assert len(listed & OTHER_SPECULATIVE) >= 2, listed
    assert MINEDRAFT not in listed
    assert LK not in listed
    assert not listed & UNRELATED
    page = _reading_list(ws, "mine")
    assert all(title in page for title in listed)
    assert MINEDRAFT not in page
    assert LK not in page


@pytest.mark.parametrize("kind", list(EXPORTS))
def test_a_paper_removed_from_the_library_is_listed_on_the_next_run(
    tmp_path: Path, feeds_cli: Cli, kind: str
) -> None:
    name, export, without_lk = EXPORTS[kind]
    ws = _project(tmp_path, LIBRARY_TOPIC.format(library=name), {name: export})
    _feed_run(feeds_cli, ws)
    before = set(_items(ws, "mine"))
    (ws.subscriptions.parent / name).write_text(without_lk, encoding="utf-8")
    summary = _feed_run(feeds_cli, ws)
    after = _items(ws, "mine")
    assert LK in after  # out of the library now, and like MineDraft
    assert MINEDRAFT not in after
    assert set(after) != before
    assert summary["new_matches"] == {"mine": 1}
    [hit] = _matched(after[LK])
    assert hit["field"] == "similar"
    assert re.fullmatch(r"MineDraft \(0\.\d\d\): .+", hit["term"]), hit
    assert LK in _reading_list(ws, "mine")


def test_feed_items_say_which_library_item_they_are_similar_to_and_how_much(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    ws = _project(tmp_path, LIBRARY_TOPIC.format(library="refs.bib"), {"refs.bib": ZOTERO_BIB})
    _feed_run(feeds_cli, ws)
    items = _items(ws, "mine")
    assert items
    for title, item in items.items():
        [hit] = _matched(item)
        assert hit["field"] == "similar"
        found = re.fullmatch(r"(MineDraft|LK Losses) \((0\.\d\d)\): .+", hit["term"])
        assert found, (title, hit)
        assert f"similar to {hit['term']}" in str(item["content_html"])
        assert f"similar to {hit['term']}" in _reading_list(ws, "mine")


def test_a_paper_in_the_library_under_another_title_but_with_its_doi_is_not_listed(
    tmp_path: Path,
) -> None:
    # The library has the journal version of Adaptive Draft Length under a title of its
    # own; the digest's paper names that DOI in its comments.
    journal = f"""\
@article{{mendez_2026,
	title = {{Adaptive Drafting for Batched {{LLM}} Inference Servers}},
	journal = {{ACM Transactions on Computer Systems}},
	doi = {{{ADAPTIVE_DOI.upper()}}},
	year = {{2026}},
}}
"""
    ws = _project(
        tmp_path, LIBRARY_TOPIC.format(library="refs.bib"), {"refs.bib": MINEDRAFT_BIB + journal}
    )
    run(ws.config(), now=lambda: T0)
    listed = set(_items(ws, "mine"))
    assert ADAPTIVE not in listed
    assert TREE in listed  # the topic lists papers: only this one is left out


def test_a_library_item_names_its_paper_whatever_the_case_and_punctuation_of_its_title(
    tmp_path: Path,
) -> None:
    retitled = MINEDRAFT_BIB.replace(
        "{{MineDraft}: {A} {Framework} for {Batch} {Parallel} {Speculative} {Decoding}}",
        "{MINEDRAFT -- a framework for batch-parallel speculative decoding.}",
    )
    assert retitled != MINEDRAFT_BIB
    ws = _project(tmp_path, LIBRARY_TOPIC.format(library="refs.bib"), {"refs.bib": retitled})
    run(ws.config(), now=lambda: T0)
    listed = set(_items(ws, "mine"))
    assert MINEDRAFT not in listed
    assert LK in listed


def test_a_library_item_excludes_the_stored_paper_with_its_arxiv_id(tmp_path: Path) -> None:
    # The library has the arXiv preprint under its first title; the state has the paper
    # (with its arXiv id) under the title it was published with.
    preprint = (
        "@misc{lk_v1,\n"
        "\ttitle = {Optimizing Acceptance Rates of Drafts},\n"
        "\tdoi = {10.48550/arXiv.2601.00002},\n"
        "}\n"
    )
    (tmp_path / "refs.bib").write_text(preprint, encoding="utf-8")
    (tmp_path / "subscriptions.yaml").write_text(
        LIBRARY_TOPIC.format(library="refs.bib"), encoding="utf-8"
    )
    (topic,) = load_subscriptions(tmp_path / "subscriptions.yaml")
    lk = _paper(LK, "提出LK损失，直接优化推测解码的接受率。", arxiv_id="2601.00002")
    tree = _paper(TREE, "提出树状草稿方法。")
    store = _store(tmp_path / "state.sqlite3", lk, tree)
    try:
        like = resolve(store, topic, str(tmp_path / "subscriptions.yaml"))
    finally:
        store.close()
    assert like.excludes(lk)
    assert not like.excludes(tree)
    # Its example is the stored paper's text (found by its arXiv id), with the short title
    # the library gives it.
    (example,) = like.like
    assert example.label == "Optimizing Acceptance Rates of Drafts"
    assert "提出LK损失" in example.text


def test_library_examples_combine_with_like_unlike_and_min_similarity(tmp_path: Path) -> None:
    topics = f"""\
topics:
  - id: mine
    title: My library and protein folding
    library: refs.bib
    like: ["{PROTEIN}"]
    unlike: [草稿长度]  # "draft length": Adaptive Draft Length's summary, no other's
  - id: strict
    title: Only the closest
    library: refs.bib
    min_similarity: 0.2
"""
    ws = _project(tmp_path, topics, {"refs.bib": ZOTERO_BIB})
    run(ws.config(), now=lambda: T0)
    mine = _items(ws, "mine")
    assert PROTEIN in mine  # a like: example is listed, as a library item is not
    assert [h["term"].partition(":")[0] for h in _matched(mine[PROTEIN])] == [f"{PROTEIN} (1.00)"]
    assert ADAPTIVE not in mine  # unlike:
    assert {TREE, SELF} <= mine.keys()  # the library's examples still count
    assert not mine.keys() & {MINEDRAFT, LK}
    strict = _items(ws, "strict")
    for item in strict.values():
        [hit] = _matched(item)
        score = re.fullmatch(r"(?:MineDraft|LK Losses) \((\d\.\d\d)\): .+", hit["term"])
        assert score, hit
        assert float(score.group(1)) >= 0.2
    assert strict
    assert set(strict) < OTHER_SPECULATIVE


# --- feeds check ---

CHECKED_BIB = MINEDRAFT_BIB + "\n@misc{untitled_2026,\n\tauthor = {Nobody},\n\tyear = {2026},\n}\n"
CHECKED_RIS = LK_RIS + "\nTY  - JOUR\nTI  - An Export Cut Short\nAU  - Doe, Jane\n"
TWO_LIBRARIES = """\
topics:
  - id: mine
    title: Papers like my library
    library:
      - refs.bib
      - refs.ris
"""


def _checked_project(root: Path) -> Workspace:
    return _project(root, TWO_LIBRARIES, {"refs.bib": CHECKED_BIB, "refs.ris": CHECKED_RIS})


def test_check_says_per_library_how_many_items_were_read_used_and_skipped_and_why(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    ws = _checked_project(tmp_path)
    _feed_run(feeds_cli, ws)
    out = _check(feeds_cli, ws).stdout
    untitled = _line_of(CHECKED_BIB, "@misc{untitled")
    cut = _line_of(CHECKED_RIS, "TY  - JOUR")
    assert "library refs.bib: 2 items read, 1 used, 1 skipped" in out, out
    assert f"skipped refs.bib:{untitled}: no title" in out
    assert "library refs.ris: 2 items read, 1 used, 1 skipped" in out
    assert re.search(rf"skipped refs\.ris:{cut}: could not be read: \S", out), out
    assert re.search(r"mine: \d+ papers? like MineDraft, LK Losses", out), out


def test_check_json_lists_each_library_with_its_skipped_items(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    ws = _checked_project(tmp_path)
    _feed_run(feeds_cli, ws)
    doc = json.loads(_check(feeds_cli, ws, "--json").stdout)
    bib, ris = doc["like"]["mine"]["libraries"]
    untitled = _line_of(CHECKED_BIB, "@misc{untitled")
    assert bib == {
        "path": "refs.bib", "read": 2, "used": 1,
        "skipped": [{"file": "refs.bib", "line": untitled, "why": "no title"}],
    }  # fmt: skip
    assert (ris["path"], ris["read"], ris["used"]) == ("refs.ris", 2, 1)
    [skipped] = ris["skipped"]
    assert (skipped["file"], skipped["line"]) == ("refs.ris", _line_of(CHECKED_RIS, "TY  - JOUR"))
    assert skipped["why"].startswith("could not be read: ")
    assert doc["like"]["mine"]["examples"] == ["MineDraft", "LK Losses"]
    titles = {p["title"] for p in doc["like"]["mine"]["papers"]}
    assert titles
    assert titles <= OTHER_SPECULATIVE


def test_check_before_the_first_run_already_says_what_each_library_gave(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    # Reading a library needs no stored paper: `feeds check` on a new project is where a
    # user sees that an entry of the export was skipped.
    ws = _checked_project(tmp_path)
    out = _check(feeds_cli, ws).stdout
    assert "library refs.bib: 2 items read, 1 used, 1 skipped" in out, out
    assert f"skipped refs.bib:{_line_of(CHECKED_BIB, '@misc{untitled')}: no title" in out


# --- config errors ---


@pytest.mark.parametrize(
    ("library", "files", "said"),
    [
        ("missing.bib", {}, "library 'missing.bib' not found"),
        ("refs.txt", {"refs.txt": MINEDRAFT}, "library 'refs.txt': not a file kind"),
        ("untitled.bib", {"untitled.bib": "@misc{x,\n\tauthor = {Nobody},\n}\n"},
         "library 'untitled.bib' has no item with a title"),
        ("latin1.bib", {"latin1.bib": "@misc{x, title = {Müller}}\n".encode("latin-1")},
         "library 'latin1.bib' is not UTF-8"),
    ],
    ids=["missing", "txt", "no-usable-item", "not-utf8"],
)  # fmt: skip
def test_a_library_that_cannot_be_used_is_a_config_error_at_its_line(
    tmp_path: Path, feeds_cli: Cli, library: str, files: dict[str, str | bytes], said: str
) -> None:
    ws = _project(tmp_path, LIBRARY_TOPIC.format(library=library), files)
    r = feeds_cli(ws.root, "run", *ws.cli_args())
    assert r.returncode == 2, r.stderr
    assert f"subscriptions.yaml:4: {said}" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (ws.public / "feeds").exists()  # stopped before anything was published


def test_a_bad_library_in_a_list_is_reported_at_its_own_line(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    topics = TWO_LIBRARIES.replace("refs.ris", "refs.txt")
    ws = _project(tmp_path, topics, {"refs.bib": ZOTERO_BIB, "refs.txt": MINEDRAFT})
    r = feeds_cli(ws.root, "run", *ws.cli_args())
    assert r.returncode == 2, r.stderr
    assert f"subscriptions.yaml:{_line_of(topics, '      - refs.txt')}: library 'refs.txt'" in (
        r.stderr
    )


def test_a_library_with_an_unreadable_bibtex_entry_still_runs(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    broken = "@article{broken_2026,\n\ttitle = {Unbalanced {Brace,\n\tyear = {2026},\n}\n"
    bib = MINEDRAFT_BIB + "\n" + broken + "\n" + LK_BIB
    ws = _project(tmp_path, LIBRARY_TOPIC.format(library="refs.bib"), {"refs.bib": bib})
    r = feeds_cli(ws.root, "run", *ws.cli_args())
    assert r.returncode == 0, r.stderr[-2000:]
    out = _check(feeds_cli, ws).stdout
    assert "library refs.bib: 3 items read, 2 used, 1 skipped" in out
    assert f"skipped refs.bib:{_line_of(bib, '@article{broken')}: could not be read" in out


# --- the config cache and library changes ---


def test_an_unchanged_library_is_neither_read_nor_matched_again(
    tmp_path: Path, feeds_cli: Cli, own_cache: Path
) -> None:
    ws = _project(
        tmp_path / "p", LIBRARY_TOPIC.format(library="refs.bib"), {"refs.bib": ZOTERO_BIB}
    )
    _feed_run(feeds_cli, ws)
    cached = _config_cache_file().stat().st_mtime_ns
    feed = (ws.public / "feeds" / "mine.json").stat().st_mtime_ns
    summary = _feed_run(feeds_cli, ws)
    assert summary["new_matches"] == {"mine": 0}
    assert summary["files"]["written"] == 0
    assert (ws.public / "feeds" / "mine.json").stat().st_mtime_ns == feed
    assert _config_cache_file().stat().st_mtime_ns == cached  # the cached config served


def test_a_library_saved_again_without_change_rematches_nothing(
    tmp_path: Path, feeds_cli: Cli, own_cache: Path
) -> None:
    ws = _project(
        tmp_path / "p", LIBRARY_TOPIC.format(library="refs.bib"), {"refs.bib": ZOTERO_BIB}
    )
    _feed_run(feeds_cli, ws)
    members = _members(ws, "mine")
    feed = (ws.public / "feeds" / "mine.json").stat().st_mtime_ns
    # Saved again as it was, as an auto-export does on every change in Zotero.
    (ws.subscriptions.parent / "refs.bib").write_text(ZOTERO_BIB, encoding="utf-8")
    summary = _feed_run(feeds_cli, ws)
    assert summary["new_matches"] == {"mine": 0}
    assert summary["files"]["written"] == 0
    assert (ws.public / "feeds" / "mine.json").stat().st_mtime_ns == feed
    assert _members(ws, "mine") == members


def test_a_library_rewritten_with_its_size_and_mtime_kept_is_read_again(
    tmp_path: Path, feeds_cli: Cli, own_cache: Path
) -> None:
    ws = _project(
        tmp_path / "p", LIBRARY_TOPIC.format(library="refs.bib"), {"refs.bib": ZOTERO_BIB}
    )
    _feed_run(feeds_cli, ws)
    assert LK not in _items(ws, "mine")
    # LK Losses leaves the library: another entry of the same length takes its place.
    other = ZOTERO_BIB.replace("{LK} {Losses}", "{QX} {Mosses}").replace("2601.00002", "2601.00099")
    _rewrite_keeping_size_and_mtime(ws.subscriptions.parent / "refs.bib", other)
    _feed_run(feeds_cli, ws)
    assert LK in _items(ws, "mine")


def test_a_library_deleted_after_a_run_is_a_config_error_on_the_next(
    tmp_path: Path, feeds_cli: Cli, own_cache: Path
) -> None:
    ws = _project(
        tmp_path / "p", LIBRARY_TOPIC.format(library="refs.bib"), {"refs.bib": ZOTERO_BIB}
    )
    _feed_run(feeds_cli, ws)
    (ws.subscriptions.parent / "refs.bib").unlink()
    r = feeds_cli(ws.root, "run", *ws.cli_args())
    assert r.returncode == 2
    assert "subscriptions.yaml:4: library 'refs.bib' not found" in r.stderr


# --- like: a DOI ---


def _like_topic(folder: Path, example: str) -> Path:
    path = folder / "subscriptions.yaml"
    path.write_text(
        f'topics:\n  - id: like-doi\n    title: By DOI\n    like: ["{example}"]\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    "doi",
    [
        "10.48550/arXiv.2601.00002",
        "10.48550/ARXIV.2601.00002v3",
        "https://doi.org/10.48550/arXiv.2601.00002",
    ],
)
def test_like_an_arxiv_doi_names_the_stored_paper_with_that_arxiv_id(
    tmp_path: Path, doi: str
) -> None:
    lk = _paper(LK, "提出LK损失，直接优化推测解码的接受率。", arxiv_id="2601.00002")
    other = _paper(TREE, "提出树状草稿方法。", arxiv_id="2601.00003")
    subscriptions = _like_topic(tmp_path, doi)
    (topic,) = load_subscriptions(subscriptions)
    store = _store(tmp_path / "state.sqlite3", other, lk)
    try:
        like = resolve(store, topic, str(subscriptions))
    finally:
        store.close()
    assert [e.label for e in like.like] == ["LK Losses"]
    assert "提出LK损失" in like.like[0].text


@pytest.mark.parametrize(
    "link", ["https://doi.org/{doi}", "http://dx.doi.org/{doi}", "http://doi.org/{doi}"]
)
def test_like_a_publisher_doi_names_the_paper_with_a_doi_org_link_to_it(
    tmp_path: Path, link: str
) -> None:
    # The DOI link as the digest's comments give it; `like:` in another case (DOIs are
    # case-insensitive).
    digest = DIGEST.replace(f"https://doi.org/{ADAPTIVE_DOI}", link.format(doi=ADAPTIVE_DOI))
    ws = _project(tmp_path, "", {}, digest)
    _like_topic(ws.subscriptions.parent, ADAPTIVE_DOI.upper())
    run(ws.config(), now=lambda: T0)
    items = _items(ws, "like-doi")
    assert [h["term"].partition(":")[0] for h in _matched(items[ADAPTIVE])] == [
        f"{ADAPTIVE} (1.00)"
    ]


def test_like_an_unknown_doi_is_a_config_error_naming_it_at_its_line(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    ws = _project(tmp_path, "", {})
    _like_topic(ws.subscriptions.parent, "10.1145/9999999.9999999")
    r = feeds_cli(ws.root, "run", *ws.cli_args())
    assert r.returncode == 2, r.stderr
    assert (
        "subscriptions.yaml:4: topic 'like-doi': no stored paper has the DOI"
        " '10.1145/9999999.9999999'" in r.stderr  # the example's own line
    )
