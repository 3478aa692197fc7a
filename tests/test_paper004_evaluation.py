"""Paper 004's evaluation through the harness: a synthetic corpus swept over temperatures with
the attribute-F1 and memorisation tasks, the release-aware attacker's own model, and the real
blog_short corpus (skipped without ../shared/data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textveil.corpus.labelled import LabelledCorpus, label_attributes
from textveil.errors import InputError, InvalidParameterError
from textveil.evaluation import ExperimentPlan, run_experiment
from textveil.evaluation.corpora import load_evaluation_corpora
from textveil.evaluation.experiment_plan import EvaluationCorpora
from textveil.evaluation.utility_tasks import UTILITY_TASKS
from textveil.mechanisms.synthesis import NeuralSynthesis
from textveil.pii import EntityOptions

BLOG = Path(__file__).resolve().parents[2] / "shared" / "data" / "blog_short" / "blog_short.jsonl"

# Two writers with disjoint alphabets and vocabularies: any model that learns anything writes
# each one's words, and any attack tells them apart.
STYLES = {"ann": ["abba cab bad dab", "cab abba dad bad", "dab bad abba cab"],
          "zed": ["xyz zyx yzx", "zyx xyz zzz yyy", "yzx xxx zyx"]}
TINY = {"hidden": 24, "epochs": 60, "batch_size": 8, "learning_rate": 0.02, "max_length": 40}
"""A model that overfits these texts: at low temperature it writes them back, whatever the machine."""


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same float sums, so the same seeded model, everywhere
    yield
    torch.set_num_threads(threads)


def _corpus(copies: int, name: str) -> LabelledCorpus:
    texts, labels = [], []
    for user, lines in STYLES.items():
        for i in range(copies):
            texts.append(lines[i % len(lines)])
            labels.append(user)
    return LabelledCorpus(texts, labels, name=name)


@pytest.fixture(scope="module")
def corpora() -> EvaluationCorpora:
    return EvaluationCorpora(_corpus(9, "known"), _corpus(3, "unknown"),
                             attributes={"ann": "arts", "zed": "law"})


def test_label_attributes_reads_one_value_per_author_and_refuses_two(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [{"text": "a", "user": "u1", "job": "law"}, {"text": "b", "user": "u1", "job": "law"},
            {"text": "c", "user": "u2", "job": "arts"}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    assert label_attributes(path, "user", "job") == {"u1": "law", "u2": "arts"}
    path.write_text("\n".join(json.dumps(r) for r in rows + [{"text": "d", "user": "u2", "job": "law"}]))
    with pytest.raises(InputError, match="two values of 'job'"):
        label_attributes(path, "user", "job")


def test_attribute_f1_and_memorisation_tasks():
    train, test = _corpus(6, "train"), _corpus(3, "test")
    attributes = {"ann": "arts", "zed": "law"}
    f1 = UTILITY_TASKS.make("attribute-f1", attributes=attributes)
    f1.prepare(train, test)
    assert f1.measure(list(test.texts))["value"] == pytest.approx(1.0)
    # a release whose texts are swapped between the writers: every attribute predicted wrongly
    swapped = list(reversed(test.texts))
    assert f1.measure(swapped)["value"] == pytest.approx(0.0)
    # unaligned (a synthetic corpus): the attribute is the one of the user each text was written for
    assert f1.measure(["abba cab", "xyz zyx"], ["ann", "zed"])["value"] == pytest.approx(1.0)
    with pytest.raises(InputError, match="no attribute"):
        f1.measure(["abba"], ["nobody"])

    memorised = UTILITY_TASKS.make("memorisation")
    long_text = "one two three four five six seven eight nine ten"
    memorised.prepare(LabelledCorpus([long_text], ["ann"]), test)
    result = memorised.measure([long_text + " eleven", "something else entirely here"])
    assert result["value"] == pytest.approx(0.5) and result["higher_is_better"] is False


def test_synthetic_sweep_fits_per_author_and_measures_every_temperature(corpora, tmp_path):
    plan = ExperimentPlan(mechanism="synth", grid=[0.5, 1.5], seed=3, attacks=["char1-knn"],
                          utility=["unigram-cosine", "attribute-f1", "memorisation", "semantic-similarity"],
                          mechanism_options=TINY, collapse_per_label=True,
                          entities=EntityOptions(operator="off"))  # the model alone, on its toy words
    results = run_experiment(corpora, plan, cache_folder=tmp_path / "cache")
    points = {p["label"]: p for p in results["points"]}
    assert list(points) == ["none", "0.5", "1.5"]
    # semantic similarity compares each text with its own release: skipped for a new corpus
    assert "semantic-similarity" not in points["0.5"]["utility"]
    cool = points["0.5"]
    assert cool["release"]["texts_synthesised"] == len(corpora.risk_unknown)
    assert cool["attacks"]["char1-knn"]["top1"] == 1.0  # each writer's alphabet survives synthesis
    assert cool["utility"]["attribute-f1"]["value"] > 0.8 and cool["utility"]["unigram-cosine"]["value"] > 0.5
    assert results["mechanism"]["training_data"] is not None


def test_the_attackers_own_model_must_share_the_release_settings(corpora, tmp_path):
    known = corpora.risk_known
    ours = NeuralSynthesis(seed=0, **TINY).fit(known.texts, known.labels).save(tmp_path / "ours")
    theirs = NeuralSynthesis(seed=1, **TINY).fit(known.texts, known.labels).save(tmp_path / "theirs")
    plan = ExperimentPlan(mechanism="synth", grid=[0.5], seed=3, attacks=["char1-knn"], utility=["unigram-cosine"],
                          model=str(ours), attacker_model=str(theirs), collapse_per_label=True)
    results = run_experiment(corpora, plan)
    release_trained = results["points"][1]["attacks_release"]["char1-knn"]
    assert release_trained["training"] == "release" and release_trained["top1"] == 1.0
    other = NeuralSynthesis(seed=1, **{**TINY, "hidden": 16}).fit(known.texts, known.labels).save(tmp_path / "other")
    with pytest.raises(InvalidParameterError, match="hidden"):
        run_experiment(corpora, ExperimentPlan(**{**plan.__dict__, "attacker_model": str(other)}))


@pytest.mark.skipif(not BLOG.exists(), reason="../shared/data/blog_short is absent")
def test_blog_short_attributes_and_split():
    corpora = load_evaluation_corpora(BLOG, label_field="user", known_per_label=70, attribute_field="industry")
    assert len(corpora.risk_known.label_set) == 150 and len(corpora.risk_known) == 150 * 70
    assert len(corpora.risk_unknown) == 150 * 30
    assert set(corpora.attributes) == set(corpora.risk_known.label_set)
    assert "Student" in set(corpora.attributes.values())
