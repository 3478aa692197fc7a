"""select-write through its public API on a toy bank, embedder and language model: the plan's
distribution, one epsilon per document whatever the length, seeds, batches, and the writer reading
the plan alone; the bank built reproducibly from public inputs."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from tests.chi_square import pooled_chi_square_pvalue
from textveil.errors import InvalidParameterError
from textveil.mechanisms.plan_selection import SelectionBank, item_probabilities
from textveil.mechanisms.select_write import SelectWrite, document_vectors, document_windows
from textveil.mechanisms.selection_bank import BANK_FORMAT, bank_path, build_bank, load_bank
from textveil.mechanisms.sampling import make_rng
from textveil.models.toy_language_model import toy_language_model

AXES = ["rain", "sun", "storm", "sea", "wind"]
ITEMS = [f"{a} {b}" for a in AXES for b in ("calm", "wild")] + ["sun sea", "storm wind"]


def embed(texts):
    """A toy embedder: counts of the five axis words (plus a little of each, so no vector is zero)."""
    return np.array([[text.split().count(axis) + 0.05 for axis in AXES] for text in texts])


BANK = SelectionBank.from_vectors(ITEMS, embed(ITEMS), np.array([0, 0, 1, 1, 2, 2, 3, 3, 3, 3, 1, 2]), lo=0.2, hi=0.9)
WORDS = AXES + ["calm", "wild", "night", "day"]


@pytest.fixture(scope="module")
def toy():
    return toy_language_model(WORDS, {"rain": {"night": 2.0}, "sun": {"day": 2.0}})


def _mechanism(toy, epsilon: float = 10.0, **params) -> SelectWrite:
    return SelectWrite(epsilon, bank=BANK, embed=embed, language_model=toy, max_new_tokens=5,
                       **{"items": 1, "seed": 4, **params})


def test_the_plans_follow_their_exact_probabilities_through_the_mechanism(toy) -> None:
    """The mechanism reads the document, splits epsilon between the stages and draws: its first
    items follow the two exponential mechanisms exactly (chi-square), and a wrong split is told
    apart (power)."""
    document = "rain rain sea and more rain"
    mechanism = _mechanism(toy, 8.0, cluster_share=0.25)
    parent = make_rng(2)
    rngs = [make_rng(int(s)) for s in parent.integers(0, 2**63, size=20_000)]
    first = np.array([plan[0] for plan in mechanism.plans([document] * len(rngs), rngs)])
    vector = document_vectors([document], embed, 5)[0]
    expected = item_probabilities(vector, BANK, 8.0 * 0.25, 8.0 * 0.75)
    assert pooled_chi_square_pvalue(first, expected) > 1e-3
    assert pooled_chi_square_pvalue(first, item_probabilities(vector, BANK, 8.0 * 0.75, 8.0 * 0.25)) < 1e-3


def test_the_epsilon_per_document_is_fixed_whatever_its_length(toy) -> None:
    mechanism = _mechanism(toy, 30.0, items=3, cluster_share=0.4)
    assert mechanism.epsilon_cluster + mechanism.epsilon_item == pytest.approx(10.0)
    assert 3 * (mechanism.epsilon_cluster + mechanism.epsilon_item) == pytest.approx(30.0)
    short, long = "rain", "storm wind sea " * 3_000
    assert mechanism.planned_spend(short) == mechanism.planned_spend(long) == (30.0, "dp epsilon per document")
    for text in (short, long):
        guarantee = mechanism.sanitize(text).guarantee
        assert (guarantee.kind, guarantee.unit, guarantee.document_epsilon) == ("dp", "document", 30.0)
        assert "epsilon = 4" in guarantee.how and "epsilon = 6" in guarantee.how
        assert guarantee.unprotected_in_general[0].startswith("nothing copied from the input")
    empty = mechanism.sanitize("  \n")
    assert empty.text == "" and empty.guarantee.document_epsilon == 0.0


def test_one_seed_one_release_whatever_the_batch(toy) -> None:
    texts = ["rain rain", "sun sea", "", "storm wind storm"]
    seeds = [5, 6, 7, 8]
    together = _mechanism(toy, items=2).sanitize_records(texts, seeds)
    for text, seed, release in zip(texts, seeds, together):
        assert _mechanism(toy, items=2, seed=seed).sanitize(text).text == release.text
    again = _mechanism(toy, items=2).sanitize_records(texts, [s + 100 for s in seeds])
    assert [r.text for r in again] != [r.text for r in together]


def test_the_writer_reads_the_plan_and_never_the_document(toy, monkeypatch) -> None:
    mechanism = _mechanism(toy, items=2)
    seen = []
    original = type(mechanism.writer).sanitize_records

    def spy(writer, texts, seeds, progress=None):
        seen.extend(texts)
        return original(writer, texts, seeds, progress)

    monkeypatch.setattr(type(mechanism.writer), "sanitize_records", spy)
    mechanism.sanitize_many(["night day rain", "wind"])
    assert len(seen) == 2
    for plan in seen:
        assert "night" not in plan and "day" not in plan
        assert all(any(plan.startswith(item) or f" {item}" in plan for item in ITEMS) for _ in [0])


def test_a_long_document_is_read_in_a_bounded_number_of_windows() -> None:
    big = "word " * 1_200_000  # about 6 MB
    windows = document_windows(big)
    assert len(windows) == 64 and all(len(w.split()) == 128 for w in windows)


def test_bad_parameters_are_refused_in_one_line(toy) -> None:
    with pytest.raises(InvalidParameterError, match="cluster_share"):
        _mechanism(toy, cluster_share=1.0)
    with pytest.raises(InvalidParameterError, match="items"):
        _mechanism(toy, items=0)
    with pytest.raises(InvalidParameterError, match="1 to 12 items"):
        _mechanism(toy, items=13).sanitize("rain")
    with pytest.raises(InvalidParameterError, match="public.prompt"):
        _mechanism(toy, public_prompt="poem")


def test_the_bank_is_built_reproducibly_from_public_inputs(toy, tmp_path) -> None:
    """The same model, topics, embedder and public documents give the same bank; another model
    another one. A bank file reads back as the same bank."""
    topics = ["rain", "sun", "storm", "sea", "wind", "calm"]
    documents = ["rain and wind", "a calm sea", "sun"]
    writer = toy_language_model(WORDS, {"system": {"calm": 3.0}, "calm": {"sea": 1.0}})
    first = build_bank("post", topics, writer, embed, documents)
    assert first == build_bank("post", topics, writer, embed, documents)
    assert first["format"] == BANK_FORMAT and first["lo"] < first["hi"]
    assert len(first["items"]) == len(first["topics"]) == len(first["clusters"]) >= 1
    other = toy_language_model(WORDS, {"system": {"wild": 3.0}})
    assert build_bank("post", topics, other, embed, documents)["items"] != first["items"]
    path = tmp_path / "post.json.gz"
    path.write_bytes(gzip.compress(json.dumps(first).encode()))
    assert load_bank("post", embed=embed, path=path).digest == load_bank("post", embed=embed, path=path).digest


def test_the_shipped_bank_reads_and_holds_clusters_of_a_few_dozen() -> None:
    with gzip.open(bank_path("post"), "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    assert data["format"] == BANK_FORMAT and data["kind"] == "post" and len(data["items"]) >= 1_000
    sizes = np.bincount(data["clusters"])
    assert sizes.max() <= 200 and data["lo"] < data["hi"]


# -- the audit canary ---------------------------------------------------------------------------


class SelectWriteNoFactorTwo(SelectWrite):
    """A broken selection: exp(epsilon * u) (sensitivity 1/2 where u's range is 1 wide)."""

    def plans(self, texts, rngs):
        from textveil.mechanisms.plan_selection import select_plan

        bank = self._bank()
        vectors = document_vectors(texts, self._embed(), bank.vectors.shape[1])
        return [select_plan(v, bank, int(self.items), self.epsilon_cluster, self.epsilon_item, rng, sensitivity=0.5)
                for v, rng in zip(vectors, rngs)]


def _w0_loss(case, sensitivity: float) -> float:
    mechanism = case.mechanism
    bank = mechanism._bank()
    alpha, beta = document_vectors(["alpha", "beta"], mechanism._embed(), bank.vectors.shape[1])
    p, q = (item_probabilities(v, bank, mechanism.epsilon_cluster, mechanism.epsilon_item,
                               sensitivity=sensitivity)[0] for v in (alpha, beta))
    return float(np.log(p / q))


def test_the_selection_canary_shows_a_loss_within_the_claim_and_its_broken_variant_past_it(toy) -> None:
    from textveil.evaluation.audit import case_claim
    from textveil.evaluation.audit_pairs import canary_cases

    (case,) = canary_cases(_mechanism(toy, 30.0, items=3))
    assert case.mechanism.items == 1 and case.mechanism.epsilon == 4.0
    assert case_claim(case).epsilon == pytest.approx(4.0)
    assert case.mechanism.sanitize("alpha").text.startswith("w")  # the plan itself is released
    assert 2.3 < _w0_loss(case, 1.0) <= 4.0
    assert _w0_loss(case, 0.5) > 4.5


@pytest.mark.parametrize(("cls", "verdict"), [(SelectWrite, "pass"), (SelectWriteNoFactorTwo, "fail")])
def test_the_audit_keeps_the_selection_and_flags_its_broken_variant(toy, cls, verdict) -> None:
    from textveil.evaluation.audit import run_audit
    from textveil.evaluation.audit_pairs import canary_cases

    mechanism = cls(30.0, bank=BANK, embed=embed, language_model=toy)
    report = run_audit(mechanism, canary_cases(mechanism), trials=20_000, seed=1)
    (pair,) = report.pairs
    assert pair.kind == "canary" and pair.claim == pytest.approx(4.0)
    assert pair.verdict == verdict, pair
