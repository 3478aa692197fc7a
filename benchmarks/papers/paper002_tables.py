"""Paper 002's Tables 2 and 3 from two trained models: AE-DP (reconstruction only) and ER-AE.

Table 2 (the generator's ratings): for the first ``--count`` inputs of 8 to 30 tokens that
hold at least two content words, at the first two steps whose original token is a content
word (alphabetic, more than 3 letters), the 5 vocabulary entries each model's generator rates
highest there (``top_candidates``: the softmax probabilities rho_i(x, w) of eq. 5, which the
release then flattens by exp(epsilon * rho / 2)). Below it, a summary over all the inputs (at
most ``--summary-limit``, default 500): per model, the mean probability of the original token
and the mean mass on the 5 most probable other tokens, over every in-vocabulary step and over
content-word steps; the embedding reward should move mass from the original token to its
neighbours. The last column is what that does to a release at ``--epsilon``: the mean
probability that the exponential mechanism draws the original token back.

Table 3 (samples): the same inputs and their releases by AE-DP and ER-AE at ``--epsilon``
(both seeded with ``--seed``; each release is (epsilon x tokens)-DP).

Train the two models first, e.g.::

    textveil train aedp --corpus splits/train.jsonl --out models/aedp --set hidden=256 ... --seed 1
    textveil train erae --corpus splits/train.jsonl --out models/erae --set hidden=256 ... --seed 1

then, from the project root::

    .venv/bin/python benchmarks/papers/paper002_tables.py --aedp models/aedp --erae models/erae \\
        --inputs splits/evaluation.jsonl --epsilon 20 --seed 1 [--count 4] [--out tables.md]

Give texts the models were not trained on (an evaluation split): the script says so when an
input was in a model's training data.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from textveil.errors import TextveilError

MIN_TOKENS, MAX_TOKENS = 8, 30
STEPS_PER_INPUT = 2
TOP = 5
RATING_BATCH_TOKENS = 1024
"""Steps rated at once in the summary (a row is the whole vocabulary, in float64)."""


def read_texts(path: Path, field: str) -> list[str]:
    """Every text of a corpus, read as textveil reads any input."""
    from textveil.corpus.reading import expand_inputs, read_documents

    return [d.text for d in read_documents(expand_inputs([str(path)]), field)]


def is_content(token: str) -> bool:
    return token.isalpha() and len(token) > 3


def content_steps(units: list[str]) -> list[int]:
    return [i for i, unit in enumerate(units) if is_content(unit)][:STEPS_PER_INPUT]


def cell(text: str) -> str:
    """Text for a markdown table cell: one line, pipes escaped."""
    return re.sub(r"\s+", " ", text).strip().replace("|", "\\|")


def probability(p: float) -> str:
    if p >= 0.01:
        return f"{p:.2f}"
    if p >= 0.001:
        return f"{p:.3f}"
    return f"{p:.0e}"


def candidates(shown: list[tuple[str, float]]) -> str:
    return cell(", ".join(f"{word} {probability(p)}" for word, p in shown))


def rating_summary(model: Any, texts: list[str], epsilon: float) -> dict[str, dict[str, float]]:
    """Mean Pr[original], mean mass on the top-5 other tokens and mean Pr[release = original]
    at ``epsilon``, over every in-vocabulary step and over content-word steps."""
    from textveil.models.autoencoder import SPECIALS, encode_tokens, segments
    from textveil.text.layout import release_units

    index = {str(token): row for row, token in enumerate(model.vocabulary_)}
    sums = {kind: np.zeros(3) for kind in ("all", "content")}
    counts = {"all": 0, "content": 0, "steps": 0, "unknown": 0}

    def rate(pieces: list[list[int]], flags: list[bool]) -> None:
        rows = model.ratings(pieces)[:, len(SPECIALS):]
        ids = np.array([i for piece in pieces for i in piece]) - len(SPECIALS)
        content = np.array(flags)
        counts["steps"] += len(ids)
        known = ids >= 0  # <unk> (and no other special) stands for an out-of-vocabulary token
        counts["unknown"] += int((~known).sum())
        rows, ids, content = rows[known], ids[known], content[known]
        if not len(ids):
            return
        steps = np.arange(len(ids))
        original = rows[steps, ids].copy()
        scores = 0.5 * epsilon * rows
        scores -= scores.max(axis=1, keepdims=True)
        weights = np.exp(scores)
        kept = weights[steps, ids] / weights.sum(axis=1)
        rows[steps, ids] = -1.0
        top = min(TOP, rows.shape[1] - 1)
        others = -np.partition(-rows, top - 1, axis=1)[:, :top].sum(axis=1) if top > 0 else np.zeros(len(ids))
        figures = np.stack([original, others, kept], axis=1)
        sums["all"] += figures.sum(axis=0)
        sums["content"] += figures[content].sum(axis=0)
        counts["all"] += len(ids)
        counts["content"] += int(content.sum())

    pieces: list[list[int]] = []
    flags: list[bool] = []
    for text in texts:
        units = release_units(text)
        for piece in segments(encode_tokens(units, index), model.max_length):
            pieces.append(piece)
        flags += [is_content(unit) for unit in units]
        if len(flags) >= RATING_BATCH_TOKENS:
            rate(pieces, flags)
            pieces, flags = [], []
    if pieces:
        rate(pieces, flags)
    result: dict[str, Any] = {"steps": counts["steps"], "unknown": counts["unknown"]}
    for kind in ("all", "content"):
        mean = sums[kind] / counts[kind] if counts[kind] else np.full(3, np.nan)
        result[kind] = {"tokens": counts[kind], "original": float(mean[0]), "top5_others": float(mean[1]),
                        "release_keeps": float(mean[2])}
    return result


def describe(model: Any) -> str:
    history = getattr(model, "history_", None) or []
    reward = sum(1 for h in history if h.get("reward"))
    return (f"hidden {model.hidden}, layers {model.layers}, vocabulary {len(model.vocabulary_):,}, "
            f"{len(history)} epoch{'' if len(history) == 1 else 's'} ({reward} with the embedding reward)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aedp", type=Path, required=True, help="folder of a trained aedp model")
    parser.add_argument("--erae", type=Path, required=True, help="folder of a trained erae model")
    parser.add_argument("--inputs", type=Path, required=True, help="JSONL texts (an evaluation split)")
    parser.add_argument("--text-field", default="text")
    parser.add_argument("--epsilon", type=float, default=20.0, help="epsilon of the Table 3 releases (default 20)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=4, help="inputs shown in Tables 2 and 3 (default 4)")
    parser.add_argument("--summary-limit", type=int, default=500, help="inputs in the rating summary (default 500)")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--out", type=Path, help="write the markdown here (default: standard output)")
    args = parser.parse_args(argv)

    if not args.inputs.is_file():
        print(f"error: inputs '{args.inputs}' not found; give a JSONL file of texts", file=sys.stderr)
        return 2
    if args.count < 1 or args.summary_limit < 1:
        print("error: --count and --summary-limit must be at least 1", file=sys.stderr)
        return 2
    try:
        texts = read_texts(args.inputs, args.text_field)
    except (ValueError, OSError, TextveilError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    from textveil.embeddings.default_model import load_embeddings
    from textveil.mechanisms.autoencoder import IN_TRAINING_DATA
    from textveil.mechanisms.base import Mechanism
    from textveil.text.layout import release_units

    embeddings = load_embeddings()
    models: dict[str, Any] = {}
    try:
        for label, folder, name in (("AE-DP", args.aedp, "aedp"), ("ER-AE", args.erae, "erae")):
            model = Mechanism.load(folder, embeddings=embeddings, device=args.device)
            if model.name != name:
                print(f"error: '{folder}' holds a saved {model.name} model, not {name}", file=sys.stderr)
                return 2
            models[label] = model.with_params(epsilon=args.epsilon, seed=args.seed)
    except TextveilError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    chosen: list[tuple[str, list[str], list[int]]] = []
    for text in texts:
        units = release_units(text)
        steps = content_steps(units)
        if MIN_TOKENS <= len(units) <= MAX_TOKENS and len(steps) == STEPS_PER_INPUT:
            chosen.append((text, units, steps))
            if len(chosen) == args.count:
                break
    if not chosen:
        print(f"error: no input in '{args.inputs}' has {MIN_TOKENS} to {MAX_TOKENS} tokens and "
              f"{STEPS_PER_INPUT} content words", file=sys.stderr)
        return 2

    out: list[str] = [
        "# Paper 002: Tables 2 and 3 (AE-DP against ER-AE)", "",
        f"- AE-DP: `{args.aedp}` ({describe(models['AE-DP'])})",
        f"- ER-AE: `{args.erae}` ({describe(models['ER-AE'])})",
        f"- inputs: `{args.inputs}` ({len(texts):,} texts); epsilon {args.epsilon:g}, seed {args.seed}", "",
        "## Table 2: the generator's top-5 candidates", "",
        f"The first {len(chosen)} inputs of {MIN_TOKENS} to {MAX_TOKENS} tokens; at each, the first "
        f"{STEPS_PER_INPUT} steps whose original token is a content word (alphabetic, more than 3 letters). "
        "Probabilities are the generator's softmax ratings, before the exponential mechanism.", "",
        "| input | step (original) | AE-DP | ER-AE |", "|---|---|---|---|",
    ]
    ratings = {label: [model.top_candidates(text, top=TOP) for text, _, _ in chosen] for label, model in models.items()}
    vocabularies = {label: {str(t) for t in model.vocabulary_} for label, model in models.items()}
    for number, (text, units, steps) in enumerate(chosen):
        for row, step in enumerate(steps):
            missing = [label for label in models if units[step] not in vocabularies[label]]
            note = f", not in the {' / '.join(missing)} vocabulary" if missing else ""
            shown = [candidates(ratings[label][number][step][1]) for label in models]
            out.append(f"| {cell(text) if row == 0 else ''} | {step + 1} ({cell(units[step])}{note}) "
                       f"| {shown[0]} | {shown[1]} |")

    summary_texts = texts[:args.summary_limit]
    summaries = {label: rating_summary(model, summary_texts, args.epsilon) for label, model in models.items()}
    out += [
        "", f"Summary over the first {len(summary_texts):,} inputs: mean probability of the original token, "
        f"mean mass on the {TOP} most probable other tokens, and the mean probability that a release at "
        f"epsilon {args.epsilon:g} keeps the original token (exp(epsilon * rho / 2) over the vocabulary). "
        "Steps whose original token is out of the vocabulary are left out.", "",
        f"| model | steps | tokens | Pr[original] | top-{TOP} others' mass | Pr[release keeps it] at epsilon "
        f"{args.epsilon:g} |", "|---|---|---:|---:|---:|---:|",
    ]
    for label, summary in summaries.items():
        for kind, title in (("all", "all tokens"), ("content", "content words")):
            figures = summary[kind]
            out.append(f"| {label} | {title} | {figures['tokens']:,} | {figures['original']:.3f} "
                       f"| {figures['top5_others']:.3f} | {figures['release_keeps']:.3f} |")
    out.append("")
    out += [f"{label}: {s['unknown']:,} of {s['steps']:,} steps ({s['unknown'] / max(1, s['steps']):.1%}) are out "
            "of its vocabulary." for label, s in summaries.items()]

    releases = {label: model.sanitize_many([text for text, _, _ in chosen]) for label, model in models.items()}
    out += [
        "", f"## Table 3: samples at epsilon {args.epsilon:g} (seed {args.seed})", "",
        "| # | tokens | input | AE-DP | ER-AE |", "|---:|---:|---|---|---|",
    ]
    for number, (text, units, _) in enumerate(chosen):
        out.append(f"| {number + 1} | {len(units)} | {cell(text)} | {cell(releases['AE-DP'][number].text)} "
                   f"| {cell(releases['ER-AE'][number].text)} |")
    out.append("")
    out.append(f"Each release is ({args.epsilon:g} x tokens)-DP (paper 002, Theorem 1).")
    seen = [label for label, items in releases.items()
            if any(IN_TRAINING_DATA in r.guarantee.unprotected for r in items)]
    if seen:
        out.append(f"Warning: some of these inputs were in the {' and '.join(seen)} training data; the guarantee "
                   "does not cover them, and the ratings flatter the model. Use held-out texts.")

    document = "\n".join(out) + "\n"
    if args.out:
        args.out.write_text(document, encoding="utf-8")
        print(f"written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(document)
    return 0


if __name__ == "__main__":
    sys.exit(main())
