"""Realistic synthetic digests and subscriptions for benchmarks, built from the seed digests.

    python benchmarks/generate.py digests OUT_DIR --papers 100000 [--per-file 500] [--seed 1]
    python benchmarks/generate.py topics OUT.yaml --topics 1000 [--seed 1]

Digests are in exactly the seed format. Every synthetic paper starts from a seed paper:
its English title gets words swapped, replaced and inserted from the vocabulary of all
seed titles, its Chinese title and summary get 2-character fragments replaced and swapped,
its authors and institutions are drawn from the seed pools, its comments from the seed
comments (now and then with a synthetic GitHub or project-page link).

Every title carries one made-up method name (`Kovami3`: consonant-vowel syllables and a
digit) that encodes the paper's index. No seed title word has that shape, so two papers
with different indices never have the same identity (normalized English title).

Output depends only on the seed (and the seed digests), not on --jobs: every file has its
own random generator, seeded from (seed, file number).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

SEEDS_DIR = Path(__file__).resolve().parent.parent / "seeds"
# A year of digests across venues, roughly in proportion to their paper counts (the seeds
# are ICML digests; other venues are the same papers renamed).
VENUES = (
    ("NeurIPS", 0.25), ("ICML", 0.2), ("ICLR", 0.2), ("CVPR", 0.15), ("ACL", 0.1),
    ("AAAI", 0.1),
)  # fmt: skip
_VENUE_NAMES = {
    "ICML": "International Conference on Machine Learning",
    "NeurIPS": "Conference on Neural Information Processing Systems",
    "ICLR": "International Conference on Learning Representations",
    "CVPR": "Conference on Computer Vision and Pattern Recognition",
    "ACL": "Annual Meeting of the Association for Computational Linguistics",
    "AAAI": "AAAI Conference on Artificial Intelligence",
}

_CONSONANTS = "bdfghklmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = tuple(c + v for c in _CONSONANTS for v in _VOWELS)  # 75, each 2 letters
_CODE_SHAPE = re.compile(f"^(?:[{_CONSONANTS}][{_VOWELS}])+[0-9]$", re.IGNORECASE)
_HAN = re.compile(r"[\u4e00-\u9fff]+")
_HAN_OR_NOT = re.compile(r"[\u4e00-\u9fff]+|[^\u4e00-\u9fff]+")
_NOT_WORD = re.compile(r"[\W_]+")
_REPO_JUNK = re.compile(r"[^A-Za-z0-9_.-]+")
_EDGE_PUNCT = "\"'()[]{},.;:?!$"
_STOP = (
    "a an and are as at be beyond by can does for from how in into is it its meets not of on "
    "one or the their to towards via what when with without you your about add all cannot "
    "don't enables isn't needs stop up after another"
)
_STOPWORDS = frozenset(_STOP.split())


_CAPITALIZED = tuple(s.capitalize() for s in _SYLLABLES)
_DECORATION = tuple(str((d * 7 + 3) % 10) for d in range(10))
_MULTIPLIER = 180_181  # prime to 75: multiplying by it permutes 0 .. 75**L - 1
_SMALL = len(_SYLLABLES) ** 3


def method_name(index: int) -> str:
    """Return the made-up method name of paper `index`, unique per index: e.g. 'Kolamu3'.

    An index below 75**L (L >= 3) is spelled with L syllables, the digits in base 75 of
    index * 180181 mod 75**L: a bijection, so names are unique and neighbours look unrelated.
    The final digit is decoration.
    """
    if 0 <= index < _SMALL:  # the common case, unrolled
        v = index * _MULTIPLIER % _SMALL
        return (
            _CAPITALIZED[v % 75] + _SYLLABLES[v // 75 % 75] + _SYLLABLES[v // 5625]
        ) + _DECORATION[index % 10]
    if index < 0:
        raise ValueError("paper index must be >= 0")
    base = len(_SYLLABLES)
    size = 3
    while index >= base**size:
        size += 1
    value = index * _MULTIPLIER % base**size
    syllables = []
    for _ in range(size):
        value, s = divmod(value, base)
        syllables.append(_SYLLABLES[s])
    return "".join(syllables).capitalize() + _DECORATION[index % 10]


# --- the seed corpus ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Base:
    """One seed paper, pre-split for fast perturbation."""

    name: str | None  # "MineDraft" in "MineDraft: A Framework ..."
    words: tuple[str, ...]  # the English title without the name
    zh: tuple[str, ...]  # Chinese title split in Han 2-grams and other runs
    zh_slots: tuple[int, ...]  # indices of zh that are Han 2-grams (never the first part)
    zh_named: bool  # the Chinese title starts with the name
    summary: tuple[str, ...]
    summary_slots: tuple[int, ...]
    n_authors: int
    n_institutions: int


@dataclass(frozen=True)
class Corpus:
    bases: tuple[_Base, ...]
    title_words: tuple[str, ...]  # words of all seed titles, as written (with repeats)
    fragments: tuple[str, ...]  # Han 2-grams of the seeds' Chinese titles and summaries
    han_runs: tuple[str, ...]  # runs of Han characters, for 2-4 character topic terms
    zh_texts: tuple[str, ...]  # per seed paper: Chinese title and summary
    authors: tuple[str, ...]
    institutions: tuple[str, ...]  # formatted `Name（中文）` entries
    institution_terms: tuple[str, ...]  # short names to subscribe to: `KAIST`, `清华大学`
    comments: tuple[str, ...]  # seed comments without URLs
    journal_refs: tuple[str, ...]
    surnames: tuple[str, ...]  # for GitHub owners


def _split_han(text: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    parts: list[str] = []
    slots: list[int] = []
    for m in _HAN_OR_NOT.finditer(text):
        run = m.group()
        if not _HAN.fullmatch(run):
            parts.append(run)
            continue
        for i in range(0, len(run), 2):
            chunk = run[i : i + 2]
            if len(chunk) == 2 and parts:  # the first part stays: `机构：` must not appear
                slots.append(len(parts))
            parts.append(chunk)
    return tuple(parts), tuple(slots)


def _is_name(token: str) -> bool:
    """True for a method name like MineDraft, DAPD, MVR-cache, LLM4Cov; False for Position."""
    return (
        any(c.isdigit() or c == "-" for c in token) or any(c.isupper() for c in token[1:])
    ) and " " not in token


def _short_institution(name: str) -> str:
    """Return the part of an institution one would subscribe to: `Tsinghua University`."""
    parts = [p.strip() for p in re.split("[,，]", name) if p.strip()]
    for p in parts:
        if any(w in p for w in ("University", "Institute", "College", "大学", "学院", "研究院")):
            return p
    return parts[-1] if parts else name


def load_corpus(seeds_dir: Path | None = None) -> Corpus:
    """Read the seed digests with the real parser and pool their parts."""
    from feeds.sources.digest import looks_like_authors, parse

    files = sorted(Path(seeds_dir or SEEDS_DIR).glob("*.txt"))
    papers = [p for f in files for _, p in parse(f.read_bytes(), str(f)).papers]
    if not papers:
        raise SystemExit(f"no seed papers in {seeds_dir or SEEDS_DIR}")

    bases: list[_Base] = []
    title_words: list[str] = []
    fragments: list[str] = []
    han_runs: list[str] = []
    authors: dict[str, None] = {}
    institutions: dict[str, None] = {}
    institution_terms: dict[str, None] = {}
    comments: dict[str, None] = {}
    journal_refs: dict[str, None] = {}
    for p in papers:
        words = p.title.split()
        name = None
        if words[0].endswith(":") and _is_name(words[0][:-1]):
            name = words[0][:-1]
            words = words[1:]
        for token in _NOT_WORD.sub(" ", p.title).split():
            if _CODE_SHAPE.match(token):
                raise SystemExit(f"seed title word {token!r} looks like a generated name")
        title_words += [w.strip(_EDGE_PUNCT) for w in words if w.strip(_EDGE_PUNCT)]
        zh = p.title_zh or ""
        summary = p.summary or ""
        if name:
            summary = summary.replace(name, "\x00")  # becomes the synthetic name
        zh_named = bool(name) and zh.startswith(name)
        if zh_named:
            zh = zh[len(name or "") :]
        zh_parts, zh_slots = _split_han(zh)
        summary_parts, summary_slots = _split_han(summary)
        for text in (zh, summary):
            for run in _HAN.findall(text):
                han_runs.append(run)
                fragments += [run[i : i + 2] for i in range(0, len(run) - 1, 2)]
        bases.append(
            _Base(
                name,
                tuple(words),
                zh_parts,
                zh_slots,
                zh_named,
                summary_parts,
                summary_slots,
                len(p.authors),
                len(p.institutions),
            )
        )
        authors.update(dict.fromkeys(a for a in p.authors if looks_like_authors(a)))
        for inst in p.institutions:
            entry = f"{inst.name}（{inst.name_zh}）" if inst.name_zh else inst.name
            institutions[entry] = None
            institution_terms[_short_institution(inst.name)] = None
            if inst.name_zh:
                institution_terms[_short_institution(inst.name_zh)] = None
        if p.comments and "http" not in p.comments and "://" not in p.comments:
            comments[p.comments] = None
        if p.journal_ref:
            journal_refs[p.journal_ref] = None
    author_list = tuple(authors)
    surnames = tuple(sorted({_NOT_WORD.sub("", a.split()[-1]).lower() for a in author_list}))
    return Corpus(
        bases=tuple(bases),
        title_words=tuple(title_words),
        fragments=tuple(fragments),
        han_runs=tuple(r for r in han_runs if len(r) >= 2),
        zh_texts=tuple(f"{p.title_zh or ''} {p.summary or ''}" for p in papers),
        authors=author_list,
        institutions=tuple(institutions),
        institution_terms=tuple(institution_terms),
        comments=tuple(comments) or ("Accepted at ICML 2026",),
        journal_refs=tuple(journal_refs) or ("ICML 2026",),
        surnames=tuple(s for s in surnames if s) or ("lab",),
    )


_CORPUS: dict[str, Corpus] = {}


def corpus(seeds_dir: Path | None = None) -> Corpus:
    """Return the (cached) corpus of a seeds folder."""
    key = str(Path(seeds_dir or SEEDS_DIR).resolve())
    if key not in _CORPUS:
        _CORPUS[key] = load_corpus(seeds_dir)
    return _CORPUS[key]


# --- digests --------------------------------------------------------------------------------

_LINK_TEMPLATES = (
    "{c}. Code is available at https://github.com/{o}/{r}",
    "{c}, Code: https://github.com/{o}/{r}",
    "{c}.Code: https://github.com/{o}/{r}",
    "{c}. Our code is released at github.com/{o}/{r}.",
    "{c} (code: https://github.com/{o}/{r})",
    "{c}。代码：https://github.com/{o}/{r}。",
    "{c}. Project page: https://{o}.github.io/{r}/",
)
_SUFFIXES = (" with ", " via ", " using ")


def _perturb(
    parts: tuple[str, ...],
    slots: tuple[int, ...],
    rand: Callable[[], float],
    frags: Sequence[str],
    rate: float,
) -> str:
    """Return parts joined, about `rate` of the slots replaced by fragments, two swapped."""
    ns = len(slots)
    if not ns:
        return "".join(parts)
    out = list(parts)
    nf = len(frags)
    for _ in range(int(ns * rate + rand())):
        out[slots[int(rand() * ns)]] = frags[int(rand() * nf)]
    if ns >= 2:
        a = slots[int(rand() * ns)]
        b = slots[int(rand() * ns)]
        out[a], out[b] = out[b], out[a]
    return "".join(out)


def generate_digest(
    rng: random.Random,
    start_index: int,
    count: int,
    venue: str,
    *,
    seeds_dir: Path | None = None,
) -> str:
    """Return a digest (venue line, then `count` papers numbered from `start_index`)."""
    c = corpus(seeds_dir)
    rand = rng.random
    bases, words, frags = c.bases, c.title_words, c.fragments
    authors, institutions, surnames = c.authors, c.institutions, c.surnames
    comments, refs = c.comments, c.journal_refs
    if venue != "ICML":  # the seeds are ICML digests
        long_name = _VENUE_NAMES.get(venue, venue)

        def rename(text: str) -> str:
            return text.replace(_VENUE_NAMES["ICML"], long_name).replace("ICML", venue)

        comments = tuple(map(rename, comments))
        refs = tuple(map(rename, refs))
    n_bases, n_words, n_authors = len(bases), len(words), len(authors)
    n_inst, n_comments, n_refs, n_surnames = (
        len(institutions),
        len(comments),
        len(refs),
        len(surnames),
    )
    n_links = len(_LINK_TEMPLATES)
    out: list[str] = [venue, "\n\n"]
    put = out.append
    for index in range(start_index, start_index + count):
        b = bases[int(rand() * n_bases)]
        code = method_name(index)

        # English title: swap, replace and insert words; place the name.
        t = list(b.words)
        n = len(t)
        if n >= 3 and rand() < 0.5:
            i = 1 + int(rand() * (n - 2))
            t[i], t[i + 1] = t[i + 1], t[i]
        if n >= 2 and rand() < 0.6:
            t[1 + int(rand() * (n - 1))] = words[int(rand() * n_words)]
        r = rand()
        if r < 0.55:
            t.insert(1 + int(rand() * len(t)), words[int(rand() * n_words)])
            if r < 0.15:
                t.insert(1 + int(rand() * len(t)), words[int(rand() * n_words)])
        body = " ".join(t)
        zh_prefix = ""
        if b.name:
            title = f"{code}: {body}"
            if b.zh_named:
                zh_prefix = code
        elif ":" not in body and rand() < 0.4:
            title = f"{code}: {body}"
            zh_prefix = code + ("：" if rand() < 0.5 else ": ")
        else:
            title = body + _SUFFIXES[int(rand() * 3)] + code
            if title.startswith(("Comments", "Journal")):
                title = f"{code}: {title}"
        zh = _perturb(b.zh, b.zh_slots, rand, frags, 0.15)

        # Authors and institutions from the seed pools (a repeat draw is dropped).
        k = b.n_authors + int(rand() * 3) - 1
        names = dict.fromkeys([authors[int(rand() * n_authors)] for _ in range(max(k, 1))])
        put(f"{title}\n\n{zh_prefix}{zh}\n\n{', '.join(names)}\n\n")
        k = b.n_institutions
        if k and n_inst:
            picked = dict.fromkeys([institutions[int(rand() * n_inst)] for _ in range(k)])
            put(f"机构 * {' ； '.join(picked)} 纠错\n\n")

        summary = _perturb(b.summary, b.summary_slots, rand, frags, 0.12)
        if b.name:
            summary = summary.replace("\x00", code)
        put(f"AI总结 {summary}\n\n")

        r = rand()
        if r < 0.97:
            comment = comments[int(rand() * n_comments)]
            if r < 0.15:
                owner = surnames[int(rand() * n_surnames)]
                if rand() < 0.3:
                    owner += str(int(rand() * 100))
                repo = code.lower() if rand() < 0.7 else _REPO_JUNK.sub("", f"{code}-{t[-1]}")
                template = _LINK_TEMPLATES[int(rand() * n_links)]
                comment = template.format(c=comment, o=owner, r=repo)
            put(f"Comments {comment}\n\n")
        if rand() < 0.05:
            put(f"Journal ref {refs[int(rand() * n_refs)]}\n\n")
    return "".join(out)


def _venue(rng: random.Random) -> str:
    r = rng.random()
    for venue, share in VENUES:
        if r < share:
            return venue
        r -= share
    return VENUES[0][0]


def _file_rng(seed: int, file_no: int) -> random.Random:
    return random.Random(f"paperfeeds-bench:{seed}:{file_no}")


def _write_files(
    out_dir: str, papers: int, per_file: int, seed: int, files: range, seeds_dir: str | None
) -> list[str]:
    written = []
    for file_no in files:
        start = file_no * per_file
        rng = _file_rng(seed, file_no)
        text = generate_digest(
            rng,
            start,
            min(per_file, papers - start),
            _venue(rng),
            seeds_dir=Path(seeds_dir) if seeds_dir else None,
        )
        path = Path(out_dir) / f"{file_no:06d}.txt"
        with open(path, "wb", buffering=1 << 20) as f:
            f.write(text.encode("utf-8"))
        written.append(str(path))
    return written


def write_digests(
    out_dir: Path | str,
    papers: int,
    per_file: int = 500,
    seed: int = 1,
    *,
    jobs: int | None = None,
    seeds_dir: Path | None = None,
) -> list[Path]:
    """Write `papers` papers into OUT_DIR/000000.txt, 000001.txt, ...; return the paths.

    `jobs` processes share the files (default: the number of CPUs); the output is the same
    whatever their number.
    """
    if per_file < 1 or papers < 0:
        raise ValueError("per_file must be >= 1 and papers >= 0")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    corpus(seeds_dir)  # load once, before any fork
    n_files = -(-papers // per_file)
    jobs = max(1, min(jobs or os.cpu_count() or 1, n_files, 64))
    seeds = str(seeds_dir) if seeds_dir else None
    if jobs == 1:
        return [
            Path(p) for p in _write_files(str(out), papers, per_file, seed, range(n_files), seeds)
        ]
    with ProcessPoolExecutor(jobs) as pool:
        parts = [
            pool.submit(
                _write_files, str(out), papers, per_file, seed, range(j, n_files, jobs), seeds
            )
            for j in range(jobs)
        ]
        paths = [Path(p) for part in parts for p in part.result()]
    return sorted(paths)


# --- topics ---------------------------------------------------------------------------------


def _q(text: str) -> str:
    """Return a YAML double-quoted scalar (JSON strings are YAML)."""
    return json.dumps(text, ensure_ascii=False)


def _term_pools(c: Corpus) -> tuple[list[str], list[str]]:
    """Return the English single words and the two-word phrases of the seed titles."""
    singles: dict[str, None] = {}
    phrases: dict[str, None] = {}
    for b in c.bases:
        clean = []
        for w in b.words:
            core = w.strip(_EDGE_PUNCT)
            ok = (
                core == w.rstrip(":,")
                and len(core) >= 3
                and core.lower() not in _STOPWORDS
                and "$" not in core
            )
            clean.append(core if ok else None)
            if ok:
                singles[core if core.isupper() else core.lower()] = None
        for a, z, w in zip(clean, clean[1:], b.words, strict=False):
            if a and z and not w.endswith((":", ",")) and "-" not in a + z:
                phrases[f"{a} {z}".lower()] = None
    return list(singles), list(phrases)


def _english_term(rng: random.Random, singles: list[str], phrases: list[str]) -> str:
    r = rng.random()
    if r < 0.5:
        word = rng.choice(singles)
        if rng.random() < 0.2:  # a prefix term: LLM*, reason*
            if len(word) > 6 and not word.isupper() and "-" not in word and rng.random() < 0.5:
                word = word[: len(word) - rng.randint(1, 3)]
            word += "*"
        return word
    phrase = rng.choice(phrases)
    if rng.random() < 0.25:
        phrase = phrase.replace(" ", "-")
    elif rng.random() < 0.1:
        phrase += "*"
    return phrase


def _chinese_term(rng: random.Random, runs: Sequence[str]) -> str:
    run = rng.choice(runs)
    size = min(len(run), rng.choice((2, 2, 3, 4)))
    start = rng.randrange(len(run) - size + 1)
    return run[start : start + size]


NARROW = False  # set by generate_topics(narrow=True)


def _terms(
    rng: random.Random, n: int, c: Corpus, pools: tuple[list[str], list[str]], common: set[str]
) -> list[str]:
    seen: dict[str, str] = {}
    tries = 0
    while len(seen) < n and tries < n * 10:
        tries += 1
        if NARROW:
            # The seeds' vocabulary is small, so its terms hit a large share of synthetic
            # papers. Narrow topics use prefixes of the made-up method names instead: each
            # matches about 1 paper in 5,600, like a specific term in a real stream.
            term = _CAPITALIZED[rng.randrange(75)].lower() + rng.choice(_SYLLABLES) + "*"
        elif rng.random() < 0.6:
            term = _english_term(rng, *pools)
        else:
            term = _chinese_term(rng, c.han_runs)
            if term in common:
                continue
        seen.setdefault(term.casefold(), term)
    return list(seen.values())


def _common_fragments(c: Corpus, share: float = 0.25) -> set[str]:
    """Return the 2-4 character Han strings found in more than `share` of the seed papers."""
    counts: dict[str, int] = {}
    for text in c.zh_texts:
        grams = {
            run[i : i + k]
            for run in _HAN.findall(text)
            for k in (2, 3, 4)
            for i in range(len(run) - k + 1)
        }
        for g in grams:
            counts[g] = counts.get(g, 0) + 1
    limit = share * len(c.zh_texts)
    return {g for g, n in counts.items() if n > limit}


def _regex(rng: random.Random, singles: list[str]) -> str:
    word = re.sub(r"[^a-z]", "", rng.choice([w for w in singles if w.isalpha()] or ["graph"]))
    forms = (f"/^{word}/", f"/{word}s?/", f"/{word}[- ]?(model|network)s?/")
    return rng.choice(forms)


def generate_topics(
    n: int, seed: int = 1, *, seeds_dir: Path | None = None, narrow: bool = False
) -> str:
    """Return a subscriptions YAML with `n` topics t0000, t0001, ...

    `narrow`: terms are made-up method-name prefixes that each match few papers (realistic
    hit rates), instead of seed vocabulary (which makes every topic match ~20% of papers).
    """
    global NARROW  # noqa: PLW0603 -- a generator switch, set for the duration of one call
    NARROW = narrow
    c = corpus(seeds_dir)
    rng = random.Random(f"paperfeeds-topics:{seed}")
    pools = _term_pools(c)
    common = _common_fragments(c)
    indices = list(range(n))
    venue_only = set(rng.sample(indices, round(n * 0.02)))
    rest = [i for i in indices if i not in venue_only]

    def pick(share: float) -> set[int]:
        return set(rng.sample(rest, min(len(rest), round(n * share))))

    with_none, with_all, with_inst, with_regex = pick(0.2), pick(0.1), pick(0.05), pick(0.01)
    lines = [
        "# Synthetic subscriptions for benchmarks: benchmarks/generate.py topics",
        f"# {n} topics, seed {seed}",
        "topics:",
    ]
    for i in indices:
        tid = f"t{i:04d}"
        lines.append(f"  - id: {tid}")
        if i in venue_only:
            venue = _venue(rng)
            lines += [f"    title: {_q(f'All {venue} papers ({tid})')}", f'    venues: ["{venue}"]']
            continue
        terms = _terms(rng, rng.randint(5, 20), c, pools, common)
        if i in with_regex:
            terms[rng.randrange(len(terms))] = _regex(rng, pools[0])
        first = next((t for t in terms if not t.startswith("/")), terms[0]).rstrip("*")
        lines.append(f"    title: {_q(f'{first[:1].upper()}{first[1:]} ({tid})')}")
        if rng.random() < 0.3:
            lines.append(f"    description: {_q('Papers about ' + ', '.join(terms[:3]))}")
        lines.append(f"    any: [{', '.join(_q(t) for t in terms)}]")
        if i in with_all:
            groups = []
            for _ in range(rng.randint(1, 2)):
                alts = _terms(rng, rng.randint(1, 3), c, pools, common)
                groups.append(_q(alts[0]) if len(alts) == 1 else f"[{', '.join(map(_q, alts))}]")
            lines.append(f"    all: [{', '.join(groups)}]")
        if i in with_none:
            nones = _terms(rng, rng.randint(1, 3), c, pools, common)
            lines.append(f"    none: [{', '.join(map(_q, nones))}]")
        if i in with_inst:
            insts = rng.sample(
                c.institution_terms, min(len(c.institution_terms), rng.randint(1, 3))
            )
            lines.append(f"    institutions: [{', '.join(map(_q, insts))}]")
        if rng.random() < 0.1:
            lines.append("    fields: [title, summary, comments]")
        if rng.random() < 0.05:
            lines.append(f"    max_items: {rng.choice((20, 50, 200))}")
    return "\n".join(lines) + "\n"


def write_topics(
    path: Path | str,
    n: int,
    seed: int = 1,
    *,
    seeds_dir: Path | None = None,
    narrow: bool = False,
) -> Path:
    """Write a subscriptions file with `n` topics; return its path."""
    out = Path(path)
    if out.parent != Path():
        out.parent.mkdir(parents=True, exist_ok=True)
    text = generate_topics(n, seed, seeds_dir=seeds_dir, narrow=narrow)
    out.write_text(text, encoding="utf-8")
    return out


# --- command line ---------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="generate.py", description="Synthetic digests and subscriptions for benchmarks."
    )
    parser.add_argument("--seeds", type=Path, default=None, help="seed digests (default: seeds/)")
    sub = parser.add_subparsers(dest="what", required=True)
    d = sub.add_parser("digests", help="write OUT_DIR/NNNNNN.txt digest files")
    d.add_argument("out_dir", type=Path)
    d.add_argument("--papers", type=int, default=100_000)
    d.add_argument("--per-file", type=int, default=500)
    d.add_argument("--seed", type=int, default=1)
    d.add_argument("--jobs", type=int, default=None, help="processes (default: CPUs)")
    t = sub.add_parser("topics", help="write a subscriptions YAML")
    t.add_argument("out", type=Path)
    t.add_argument("--topics", type=int, default=1000)
    t.add_argument(
        "--narrow", action="store_true", help="specific terms (realistic hit rates); see docs"
    )
    t.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.what == "digests":
        paths = write_digests(
            args.out_dir,
            args.papers,
            args.per_file,
            args.seed,
            jobs=args.jobs,
            seeds_dir=args.seeds,
        )
        size = sum(p.stat().st_size for p in paths)
        print(
            f"{args.papers} papers in {len(paths)} files ({size / 1e6:.1f} MB) "
            f"in {args.out_dir} in {time.perf_counter() - started:.1f}s"
        )
    else:
        write_topics(args.out, args.topics, args.seed, seeds_dir=args.seeds, narrow=args.narrow)
        print(f"{args.topics} topics in {args.out} in {time.perf_counter() - started:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
