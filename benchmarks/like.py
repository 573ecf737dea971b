"""Topics by example (feeds/similar.py): quality on the labelled seed topics, and speed at
scale beside the keyword matcher, both measured in the same run.

    python benchmarks/like.py --evaluate        # the precision/recall tables of like.md
    python benchmarks/like.py                   # 100,000 papers, 100 like-topics (~minutes)
    python benchmarks/like.py --small           # seconds: a smoke test

Speed phases, each printed beside the keyword matcher (feeds.match.fast.Matcher, 100 narrow
keyword topics from benchmarks/generate.py) on the same papers:
  build      document frequencies of all papers from scratch (`add(empty(), texts)`)
  score      all papers x all like-topics (`similar`)
  increment  a new 10-paper digest: its counts added and it scored, with a history of 1% of
             the papers and with all of them (the two must be about equal); and the
             document frequencies stored and loaded (`to_bytes`/`from_bytes`)
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import _file_rng, generate_digest, write_topics  # noqa: E402
from feeds.config import load_subscriptions  # noqa: E402
from feeds.match import similar as S  # noqa: E402
from feeds.match.fast import Matcher  # noqa: E402
from feeds.model import Paper  # noqa: E402
from feeds.sources.digest import parse  # noqa: E402

LABELS = ROOT / "benchmarks" / "like_labels.yaml"
SEEDS = ROOT / "seeds"
_HAN = (0x3400, 0x9FFF)


# --- the labelled set -----------------------------------------------------------------------


def labelled() -> tuple[list[Paper], list[dict[str, Any]]]:
    """Return the corpus (seed papers, then the labelled set's own) and its topics."""
    papers = [
        p for f in sorted(SEEDS.glob("*.txt")) for _l, p in parse(f.read_bytes(), f.name).papers
    ]
    data = yaml.safe_load(LABELS.read_text(encoding="utf-8"))
    for i, extra in enumerate(data["papers"]):
        papers.append(Paper(paper_id=f"labels-{i}", **extra))
    titles = {p.title for p in papers}
    for t in data["topics"]:
        for key in ("like", "members", "borderline"):
            unknown = [x for x in t[key] if x not in titles]
            if unknown:
                raise SystemExit(f"{LABELS}: {t['id']}: unknown {key} {unknown}")
    return papers, data["topics"]


def _han_unigrams(text: str) -> list[str]:
    return S.tokens(text) + [c for c in text if _HAN[0] <= ord(c) <= _HAN[1]]


def _han_only_unigrams(text: str) -> list[str]:
    out = []
    for t in S.tokens(text):
        if _HAN[0] <= ord(t[0]) <= _HAN[1]:
            out.extend(t[:1])  # the first character of each bigram: the unigrams, near enough
        else:
            out.append(t)
    return out


ANALYZERS: dict[str, Callable[[str], list[str]]] = {
    "bigrams": S.tokens,
    "bigrams+unigrams": _han_unigrams,
    "unigrams": _han_only_unigrams,
}


def _queries(
    papers: list[Paper], topics: list[dict[str, Any]]
) -> list[tuple[str, str, list[str], set[int], set[int]]]:
    """Return (topic, kind, example texts, positives, ignored) per query: the two example
    papers together, and each description alone. Example papers are neither hits nor strays
    of their own query; for a description they are members."""
    index = {p.title: i for i, p in enumerate(papers)}
    out = []
    for t in topics:
        like = {index[x] for x in t["like"]}
        members = {index[x] for x in t["members"]}
        border = {index[x] for x in t["borderline"]}
        texts = [S.paper_text(papers[i]) for i in sorted(like)]
        out.append((t["id"], "papers", texts, members, like | border))
        for d in t["descriptions"]:
            kind = "zh" if any(_HAN[0] <= ord(c) <= _HAN[1] for c in d) else "en"
            out.append((t["id"], kind, [d], members | like, border))
    return out


def _scores(method: str, analyzer: Callable[[str], list[str]], corpus: list[str],
            examples: list[str]) -> Any:  # fmt: skip
    """Return a score per corpus paper for a query, by method: "max"/"centroid" are
    feeds.match.similar itself (cosine over the languages both texts have), "plain max"/"plain
    centroid" the usual cosine over whole vectors, "svm" arxiv-sanity's classifier."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC

    if method in ("max", "centroid"):
        df = S.add(S.empty(), corpus)
        topic = S.LikeTopic(tuple(S.Example(str(j), t) for j, t in enumerate(examples)))
        scores = np.zeros(len(corpus))
        for s in S.similar(df, [topic], corpus, floor=-1.0, method=method)[0]:  # type: ignore[arg-type]
            scores[s.index] = s.score
        return scores
    vec = TfidfVectorizer(analyzer=analyzer, sublinear_tf=True, smooth_idf=True, norm="l2")
    x = vec.fit_transform(corpus)
    e = vec.transform(examples)
    if method == "plain max":
        return (x @ e.T).toarray().max(axis=1)
    if method == "plain centroid":
        c = np.asarray(e.mean(axis=0))
        c /= np.linalg.norm(c) or 1.0
        return np.asarray(x @ c.T).ravel()
    # arxiv-sanity-lite: the examples against every paper of the corpus, a linear SVM
    from scipy import sparse

    train = sparse.vstack([x, e]).tocsr()
    y = np.r_[np.zeros(x.shape[0]), np.ones(e.shape[0])]
    clf = LinearSVC(class_weight="balanced", max_iter=10000, tol=1e-6, C=0.01)
    clf.fit(train, y)
    return clf.decision_function(x)


def _ap(scores: Any, positives: set[int], ignored: set[int]) -> float:
    order = [i for i in sorted(range(len(scores)), key=lambda i: -scores[i]) if i not in ignored]
    hits, total = 0, 0.0
    for rank, i in enumerate(order, 1):
        if i in positives:
            hits += 1
            total += hits / rank
    return total / len(positives)


def evaluate() -> None:
    papers, topics = labelled()
    corpus = [S.paper_text(p) for p in papers]
    queries = _queries(papers, topics)
    print(f"labelled set: {len(papers)} papers, {len(topics)} topics, {len(queries)} queries")
    print("\nmean average precision (ranking quality, no threshold), by kind of example:")
    print("| method | tokens | papers | zh description | en description | all |")
    print("| --- | --- | --- | --- | --- | --- |")
    kept: dict[tuple[str, str], list[Any]] = {}
    for method in ("max", "centroid", "plain max", "plain centroid", "svm"):
        for name, analyzer in ANALYZERS.items():
            if method in ("max", "centroid") and name != "bigrams":
                continue  # feeds.match.similar has one tokenizer
            aps: dict[str, list[float]] = {"papers": [], "zh": [], "en": []}
            runs = []
            for _tid, kind, ex, pos, ign in queries:
                s = _scores(method, analyzer, corpus, ex)
                aps[kind].append(_ap(s, pos, ign))
                runs.append((s, pos, ign, kind))
            kept[method, name] = runs
            mean = {k: sum(v) / len(v) for k, v in aps.items()}
            every = sum(sum(v) for v in aps.values()) / len(queries)
            print(f"| {method} | {name} | {mean['papers']:.2f} | {mean['zh']:.2f} | "
                  f"{mean['en']:.2f} | {every:.2f} |")  # fmt: skip
    print("\nprecision / recall / F1 at thresholds (all queries pooled; bigrams):")
    for method, grid in (
        ("max", (0.06, 0.08, 0.09, 0.10, 0.11, 0.12, 0.15, 0.20)),
        ("centroid", (0.06, 0.08, 0.09, 0.10, 0.11, 0.12, 0.15, 0.20)),
        ("plain max", (0.06, 0.08, 0.10, 0.12, 0.15)),
    ):
        print(
            f"\n{method}:\n| threshold | found | hits | strays | P | R | F1 | R papers | "
            "R zh | R en |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        )
        for th in grid:
            tp = fp = fn = 0
            by_kind: dict[str, list[int]] = {"papers": [0, 0], "zh": [0, 0], "en": [0, 0]}
            for s, pos, ign, kind in kept[method, "bigrams"]:
                found = {i for i in range(len(s)) if s[i] >= th} - ign
                tp += len(found & pos)
                fp += len(found - pos)
                fn += len(pos - found)
                by_kind[kind][0] += len(found & pos)
                by_kind[kind][1] += len(pos)
            p = tp / (tp + fp) if tp + fp else 1.0
            r = tp / (tp + fn)
            f1 = 2 * p * r / (p + r) if p + r else 0.0
            rk = {k: v[0] / v[1] for k, v in by_kind.items()}
            print(f"| {th:.2f} | {tp + fp} | {tp} | {fp} | {p:.2f} | {r:.2f} | {f1:.2f} | "
                  f"{rk['papers']:.2f} | {rk['zh']:.2f} | {rk['en']:.2f} |")  # fmt: skip
    # The engine itself (hashed features, incremental counts) on the same queries.
    df = S.add(S.empty(), corpus)
    print(f"\nfeeds.match.similar at its defaults ({S.DEFAULT_METHOD}, "
          f"min_similarity {S.DEFAULT_MIN_SIMILARITY}):")  # fmt: skip
    for tid, kind, ex, pos, ign in queries:
        topic = S.LikeTopic(tuple(S.Example(f"ex{j}", t) for j, t in enumerate(ex)))
        found = {s.index for s in S.similar(df, [topic], papers)[0] if s.passes} - ign
        strays = sorted(papers[i].title[:40] for i in found - pos)
        missed = sorted(papers[i].title[:40] for i in pos - found)
        print(f"  {tid:26} {kind:6} hits {len(found & pos)}/{len(pos)}  strays {strays}  "
              f"missed {missed}")  # fmt: skip


# --- speed ----------------------------------------------------------------------------------


def synthetic(n: int, start: int = 0, per_file: int = 500, seed: int = 1) -> list[Paper]:
    """Return n synthetic papers as benchmarks/generate.py makes them, parsed."""
    papers: list[Paper] = []
    for file_no in range(start // per_file, -(-(start + n) // per_file)):
        rng = _file_rng(seed, file_no)
        first = file_no * per_file
        text = generate_digest(rng, first, min(per_file, start + n - first), "ICML")
        papers += [p for _l, p in parse(text.encode(), f"{file_no}.txt").papers]
    return papers


def like_topics(papers: Sequence[Paper], n: int, seed: int = 1) -> list[S.LikeTopic]:
    """Return n like-topics: two example papers each; a third with a Chinese description,
    a fifth with an unlike example."""
    rng = random.Random(f"paperfeeds-like:{seed}")
    topics = []
    for _ in range(n):
        like = [S.Example.of_paper(p) for p in rng.sample(list(papers), 2)]
        summary = rng.choice(papers).summary or "推测解码"
        if rng.random() < 0.3:
            at = rng.randrange(max(1, len(summary) - 8))
            like.append(S.Example.description(summary[at : at + 8]))
        unlike = ()
        if rng.random() < 0.2:
            unlike = (S.Example.of_paper(rng.choice(papers)),)
        topics.append(S.LikeTopic(tuple(like), unlike))
    return topics


def timed(fn: Callable[..., Any], *args: Any, **kw: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn(*args, **kw)
    return result, time.perf_counter() - start


def speed(n_papers: int, n_topics: int) -> None:
    print(f"like-topics benchmark: {n_papers:,} papers, {n_topics} like-topics "
          f"(and {n_topics} narrow keyword topics for the baseline)")  # fmt: skip
    S.similar(S.add(S.empty(), ["warm up"]), like_topics([], 0), ["imports"])  # sklearn loaded
    papers, gen_s = timed(synthetic, n_papers)
    print(f"generated and parsed in {gen_s:.1f}s")
    texts = [S.paper_text(p) for p in papers]
    topics = like_topics(papers, n_topics)
    with tempfile.TemporaryDirectory() as tmp:
        subs = write_topics(Path(tmp) / "subscriptions.yaml", n_topics, 1, narrow=True)
        keyword = [(t.id, t.criteria) for t in load_subscriptions(subs)]
    matcher, kw_build_s = timed(Matcher, keyword)

    def keyword_match(batch: Sequence[Paper]) -> int:
        return sum(len(matcher.match(p)) for p in batch)

    _, kw_s = timed(keyword_match, papers)
    _, tok_s = timed(lambda: [S.tokens(t) for t in texts])
    df, build_s = timed(S.add, S.empty(), texts)
    found, score_s = timed(S.similar, df, topics, papers)
    hits = sum(sum(s.passes for s in r) for r in found)
    print(f"\nkeyword matcher: {n_topics} topics, built in {kw_build_s:.2f}s, "
          f"all papers in {kw_s:.2f}s ({n_papers / kw_s:,.0f} papers/s)")  # fmt: skip
    print(f"  floor: tokenizing every paper_text (feeds.match.similar.tokens) {tok_s:.2f}s")
    print(f"build:  document frequencies from scratch {build_s:.2f}s "
          f"({n_papers / build_s:,.0f} papers/s) -> x{build_s / kw_s:.2f} the keyword "
          f"matcher, x{build_s / tok_s:.2f} tokenizing")  # fmt: skip
    print(f"score:  {n_topics} like-topics x all papers {score_s:.2f}s "
          f"({n_papers / score_s:,.0f} papers/s, {hits / n_papers:.2f} matches/paper) "
          f"-> x{score_s / kw_s:.2f} the keyword matcher")  # fmt: skip

    new = synthetic(10, start=n_papers + 1000)
    small_df = S.add(S.empty(), texts[: max(10, n_papers // 100)])

    def increment(base: S.DocFreq) -> None:
        now = S.add(base, [S.paper_text(p) for p in new])
        S.similar(now, topics, new)

    def median(fn: Callable[[], Any], runs: int = 7) -> float:
        times = sorted(timed(fn)[1] for _ in range(runs))
        return times[len(times) // 2]

    inc_small = median(lambda: increment(small_df))
    inc_full = median(lambda: increment(df))
    kw_new = median(lambda: keyword_match(new))
    blob, store_s = timed(S.to_bytes, df)
    _, load_s = timed(S.from_bytes, blob)
    print(f"increment: a 10-paper digest added and scored: {inc_full * 1000:.1f} ms with "
          f"{n_papers:,} papers of history, {inc_small * 1000:.1f} ms with "
          f"{small_df.n_docs:,} (ratio x{inc_full / inc_small:.2f}); keyword matcher "
          f"{kw_new * 1000:.2f} ms")  # fmt: skip
    print(f"  state: document frequencies {len(blob) / 1e6:.1f} MB as bytes, stored in "
          f"{store_s * 1000:.0f} ms, loaded in {load_s * 1000:.0f} ms")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--evaluate", action="store_true", help="quality on the labelled set")
    ap.add_argument("--small", action="store_true", help="2,000 papers, 10 topics: seconds")
    ap.add_argument("--papers", type=int, default=100_000)
    ap.add_argument("--topics", type=int, default=100)
    args = ap.parse_args()
    if args.evaluate:
        evaluate()
        return
    if args.small:
        args.papers, args.topics = 2000, 10
    speed(args.papers, args.topics)


if __name__ == "__main__":
    main()
