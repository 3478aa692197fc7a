"""The self-audit: many releases of neighbouring inputs through the public API, the
most distinguishing output event chosen on runs of their own, and a lower bound on the privacy
loss from that event's counts on fresh runs, compared with what the Guarantee claims.

For each :class:`~textveil.evaluation.audit_pairs.AuditCase`, in the manner of DP-Sniper:

1. **Claim.** The Guarantees of the two inputs and the mechanism's view of them give the
   largest loss claimed for the pair (:func:`textveil.privacy.claims.pair_claim`), or none.
2. **Event.** ``trials`` releases of each input train a classifier (logistic regression on
   hashed character n-grams, the whole text and its token count: it sees casing, spacing,
   punctuation and words alike) to tell them apart; on ``trials`` more, the threshold on its
   score (or its complement) whose counts give the largest lower bound is chosen.
3. **Bound.** On ``trials`` fresh releases of each input the event is counted, and
   Clopper-Pearson gives a lower bound on the loss (:func:`textveil.privacy.audit.loss_lower_bound`).
   A case may run fewer releases than the audit's ``trials`` (a real language model's pairs:
   :attr:`~textveil.evaluation.audit_pairs.AuditCase.trials`); its pair records how many.
   The confidence is the audit's as a whole: each of its K claimed pairs is tested at
   ``1 - (1 - confidence) / K`` (Bonferroni), so a mechanism that keeps every claim fails the
   audit with probability at most ``1 - confidence``.
4. **Verdict.** A bound above the claim is a failure; the pair's *power* is the smallest true
   loss above the claim that these trials would have shown, given how likely the event was.

PIVOT's l-privacy is not a likelihood ratio: it is audited by encoding a corpus several times,
each with a fresh key, and running on each encoding the frequency attacker that knows the
mechanism and every word's count; its guesses are scored with the key, and its success on its
best count class is compared with the claim 1/l (:func:`audit_l_privacy`). These are exact
shares on each release: there is no confidence level, power or event count. Mechanisms whose
Guarantee claims nothing are reported as such and never pass.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from textveil.evaluation.audit_pairs import AuditCase
from textveil.privacy.audit import detectable_epsilon, loss_lower_bound
from textveil.privacy.claims import Claim, ReleaseView, pair_claim

AUDIT_SCHEMA = "textveil.audit/1"
THRESHOLDS = 256
"""Candidate thresholds on the classifier's score, at its quantiles on the choosing runs."""

Progress = Callable[[int], None]
"""Called with the number of releases just made."""


@dataclass(frozen=True)
class PairResult:
    """What the audit found for one pair."""

    kind: str
    setting: str
    first: str
    second: str
    claim: float | None
    claim_reason: str
    bound: float
    confidence: float | None
    power: float | None
    event_first: int | None
    event_second: int | None
    trials: int | None
    verdict: str
    """``"pass"``, ``"fail"``, or ``"no claim"`` (the Guarantee says nothing about this pair)."""
    note: str = ""
    measured: dict[str, Any] | None = None
    """An l-privacy row's own measurements (its encoding's code words, tokens, worst count class,
    tokens decoded); None for a pair of releases. Such a row has no confidence, power, event
    counts or trials (all None): its numbers are exact shares on one release."""

    @property
    def passed(self) -> bool | None:
        return None if self.verdict == "no claim" else self.verdict == "pass"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = self.passed
        if self.power is not None and math.isinf(self.power):
            data["power"] = None  # JSON has no infinity: null beside a claim means no violation was detectable
        if self.measured is None:
            del data["measured"]
        return data


@dataclass
class AuditReport:
    """A whole audit: per pair, and the verdict."""

    mechanism: str
    guarantee: str
    parameters: dict[str, Any]
    confidence: float
    trials: int
    pairs: list[PairResult] = field(default_factory=list)
    seconds: float = 0.0
    seeded: bool = False
    l_privacy: dict[str, Any] | None = None
    """An l-privacy audit's account of itself: the corpus, the number of encodings, the attacker,
    and its success pooled over every encoding (:func:`audit_l_privacy`)."""

    @property
    def claimed(self) -> list[PairResult]:
        return [p for p in self.pairs if p.verdict != "no claim"]

    @property
    def passed(self) -> bool:
        """Every claimed pair kept its claim, and there was at least one: a mechanism that claims
        nothing never passes."""
        return bool(self.claimed) and all(p.verdict == "pass" for p in self.claimed)

    @property
    def verdict(self) -> str:
        if self.guarantee == "none":
            return "no formal guarantee: nothing to audit (risk is measured only, by 'textveil evaluate')"
        if not self.claimed:
            return "no pair was covered by a claim: nothing was audited"
        if self.guarantee == "l-privacy":
            return l_privacy_verdict(self.claimed)
        failed = [p for p in self.claimed if p.verdict == "fail"]
        if failed:
            return f"FAILED: {len(failed)} of {len(self.claimed)} claims refuted at {self.confidence:.0%} confidence"
        return f"passed: {len(self.claimed)} claims kept at {self.confidence:.0%} confidence"

    @property
    def power(self) -> PairResult | None:
        """The claimed pair on which the audit would have shown the smallest violation (its power
        minus its claim, in nats), or None when no pair could have shown one."""
        able = [p for p in self.claimed if p.power is not None and math.isfinite(p.power)]
        return min(able, key=lambda p: p.power - (p.claim or 0.0), default=None)

    def to_dict(self) -> dict[str, Any]:
        strongest = self.power
        power = None if strongest is None else {
            "pair": strongest.kind, "setting": strongest.setting, "claim": strongest.claim,
            "detectable_loss": strongest.power, "detectable_excess": strongest.power - (strongest.claim or 0.0)}
        data = {"schema": AUDIT_SCHEMA, "mechanism": self.mechanism, "guarantee": self.guarantee,
                "parameters": self.parameters, "passed": self.passed, "verdict": self.verdict,
                "confidence": self.confidence, "trials": self.trials, "seeded": self.seeded,
                "seconds": round(self.seconds, 2), "power": power, "pairs": [p.to_dict() for p in self.pairs]}
        if self.l_privacy is not None:
            # the audit encodes and attacks; no releases of input pairs, no confidence: said so in the data too
            data["l_privacy"] = self.l_privacy
            data["confidence"] = None
        return data


def l_privacy_verdict(rows: Sequence[PairResult]) -> str:
    """The verdict of an l-privacy audit, in its own terms: a share of right guesses against 1/l."""
    worst = max(rows, key=lambda row: row.bound)
    claim = worst.claim or 0.0
    failed = [row for row in rows if row.verdict == "fail"]
    if failed:
        return (f"FAILED: on {len(failed)} of {len(rows)} encodings the frequency attacker's best guess was right "
                f"{worst.bound:.3f} of the time, above the claim 1/l = {claim:.3f}")
    return (f"passed: on each of {len(rows)} encodings the frequency attacker's best guess was right at most "
            f"{worst.bound:.3f} of the time (claim: 1/l = {claim:.3f})")


# -- the experiment ---------------------------------------------------------------------


def run_audit(mechanism: Any, cases: Sequence[AuditCase], *, trials: int = 5000, confidence: float = 0.99,
              seed: int | None = None, progress: Progress | None = None,
              corpus: Sequence[str] | None = None) -> AuditReport:
    """Audit ``mechanism`` on ``cases`` (see the module's docstring). Each pair costs ``6 * trials``
    releases (``trials`` of each input per stage, or the case's own smaller number:
    :func:`releases_needed`); ``seed`` makes the audit reproducible, otherwise its randomness is
    OS entropy. ``corpus`` is what an l-privacy audit releases."""
    from textveil.errors import InvalidParameterError

    if trials < 20:
        raise InvalidParameterError(f"--trials must be at least 20 (got {trials}): fewer releases prove nothing")
    if not 0.5 <= confidence < 1:
        raise InvalidParameterError(f"--confidence must lie in [0.5, 1), got {confidence}")
    started = time.perf_counter()
    kind = mechanism.spec().guarantee
    report = AuditReport(mechanism.name, kind, mechanism.public_params(), confidence, trials, seeded=seed is not None)
    streams = np.random.SeedSequence(seed).spawn(max(len(cases), 1))
    if kind == "l-privacy":
        report.pairs, report.l_privacy = audit_l_privacy(mechanism, corpus or (), streams[0], progress)
    elif kind != "none":
        claims = [case_claim(case) for case in cases]
        each = 1 - (1 - confidence) / max(1, sum(c.made for c in claims))
        report.pairs = [audit_pair(case, claim, case.trials_of(trials), each, stream, progress)
                        for case, claim, stream in zip(cases, claims, streams)]
    report.seconds = time.perf_counter() - started
    return report


def releases_needed(cases: Sequence[AuditCase], trials: int) -> int:
    """How many releases :func:`run_audit` makes for ``cases`` at ``trials`` (for a progress bar)."""
    return sum(6 * case.trials_of(trials) for case in cases)


def case_claim(case: AuditCase) -> Claim:
    """What the Guarantee claims for the case's pair."""
    mechanism = case.mechanism
    first, second = mechanism.sanitize_many([case.pair.first, case.pair.second])
    views = [release_view(mechanism, text) for text in (case.pair.first, case.pair.second)]
    vectors: list[np.ndarray | None] = [None, None]
    if first.guarantee.kind == "metric":
        vectors = [mechanism.unit_vectors(list(view.units)) for view in views]
    return pair_claim(first.guarantee, second.guarantee, views[0], views[1], vectors[0], vectors[1])


def release_view(mechanism: Any, text: str) -> ReleaseView:
    """``text`` as the mechanism's Guarantee sees it: the mechanism's own ``release_view``."""
    own = getattr(mechanism, "release_view", None)
    if own is not None:
        return own(text)
    from textveil.errors import InputError

    raise InputError(f"{mechanism.name} does not say how its release sees an input (no release_view): its claims "
                     "cannot be audited pair by pair")


def audit_pair(case: AuditCase, claim: Claim, trials: int, confidence: float, stream: np.random.SeedSequence,
               progress: Progress | None = None) -> PairResult:
    """One pair: releases, the chosen event, its counts and the verdict."""
    pair = case.pair
    seed = int(stream.generate_state(1, np.uint64)[0] >> np.uint64(1))
    engine = case.mechanism.with_params(seed=seed)

    def releases() -> tuple[list[str], list[str]]:
        made = []
        for text in (pair.first, pair.second):
            made.append([r.text for r in engine.sanitize_many([text] * trials)])
            if progress is not None:
                progress(trials)
        return made[0], made[1]

    train = releases()
    choose = releases()
    count = releases()
    score = release_classifier(*train)
    event = choose_event(score(choose[0]), score(choose[1]), trials, confidence)
    hits_first = int(event(score(count[0])).sum())
    hits_second = int(event(score(count[1])).sum())
    bound = loss_lower_bound(hits_first, hits_second, trials, confidence).epsilon
    power = None
    if claim.made:
        likelier = max(hits_first, hits_second, 1) / trials
        power = detectable_epsilon(likelier, trials, confidence, above=claim.epsilon or 0.0)
        verdict = "fail" if bound > (claim.epsilon or 0.0) else "pass"
    else:
        verdict = "no claim"
    return PairResult(pair.kind, case.setting, pair.first, pair.second, claim.epsilon, claim.reason, bound,
                      confidence, power, hits_first, hits_second, trials, verdict, pair.note)


# -- choosing the event -------------------------------------------------------------------


def _release_features(text: str) -> list[str]:
    """What the classifier reads of a release: character 1- to 4-grams (casing, spacing and
    punctuation included), the whole text, and its number of space-separated pieces."""
    padded = f"\x02{text}\x03"
    grams = [padded[i:i + n] for n in range(1, 5) for i in range(len(padded) - n + 1)]
    return [*grams, "\x00text:" + text, f"\x00pieces:{len(text.split())}"]


def release_classifier(first: Sequence[str], second: Sequence[str]) -> Callable[[Sequence[str]], np.ndarray]:
    """A score for "released from the first input" learned from releases of each: logistic
    regression on hashed features (:func:`_release_features`)."""
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = HashingVectorizer(analyzer=_release_features, n_features=2 ** 18, alternate_sign=False)
    features = vectorizer.transform([*first, *second])
    labels = np.r_[np.ones(len(first)), np.zeros(len(second))]
    model = LogisticRegression(C=10.0, max_iter=2000, solver="liblinear").fit(features, labels)
    return lambda texts: model.decision_function(vectorizer.transform(list(texts)))


def choose_event(first: np.ndarray, second: np.ndarray, trials: int, confidence: float
                 ) -> Callable[[np.ndarray], np.ndarray]:
    """The event (score at least a threshold, or below it) whose counts on these choosing runs
    give the largest lower bound on the loss; returned as a test on scores."""
    pooled = np.concatenate([first, second])
    candidates = np.unique(np.quantile(pooled, np.linspace(0, 1, THRESHOLDS)))
    best_bound, best = -1.0, (float(candidates[0]), True)
    for threshold in candidates:
        above_first = int((first >= threshold).sum())
        above_second = int((second >= threshold).sum())
        for at_least, a, b in ((True, above_first, above_second), (False, trials - above_first, trials - above_second)):
            bound = loss_lower_bound(a, b, trials, confidence).epsilon
            if bound > best_bound:
                best_bound, best = bound, (float(threshold), at_least)
    threshold, at_least = best
    return (lambda scores: scores >= threshold) if at_least else (lambda scores: scores < threshold)


# -- l-privacy ------------------------------------------------------------------------------


def audit_l_privacy(mechanism: Any, corpus: Sequence[str], stream: np.random.SeedSequence,
                    progress: Progress | None = None, runs: int = 3
                    ) -> tuple[list[PairResult], dict[str, Any]]:
    """PIVOT's claim, measured: encode ``corpus`` ``runs`` times, each with a fresh key, and attack
    each encoding with the frequency attacker that knows the mechanism and every word's count.

    It sees each code word's count and guesses the word that owns the most code words of that
    count in the count classes the mechanism makes of the word counts (code words of one count
    are exchangeable to it: no guess from the counts does better); the guesses are scored with
    the key. Its success on the count class where it does best must be at most 1/l. Returns one
    row per encoding and the audit's account (the corpus, the attacker, and the success pooled
    over every encoding, ``overall``)."""
    from textveil.attacks.frequency import majority_matching, released_counts, score_recovery

    given = bool(corpus)
    texts = list(corpus) or default_l_privacy_corpus(np.random.default_rng(stream.spawn(1)[0]))
    claim = 1.0 / mechanism.l
    reason = f"l-privacy: the best frequency guess of any code word is right with probability <= 1/l = {claim:.4f}"
    rows, scored = [], []
    for number, run in enumerate(stream.spawn(runs), 1):
        engine = mechanism.with_params(seed=int(run.generate_state(1, np.uint64)[0] >> np.uint64(1)))
        encoding = engine.encode(texts)
        decoder = encoding.key.decoder
        counts = released_counts([release.text.split() for release in encoding.releases])
        # the count classes the mechanism's plan makes of every word's count, as this attacker computes them
        parts: dict[str, list[int]] = {}
        for code, count in counts.items():
            parts.setdefault(decoder[code], []).append(count)
        slots = [(word, float(size)) for word, sizes in parts.items() for size in sizes]
        guesses = majority_matching(counts, slots)
        score = score_recovery([(guesses, decoder, counts)], min_class=1)
        scored.append((guesses, decoder, counts))
        if progress is not None:
            progress(len(texts))
        worst = float(score.max_class_success or 0.0)
        measured = _l_privacy_measured(score)
        rows.append(PairResult(
            "frequency-analysis", f"key {number} of {runs}", f"the corpus ({len(texts):,} texts, {score.tokens:,} tokens)",
            f"its encoding under key {number}", claim, reason, worst, None, None, None, None, None,
            "pass" if worst <= claim + 1e-12 else "fail",
            "claim and measured success are probabilities of a right guess (exact shares on the release), not losses",
            measured))
    overall = score_recovery(scored, min_class=1)
    account = {
        "encodings": runs,
        "corpus": {"texts": len(texts), "tokens": rows[0].measured["tokens"] if rows else 0,
                   "source": "given" if given else "default",
                   "description": "the corpus given" if given else (
                       "the default corpus, drawn with English word frequencies: wordfreq's commonest 3,000 words")},
        "attacker": "knows the mechanism and every word's count; guesses, for each code word, the word that owns the "
                    "most code words of its count; scored with the key",
        "claim": claim,
        "overall": {**_l_privacy_measured(overall), "success": float(overall.max_class_success or 0.0)},
        "same_for_every_key": len({(row.bound, row.measured["tokens_decoded"], row.measured["code_words"])
                                   for row in rows}) == 1,
    }
    return rows, account


def _l_privacy_measured(score: Any) -> dict[str, Any]:
    """What an l-privacy row shows of a scored frequency attack."""
    size, right = score.class_success.get(score.max_class, (0, 0)) if score.max_class is not None else (0, 0)
    return {"code_words": score.code_words, "tokens": score.tokens, "word_types": score.word_types,
            "worst_class_count": score.max_class, "worst_class_code_words": size, "worst_class_right": right,
            "tokens_decoded": score.tokens_recovered}


def default_l_privacy_corpus(rng: np.random.Generator, texts: int = 400, words: int = 25) -> list[str]:
    """A corpus whose word counts follow English (wordfreq's commonest 3,000 words): what PIVOT is
    audited on when the user gives no corpus."""
    from wordfreq import top_n_list, word_frequency

    vocabulary = top_n_list("en", 3000)
    weights = np.array([word_frequency(w, "en") for w in vocabulary])
    drawn = rng.choice(len(vocabulary), size=(texts, words), p=weights / weights.sum())
    return [" ".join(vocabulary[i] for i in row) for row in drawn]
