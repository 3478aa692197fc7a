"""Fix paraphrase's public score parameters (w, and b2 for the clipped score) on public text only.

The texts are public-domain openings and the bundled example, never a corpus to be released; the
model paraphrases them by plain sampling at temperature 1, and at every step the gaps between the
largest logit and the others are recorded (:func:`textveil.evaluation.width_calibration.calibrate_width`).
w is the smallest width whose floor holds at most ``--mass`` of the model's own probability at the
median step; b2 is the median of the steps' largest logits. Writes one JSON object::

    .venv/bin/python benchmarks/comparisons/calibrate_paraphrase.py --json docs/results/paraphrase/calibration.json
    .venv/bin/python benchmarks/comparisons/calibrate_paraphrase.py --vocabulary all,8000,4000 \
        --prompt paraphrase,neutral
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

PUBLIC_TEXTS = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want "
    "of a wife.",
    "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse, I "
    "thought I would sail about a little and see the watery part of the world.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.",
    "Happy families are all alike; every unhappy family is unhappy in its own way.",
    "In my younger and more vulnerable years my father gave me some advice that I have been turning over in my "
    "mind ever since.",
    "The sun shone, having no alternative, on the nothing new.",
    "Whether I shall turn out to be the hero of my own life, or whether that station will be held by anybody "
    "else, these pages must show.",
    "Marley was dead: to begin with. There is no doubt whatever about that.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mass", type=float, default=1e-3)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--vocabulary", default="all",
                        help="the output vocabulary: all or a size (comma-separated: each)")
    parser.add_argument("--prompt", default="paraphrase", help="the public prompt (comma-separated: each)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from textveil.evaluation.width_calibration import calibrate_width
    from textveil.models.language_model import load_language_model

    sample = Path(__file__).resolve().parents[2] / "examples" / "sample.txt"
    texts = PUBLIC_TEXTS + [p.strip() for p in sample.read_text().split("\n\n") if p.strip()]
    lm = load_language_model(args.model)
    results = []
    for vocabulary in args.vocabulary.split(","):
        for prompt in args.prompt.split(","):
            results.append({"model": lm.name, "texts": len(texts), "mass": args.mass, "vocabulary": vocabulary,
                            "prompt": prompt, "max_new_tokens": args.max_new_tokens,
                            **calibrate_width(lm, texts, mass=args.mass, max_new_tokens=args.max_new_tokens,
                                              vocabulary=vocabulary, prompt=prompt)})
    text = json.dumps(results[0] if len(results) == 1 else results, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
