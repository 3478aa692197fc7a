"""The full privacy audit (issue 12) of every shipped mechanism, timed.

Each configuration below is built as ``textveil sanitize`` would build it, audited by
:func:`textveil.evaluation.audit.run_audit` on the pairs the library chooses for it
(:func:`textveil.evaluation.audit_pairs.audit_cases`: the canary vocabulary for substitution
mechanisms, then token, layout and Earth Mover's pairs over its own vocabulary), and written as
``audit.json``, ``audit.md`` and ``audit.png`` in a folder of its own under ``--out``; the
folder's ``README.md`` gets the summary table (and ``summary.json`` the same as data).

Configurations:

* ``emp`` at epsilon 10: the public layout, ``layout=keep`` (casing, spacing and punctuation
  copied: those pairs are not covered by the claim) and ``output=bag`` (paper 001's Theorem 4);
* ``random`` (Random-R: claims epsilon 0, the release must not depend on the input);
* ``syntf`` at epsilon 2 (tf-idf rating, the public idf: nothing is fitted), at epsilon 2 with
  ``rating=similarity``, and at epsilon 10 (the same claims grow, so the audit's power to see a
  violation above them falls);
* ``erae`` and ``aedp``: the trained models of paper 002 (``--models``, default
  ``../paper002/models``, beside the checkout) at epsilon 2; where they do not load, tiny ones are trained here
  from ``../shared/data/blog_short`` (300 texts, hidden 32, one epoch; kept in memory only) and
  the summary says so;
* ``paraphrase`` at epsilon 30 (L = 64, the bundled SmolLM2-135M-Instruct): its canary (epsilon
  4, L = 1, a toy language model with hand-set logits: the claim is nearly tight there) and two
  pairs of real texts released by the model itself, at most 50 releases per input and stage
  (about a text a second on a CPU: some ten minutes); skipped, and said so, where the model is
  not installed;
* ``pivot`` at l = 5 and l = 10: l-privacy, audited by the frequency attacker on the default
  corpus (400 texts with English word frequencies), three keys;
* ``redact``, ``translate`` and ``synth``: no formal guarantee, reported as such and never
  passed (``synth`` is built untrained: the audit releases nothing for a mechanism that claims
  nothing; ``translate`` is reported the same way whether or not Apertium is installed).

Run from the project root (one BLAS/torch thread on a shared 2-core machine)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/privacy/bench_audit.py                 # everything, 5,000 trials
    .venv/bin/python benchmarks/privacy/bench_audit.py --only emp,pivot-l5 --trials 200 --seed 1 --out /tmp/audit

``--only`` takes configuration names (``emp``, ``emp-keep``, ``syntf-eps2``, ...) or mechanism
names (``syntf`` selects its three configurations). Without ``--seed`` the randomness is OS
entropy (the summary records which). Progress goes to stderr; a rerun with ``--only`` replaces
those configurations' rows in the summary and keeps the others'.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py

from bench_common import machine_info, peak_rss_mib  # noqa: E402

DEFAULT_OUT = ROOT / "docs" / "results" / "audit"
# paper 002's models, where benchmarks/papers/paper002_blog_short.sh trains them
DEFAULT_MODELS = ROOT.parent / "paper002" / "models"
BLOG_SHORT = ROOT.parent / "shared" / "data" / "blog_short" / "blog_short.jsonl"
TINY_TEXTS = 300


@dataclass(frozen=True)
class Config:
    """One audited configuration: a folder name, the mechanism and its parameters."""

    slug: str
    mechanism: str
    params: dict[str, Any] = field(default_factory=dict)
    why: str = ""
    trained: bool = False
    """A trained model (``--models``/NAME), loaded then given ``params``."""

    def cli(self, trials: int, seed: int | None, models: Path) -> str:
        """The equivalent ``textveil audit`` command (its report in a fresh folder: ``--report``
        refuses one that already holds an audit)."""
        parts = ["textveil", "audit", "-m", self.mechanism]
        if self.trained:
            parts += ["--model", str(models / self.mechanism)]
        for name, value in self.params.items():
            if name == "epsilon":
                parts += ["--epsilon", f"{value:g}"]
            elif name == "layout":
                parts += ["--layout", str(value)]
            elif name == "output" and value == "bag":
                parts += ["--bag-of-words"]
            else:
                parts += ["--set", f"{name}={value}"]
        parts += ["--trials", str(trials)]
        if seed is not None:
            parts += ["--seed", str(seed)]
        return " ".join(parts + ["--report", f"/tmp/audit-{self.slug}"])


CONFIGS = (
    Config("emp", "emp", {"epsilon": 10.0}, "public layout (the default)"),
    Config("emp-keep", "emp", {"epsilon": 10.0, "layout": "keep"}, "the input's layout copied, unprotected"),
    Config("emp-bag", "emp", {"epsilon": 10.0, "output": "bag"}, "sorted bag of content words (Theorem 4)"),
    Config("random", "random", {}, "Random-R: claims epsilon 0"),
    Config("syntf-eps2", "syntf", {"epsilon": 2.0}, "tf-idf rating, public idf"),
    Config("syntf-eps2-similarity", "syntf", {"epsilon": 2.0, "rating": "similarity"}, "similarity rating"),
    Config("syntf-eps10", "syntf", {"epsilon": 10.0}, "tf-idf rating: larger claims, less power"),
    Config("erae", "erae", {"epsilon": 2.0}, "paper 002's trained ER-AE", trained=True),
    Config("aedp", "aedp", {"epsilon": 2.0}, "paper 002's trained AE-DP", trained=True),
    Config("erae-two-set", "erae", {"epsilon": 2.0, "sampler": "two-set"}, "ER-AE with the two-set sampler of "
           "the authors' code: claims ln(1 + e^(eps/2)) + ln N + 0.05 per token", trained=True),
    Config("aedp-two-set", "aedp", {"epsilon": 2.0, "sampler": "two-set"}, "AE-DP with the two-set sampler",
           trained=True),
    Config("paraphrase", "paraphrase", {"epsilon": 30.0}, "DP-Prompt on the bundled SmolLM2-135M (L = 64); its "
           "canary on a toy LM"),
    Config("pivot-l5", "pivot", {"l": 5}, "l-privacy, default corpus"),
    Config("pivot-l10", "pivot", {"l": 10}, "l-privacy, default corpus"),
    Config("redact", "redact", {}, "no formal guarantee"),
    Config("translate", "translate", {}, "no formal guarantee"),
    Config("synth", "synth", {}, "no formal guarantee (untrained: nothing is released)"),
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- building the mechanisms ----------------------------------------------------------------


class Builder:
    """Builds each configuration's mechanism, loading the embeddings once."""

    def __init__(self, models: Path) -> None:
        self.models = models
        self._embeddings: Any = None
        self.notes: dict[str, str] = {}

    @property
    def embeddings(self) -> Any:
        if self._embeddings is None:
            from textveil.embeddings.default_model import load_embeddings

            self._embeddings = load_embeddings()
        return self._embeddings

    def build(self, config: Config) -> Any:
        from textveil.mechanisms.registry import MECHANISMS, make_mechanism

        if config.trained:
            return self._trained(config)
        wants_embeddings = "embeddings" in getattr(MECHANISMS.load(config.mechanism), "resources", ())
        shared = {"embeddings": self.embeddings} if wants_embeddings else None
        return make_mechanism(config.mechanism, shared=shared, **config.params)

    def _trained(self, config: Config) -> Any:
        from textveil.mechanisms.base import Mechanism

        folder = self.models / config.mechanism
        try:
            model = Mechanism.load(folder, embeddings=self.embeddings)
            self.notes[config.slug] = f"trained model `{folder}` (trained parameters: {_trained_summary(model)})"
        except Exception as error:  # noqa: BLE001 - any failure to load means: train a tiny one instead
            log(f"[{config.slug}] cannot load {folder} ({type(error).__name__}: {error}); training a tiny one")
            model = self._tiny(config.mechanism)
            self.notes[config.slug] = (f"TINY model trained here ({folder} did not load: {type(error).__name__}): "
                                       f"{TINY_TEXTS} blog_short texts, {_trained_summary(model)}")
        return model.with_params(**config.params)

    def _tiny(self, name: str) -> Any:
        from textveil.mechanisms.registry import make_mechanism

        texts = [json.loads(line)["text"] for line in BLOG_SHORT.read_text(encoding="utf-8").splitlines()[:TINY_TEXTS]]
        extra = {"pretrain_epochs": 0} if name == "erae" else {}
        model = make_mechanism(name, shared={"embeddings": self.embeddings}, epsilon=2.0, hidden=32, layers=1,
                               epochs=1, vocabulary_size=3000, max_length=20, batch_size=32, seed=1, **extra)
        started = time.perf_counter()
        model.train(texts[:-30], texts[-30:])
        log(f"[{name}] tiny model trained in {time.perf_counter() - started:.0f} s")
        return model


def _trained_summary(model: Any) -> str:
    params = model.get_params()
    keys = ("hidden", "layers", "vocabulary_size", "max_length", "epochs")
    return ", ".join(f"{k} {params[k]}" for k in keys if k in params)


# -- progress -------------------------------------------------------------------------------


def progress_printer(slug: str, total: int | None) -> Callable[[int], None]:
    """A ``run_audit`` progress callback that prints releases made, rate and ETA to stderr, at
    most every 30 seconds (and at the end)."""
    state = {"done": 0, "started": time.perf_counter(), "last": 0.0}

    def advance(made: int) -> None:
        state["done"] += made
        now = time.perf_counter()
        elapsed = now - state["started"]
        finished = total is not None and state["done"] >= total
        if now - state["last"] < 30 and not finished:
            return
        state["last"] = now
        rate = state["done"] / max(elapsed, 1e-9)
        if total:
            eta = (total - state["done"]) / max(rate, 1e-9)
            log(f"[{slug}] {state['done']:,}/{total:,} releases ({state['done'] / total:.0%}), {rate:,.0f}/s, "
                f"{elapsed:.0f} s elapsed, ~{eta:.0f} s left")
        else:
            log(f"[{slug}] {state['done']:,} texts encoded, {elapsed:.0f} s elapsed")

    return advance


# -- one configuration ------------------------------------------------------------------------


def audit_one(config: Config, builder: Builder, args: argparse.Namespace) -> dict[str, Any] | None:
    from textveil.errors import InputError
    from textveil.evaluation.audit import releases_needed, run_audit
    from textveil.evaluation.audit_pairs import audit_cases
    from textveil.evaluation.audit_report import write_audit_report
    from textveil.mechanisms.registry import MECHANISMS

    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        mechanism = builder.build(config)
    except InputError as error:
        missing = MECHANISMS.load(config.mechanism).unavailable()
        if missing is None:
            raise
        log(f"[{config.slug}] skipped: {config.mechanism} cannot run here ({missing}; {error})")
        return None
    unavailable = type(mechanism).unavailable()
    kind = mechanism.spec().guarantee
    cases = audit_cases(mechanism) if kind in ("metric", "dp") else []
    setup = time.perf_counter() - started
    total = releases_needed(cases, args.trials) if cases else None
    log(f"[{config.slug}] {config.mechanism} {config.params or ''}: guarantee {kind}, {len(cases)} pairs"
        + (f", {total:,} releases" if total else "") + (f"; unavailable here: {unavailable}" if unavailable else ""))
    report = run_audit(mechanism, cases, trials=args.trials, confidence=args.confidence, seed=args.seed,
                       progress=progress_printer(config.slug, total))
    data = report.to_dict()
    write_audit_report(data, args.out / config.slug)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    row = summary_row(config, data, seconds=seconds, setup_seconds=setup, cpu_seconds=cpu, trials=args.trials,
                      confidence=args.confidence, seed=args.seed, unavailable=unavailable,
                      note=builder.notes.get(config.slug, ""), models=args.models)
    log(f"[{config.slug}] {data['verdict']} in {seconds:.0f} s")
    for failure in row["failures"]:
        log(f"[{config.slug}]   FAILED pair {failure['kind']} ({failure['setting']}): {failure['first']!r} / "
            f"{failure['second']!r}, claim {failure['claim']:.4g}, bound {failure['bound']:.4g}")
    return row


def summary_row(config: Config, data: dict[str, Any], *, seconds: float, setup_seconds: float | None,
                cpu_seconds: float | None, trials: int, confidence: float, seed: int | None,
                unavailable: str | None, note: str, models: Path) -> dict[str, Any]:
    """One configuration's line of the summary, from its audit's JSON form."""
    kind = data["guarantee"]
    claimed = [p for p in data["pairs"] if p["verdict"] != "no claim"]
    powers = [p["power"] for p in claimed if p["power"] is not None]  # null: no violation was detectable
    failed = [p for p in claimed if p["verdict"] == "fail"]
    return {
        "slug": config.slug, "mechanism": config.mechanism, "configured": config.params, "why": config.why,
        "parameters": data["parameters"], "guarantee": kind, "verdict": data["verdict"], "passed": data["passed"],
        "pairs": len(data["pairs"]), "claimed": len(claimed), "kept": len(claimed) - len(failed),
        "failed": len(failed), "no_claim": len(data["pairs"]) - len(claimed),
        "power_min": min(powers) if powers else None, "power_max": max(powers) if powers else None,
        "power_unbounded": sum(1 for p in claimed if p["power"] is None and kind != "l-privacy"),
        "failures": [{k: p[k] for k in ("kind", "setting", "first", "second", "claim", "claim_reason", "bound",
                                        "event_first", "event_second", "trials")} for p in failed],
        "audit_seconds": round(data["seconds"], 1),
        "setup_seconds": None if setup_seconds is None else round(setup_seconds, 1), "seconds": round(seconds, 1),
        "cpu_seconds": None if cpu_seconds is None else round(cpu_seconds, 1),
        "trials": trials, "confidence": confidence, "seed": seed, "unavailable": unavailable,
        "note": note, "command": config.cli(trials, seed, models),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def collect(out: Path, models: Path) -> dict[str, dict[str, Any]]:
    """Rows for the audits already written in ``out`` (an interrupted run's, or another run's
    copied in) that summary.json lacks: their time is the audit's own (``seconds`` in its JSON)."""
    summary = out / "summary.json"
    rows = {r["slug"]: r for r in json.loads(summary.read_text())["configurations"]} if summary.exists() else {}
    for config in CONFIGS:
        found = out / config.slug / "audit.json"
        if config.slug in rows or not found.exists():
            continue
        data = json.loads(found.read_text())
        rows[config.slug] = summary_row(
            config, data, seconds=data["seconds"], setup_seconds=None, cpu_seconds=None, trials=data["trials"],
            confidence=data["confidence"], seed=None, unavailable=None, note="collected from its audit.json",
            models=models)
    return rows


# -- the summary ------------------------------------------------------------------------------


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _cpu(row: dict[str, Any]) -> str:
    return "-" if row.get("cpu_seconds") is None else f"{row['cpu_seconds']:.0f}"


def _params(row: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in row["configured"].items())
    return f"{row['mechanism']} ({shown})" if shown else row["mechanism"]


def _power_cell(row: dict[str, Any]) -> tuple[str, str]:
    if row["guarantee"] == "l-privacy":
        return "n/a", "n/a"
    if not row["claimed"]:
        return "-", "-"
    low, high = _num(row["power_min"]), _num(row["power_max"])
    if row["power_unbounded"]:
        high = "inf"  # some pair could show no violation at all with these trials
        if row["power_min"] is None:
            low = "inf"
    return low, high


def write_summary(out: Path, rows: dict[str, dict[str, Any]], run: dict[str, Any]) -> None:
    from textveil.atomic_files import atomic_write_text
    from textveil.evaluation.audit_pairs import LANGUAGE_MODEL_TRIALS

    ordered = [rows[c.slug] for c in CONFIGS if c.slug in rows]
    atomic_write_text(out / "summary.json", json.dumps({"last_run": run, "configurations": ordered}, indent=2))
    header = ["configuration", "mechanism and parameters", "guarantee", "verdict", "claimed pairs", "passed / failed",
              "smallest power", "largest power", "seconds", "CPU seconds"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in ordered:
        low, high = _power_cell(row)
        verdict = row["verdict"]
        if row["guarantee"] == "none":
            verdict = "no formal guarantee (never passed)"
        elif row["failed"]:
            verdict = "**" + verdict + "**"
        kept = f"{row['kept']} / {row['failed']}" if row["claimed"] else "-"
        lines.append(f"| [`{row['slug']}`]({row['slug']}/audit.md) | {_params(row)} | {row['guarantee']} | {verdict} "
                     f"| {row['claimed']} | {kept} | {low} | {high} | {row['seconds']:.0f} | {_cpu(row)} |")
    trials = sorted({row["trials"] for row in ordered})
    seeds = sorted({str(row["seed"]) for row in ordered})
    mixed = len({row.get("run_started") for row in ordered}) > 1
    machine = run["machine"]
    failures = [(row, f) for row in ordered for f in row["failures"]]
    notes = [f"* `{row['slug']}`: {row['note']}" for row in ordered if row["note"]]
    notes += [f"* `{row['slug']}`: unavailable on this machine ({row['unavailable']}); reported as no guarantee all the "
              "same" for row in ordered if row["unavailable"]]
    text = [
        "# The privacy audit of every shipped mechanism (issue 12)", "",
        "Made by `benchmarks/privacy/bench_audit.py` (`make bench-audit`): each configuration is audited by "
        "`textveil.evaluation.audit.run_audit` on the pairs `audit_cases` chooses for it, and its folder holds the "
        "audit's `audit.json`, `audit.md` (every pair: claim, audited lower bound, power, event counts) and "
        "`audit.png` (claimed against audited). `summary.json` holds this table as data.", "",
        f"Trials per input and stage: {', '.join(f'{t:,}' for t in trials)} (three stages: train, choose, count"
        + (f"; paraphrase's real-text pairs at most {LANGUAGE_MODEL_TRIALS}, its model being slow"
           if any(row["mechanism"] == "paraphrase" for row in ordered) else "") + "); "
        f"confidence {run['confidence']:.0%} per audit (Bonferroni over its claimed pairs); seed: "
        + ", ".join("OS entropy (not reproducible)" if s == "None" else s for s in seeds) + ".", "",
        "\n".join(lines), "",
        "*claimed pairs*: pairs the Guarantee makes a claim for (the others differ in what the release copies "
        "unprotected, e.g. the layout under `layout=keep`, and prove nothing either way); *power*: the smallest true "
        "privacy loss above a pair's claim that these trials would have shown (nats; smallest and largest over the "
        "claimed pairs; inf: some pair could show no violation at all, its event being too rare); for PIVOT the "
        "claim and the measured value are probabilities of a right frequency guess (1/l), measured exactly, so it "
        "has no power column. `redact`, `translate` and `synth` claim nothing: they are reported as such and "
        "never pass. *seconds*: wall-clock, from building the mechanism to its written report; *CPU seconds*: this "
        "process's CPU time over the same span (far less than the wall-clock: the machine was busy with other work, "
        "or the process was paused).", "",
    ]
    if failures:
        text += ["## Failed claims", ""]
        for row, f in failures:
            text.append(f"* `{row['slug']}`, pair {f['kind']} ({f['setting']}): {f['first']!r} against "
                        f"{f['second']!r}: claim {f['claim']:.4g} ({f['claim_reason']}), audited lower bound "
                        f"{f['bound']:.4g} (event {f['event_first']} / {f['event_second']} of {f['trials']}).")
        text.append("")
    if notes:
        text += ["## Notes", "", *notes, ""]
    gpu = "no GPU" if not run.get("gpu") else f"GPU: {run['gpu']}"
    text += [
        "## Machine and time", "",
        f"{machine['cpu']}, {machine['usable_cpus']} usable cores of {machine['logical_cpus']}, "
        f"{machine['ram_gib']} GiB, {gpu}; {machine['os']}, Python {machine['python']}, numpy {machine['numpy']}; "
        f"OMP_NUM_THREADS={run['omp_num_threads']}; load average at start {machine['load_average_1min_at_start']} "
        "(other people's work shares the machine: times are wall-clock).", "",
        f"Last run: {run['started']} to {run['finished']}, whole process {run['process_seconds']:.0f} s "
        f"({run['process_seconds'] / 60:.1f} min, imports and embeddings included; peak memory "
        f"{run['peak_rss_mib']:.0f} MiB"
        + (f", {run['process_cpu_seconds']:.0f} CPU seconds" if run.get("process_cpu_seconds") is not None else "")
        + f"), configurations: {', '.join(run['configurations'])}."
        + (" Rows of other configurations come from earlier runs (their `finished` time is in `summary.json`)."
           if mixed else ""), "",
        *[f"{remark}\n" for remark in run.get("remarks", ())],
        "## How to rerun", "",
        "```",
        run["command"],
        "```", "",
        "Options: `--trials N` (default 5,000), `--only NAME,...` (configuration or mechanism names), `--out DIR`, "
        "`--seed N` (default: OS entropy), `--models DIR` (ER-AE and AE-DP). The same audit of one configuration "
        "through the command line (equivalent, with a progress bar and exit status 0 only when it passed; a fresh "
        "`--report` folder):", "",
        "```",
        *[row["command"] for row in ordered],
        "```", "",
    ]
    atomic_write_text(out / "README.md", "\n".join(text))


def _selected(only: str | None) -> list[Config]:
    if not only:
        return list(CONFIGS)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    chosen = [c for c in CONFIGS if c.slug in wanted or c.mechanism in wanted]
    unknown = [n for n in wanted if not any(n in (c.slug, c.mechanism) for c in CONFIGS)]
    if unknown or not chosen:
        sys.exit(f"--only: unknown configuration(s) {', '.join(unknown) or '(none given)'}; "
                 f"choose among {', '.join(c.slug for c in CONFIGS)} or a mechanism name")
    return chosen


def _gpu() -> str | None:
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001
        return None


def main() -> None:
    process_started = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5000, help="releases of each input per stage (default 5000)")
    parser.add_argument("--confidence", type=float, default=0.99, help="confidence of each audit (default 0.99)")
    parser.add_argument("--only", help="comma-separated configuration or mechanism names (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder (default docs/results/audit)")
    parser.add_argument("--seed", type=int, default=None, help="seed of every audit (default: OS entropy)")
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS, help="folder of the trained erae/ aedp/")
    parser.add_argument("--remark", action="append", default=[], help="a sentence for the summary's time section")
    parser.add_argument("--rewrite-summary", action="store_true",
                        help="audit nothing: write README.md again from summary.json (with any --remark)")
    parser.add_argument("--collect", action="store_true",
                        help="audit nothing: add the audits in --out that summary.json lacks (an interrupted run's), "
                             "then write README.md")
    args = parser.parse_args()
    if args.collect:
        summary = args.out / "summary.json"
        run = json.loads(summary.read_text())["last_run"] if summary.exists() else {
            "command": "(collected)", "configurations": [], "machine": machine_info(), "remarks": []}
        if args.remark:
            run["remarks"] = args.remark
        write_summary(args.out, collect(args.out, args.models), run)
        log(f"collected the audits in {args.out}; summary in {args.out / 'README.md'}")
        return
    if args.rewrite_summary:
        stored = json.loads((args.out / "summary.json").read_text())
        run = stored["last_run"]
        if args.remark:
            run["remarks"] = args.remark
        write_summary(args.out, {row["slug"]: row for row in stored["configurations"]}, run)
        log(f"rewrote {args.out / 'README.md'} from summary.json")
        return
    configs = _selected(args.only)
    args.out.mkdir(parents=True, exist_ok=True)
    machine = machine_info()  # the load average at the start
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    argv = " ".join(shlex.quote(a) for a in sys.argv[1:])
    threads = os.environ.get("OMP_NUM_THREADS")
    command = ((f"OMP_NUM_THREADS={threads} " if threads else "")
               + f".venv/bin/python benchmarks/privacy/bench_audit.py {argv}")
    log(f"audit of {len(configs)} configuration(s), {args.trials:,} trials, confidence {args.confidence}, seed "
        f"{args.seed if args.seed is not None else 'OS entropy'}, OMP_NUM_THREADS={threads}")

    previous: dict[str, dict[str, Any]] = {}
    summary = args.out / "summary.json"
    if summary.exists():
        try:
            previous = {row["slug"]: row for row in json.loads(summary.read_text())["configurations"]}
        except (ValueError, KeyError, TypeError):
            previous = {}
    builder = Builder(args.models)
    rows = dict(previous)
    for config in configs:
        row = audit_one(config, builder, args)
        if row is None:  # its mechanism cannot run on this machine
            continue
        row["run_started"] = started
        rows[config.slug] = row
    run = {
        "command": command, "argv": sys.argv[1:], "started": started,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "process_seconds": round(time.perf_counter() - process_started, 1),
        "process_cpu_seconds": round(time.process_time(), 1), "trials": args.trials,
        "confidence": args.confidence, "seed": args.seed, "configurations": [c.slug for c in configs],
        "omp_num_threads": threads, "machine": machine, "gpu": _gpu(), "peak_rss_mib": round(peak_rss_mib(), 1),
        "remarks": args.remark,
    }
    write_summary(args.out, rows, run)
    failed = [row["slug"] for row in rows.values() if row["failed"]]
    log(f"done in {run['process_seconds']:.0f} s; summary in {args.out / 'README.md'}"
        + (f"; FAILED: {', '.join(failed)}" if failed else ""))


if __name__ == "__main__":
    main()
