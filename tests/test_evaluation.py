"""The evaluation harness: corpora, validation before any work, the release cache, reports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

from textveil.corpus.labelled import (
    LabelledCorpus,
    known_text_unknown_snippet,
    read_labelled_corpus,
    sample_per_label,
    split_first_k,
    split_stratified,
    truncate_to_common_length,
)
from textveil.errors import InputError, InvalidParameterError
from textveil.evaluation import EvaluationCorpora, ExperimentPlan, load_evaluation_corpora, validate, write_report
from textveil.mechanisms.base import CorpusRelease
from textveil.evaluation.release_cache import ReleaseCache, release_key
from textveil.text.tokenize import tokenize
from textveil.pii import EntityOptions


def write_author_folders(root: Path, authors: dict[str, list[str]]) -> Path:
    for author, texts in authors.items():
        (root / author).mkdir(parents=True, exist_ok=True)
        for i, text in enumerate(texts):
            (root / author / f"{i:03d}.txt").write_text(text, encoding="utf-8")
    return root


def toy_corpus(labels=("a", "b"), per_label=6) -> LabelledCorpus:
    texts, tags = [], []
    for label in labels:
        for i in range(per_label):
            texts.append(f"text {i} by {label} with some words")
            tags.append(label)
    return LabelledCorpus(texts, tags, name="toy")


def test_folder_jsonl_and_csv_corpora_read_alike(tmp_path):
    folder = write_author_folders(tmp_path / "folder", {"ann": ["one text", "two text"], "bob": ["three"]})
    corpus = read_labelled_corpus(folder)
    assert corpus.labels == ["ann", "ann", "bob"] and corpus.texts[2] == "three"
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("".join(json.dumps({"user": u, "body": t}) + "\n" for u, t in zip(corpus.labels, corpus.texts)))
    from_jsonl = read_labelled_corpus(jsonl, text_field="body", label_field="user")
    assert from_jsonl.texts == corpus.texts and from_jsonl.labels == corpus.labels
    csv_file = tmp_path / "c.csv"
    csv_file.write_text("user,body\n" + "".join(f"{u},{t}\n" for u, t in zip(corpus.labels, corpus.texts)))
    assert read_labelled_corpus(csv_file, text_field="body", label_field="user").labels == corpus.labels
    with pytest.raises(InputError, match="label field 'author'.*--label-field"):
        read_labelled_corpus(jsonl, text_field="body", label_field="author")


def test_splits_follow_the_papers():
    corpus = toy_corpus(per_label=10)
    known, unknown = split_first_k(corpus, 7, 3)
    assert known.counts() == {"a": 7, "b": 7} and unknown.counts() == {"a": 3, "b": 3}
    assert known.texts[0] == "text 0 by a with some words" and unknown.texts[0] == "text 7 by a with some words"
    train, test = split_stratified(corpus, 0.2, seed=1)
    assert test.counts() == {"a": 2, "b": 2} and len(train) == 16
    assert set(train.ids).isdisjoint(test.ids)
    assert sample_per_label(corpus, 4, seed=0).counts() == {"a": 4, "b": 4}


def test_known_text_unknown_snippet_and_truncation():
    text = " ".join(f"w{i}" for i in range(30)) + "."
    corpus = LabelledCorpus([text, "a b c d e"], ["x", "y"])
    known, unknown = known_text_unknown_snippet(corpus, known_words=10, unknown_words=5)
    assert [t.text for t in tokenize(known.texts[0]) if t.is_word] == [f"w{i}" for i in range(10)]
    assert [t.text for t in tokenize(unknown.texts[0]) if t.is_word] == [f"w{i}" for i in range(25, 30)]
    same = truncate_to_common_length(corpus)
    assert [sum(t.is_word for t in tokenize(x)) for x in same.texts] == [5, 5]


def test_validation_rejects_bad_corpora_and_grids_before_work():
    corpora = EvaluationCorpora(toy_corpus(), toy_corpus())
    validate(ExperimentPlan(grid=[10.0], attacks=["char3-svm"], utility=[]), corpora)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        validate(ExperimentPlan(grid=[10.0, 0.0], attacks=["char3-svm"], utility=[]), corpora)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        validate(ExperimentPlan(grid=[-5.0], attacks=["char3-svm"], utility=[]), corpora)
    with pytest.raises(InvalidParameterError, match="unknown attack"):
        validate(ExperimentPlan(grid=[10.0], attacks=["nope"], utility=[]), corpora)
    one_author = EvaluationCorpora(toy_corpus(labels=("a",)), toy_corpus(labels=("a",)))
    with pytest.raises(InputError, match="1 label"):
        validate(ExperimentPlan(grid=[10.0], attacks=["char3-svm"], utility=[]), one_author)
    empty = toy_corpus()
    empty.texts[3] = "   "
    with pytest.raises(InputError, match="empty"):
        validate(ExperimentPlan(grid=[10.0], attacks=["char3-svm"], utility=[]), EvaluationCorpora(empty, toy_corpus()))


def test_c50_layout_is_recognised(tmp_path):
    root = tmp_path / "c50"
    write_author_folders(root / "C50train", {"ann": ["k1", "k2"], "bob": ["k3", "k4"]})
    write_author_folders(root / "C50test", {"ann": ["u1"], "bob": ["u2"]})
    corpora = load_evaluation_corpora(root)
    assert corpora.risk_known.texts == ["k1", "k2", "k3", "k4"] and corpora.risk_unknown.texts == ["u1", "u2"]


def test_release_cache_reuses_seeded_releases_with_their_statistics(tmp_path):
    cache = ReleaseCache(tmp_path)
    corpus = toy_corpus()
    fingerprint = {"mechanism": "emp", "parameters": {"epsilon": 10}}
    key = release_key(fingerprint, 1, corpus)
    assert key != release_key({**fingerprint, "parameters": {"epsilon": 11}}, 1, corpus)
    assert key != release_key(fingerprint, 2, corpus)
    assert key != release_key(fingerprint, 1, corpus.with_texts(["x"] * len(corpus)))
    calls = []

    from textveil.privacy.release_budget import ReleaseBudget

    def release(budget=ReleaseBudget("metric", 10.0, "token", "Euclidean", ())):
        calls.append(1)
        return CorpusRelease([t.upper() for t in corpus.texts], None, True, {"words_protected": 7, "words_changed": 3},
                             budget)

    first = cache.get_or_release(key, release, len(corpus))
    second = cache.get_or_release(key, release, len(corpus))
    # read back, the release reports what it protected (a cached point once reported 0 and 0)
    assert first == second and len(calls) == 1 and cache.hits == 1
    assert second.stats == {"words_protected": 7, "words_changed": 3} and second.budget == first.budget
    cache.get_or_release(None, release, len(corpus))  # unseeded: never cached
    assert len(calls) == 2
    # an entry written before budgets were kept is released again (its report would lack them)
    old = release_key(fingerprint, 3, corpus)
    cache.get_or_release(old, lambda: release(None), len(corpus))
    again = cache.get_or_release(old, release, len(corpus))
    assert len(calls) == 4 and again.budget is not None


def fake_results() -> dict:
    rng = np.random.default_rng(0)
    points = []
    for label, value in (("none", None), ("10", 10.0), ("20", 20.0)):
        top1 = float(rng.uniform(0.2, 0.8))
        points.append({
            "label": label, "parameter": value, "seed": 1, "seconds": {},
            "release": {"words_protected": 0},
            "attacks": {"char3-svm": {"attack": "char3-svm", "topk": sorted(rng.uniform(top1, 1, 10).tolist()),
                                       "chance": [k / 50 for k in range(1, 11)], "n_unknown": 100, "n_candidates": 50,
                                       "top1": top1}},
            "utility": {"topic-5nn": {"value": float(rng.uniform(0.5, 1)), "metric": "accuracy", "higher_is_better": True}},
        })
    plan = ExperimentPlan(grid=[10.0, 20.0], seed=1)
    from dataclasses import asdict

    return {"plan": asdict(plan), "points": points, "corpora": {"risk_known": {"name": "toy", "documents": 10, "labels": 2, "hash": "x"}},
            "embeddings": {"name": "toy", "words": 10, "dim": 2}, "timings": {"total": 1.0}, "topic_chance": 0.2,
            "machine": {"platform": "test", "python": "3", "cpus": 2}}


def test_report_files_are_complete_and_self_contained(tmp_path):
    written = write_report(fake_results(), tmp_path / "report")
    assert {"results.json", "report.md", "report.html", "topk_curves.png", "risk_utility.png"} <= set(written)
    html = (tmp_path / "report" / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and "http" not in html.replace("http-equiv", "")
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "Table 1" in markdown and "chance" in markdown and "| 10 |" in markdown
    assert (tmp_path / "report" / "topk_curves.png").read_bytes().startswith(b"\x89PNG")
    assert json.loads((tmp_path / "report" / "results.json").read_text())["points"][1]["label"] == "10"


@pytest.mark.parametrize(
    ("authors", "extra", "needle"),
    [
        ({"ann": ["a b c", "d e f", "g h i", "j k l"]}, [], "label"),
        ({"ann": ["a b c", "   ", "g h", "j k"], "bob": ["x y", "z w", "q r", "s t"]}, [], "empty"),
        ({"ann": ["a b", "c d"], "bob": ["e f", "g h"]}, ["--grid", "10,0"], "epsilon"),
        ({"ann": ["a b", "c d"], "bob": ["e f", "g h"]}, ["--grid", "-3"], "epsilon"),
    ],
)
def test_evaluate_bad_input_is_one_line_error_before_work(tmp_path, capsys, monkeypatch, authors, extra, needle):
    corpus = write_author_folders(tmp_path / "corpus", authors)
    code, out, err = run_cli(["evaluate", "--risk-corpus", str(corpus), "--out", str(tmp_path / "out"), *extra],
                             capsys, monkeypatch)
    assert code == 2, err
    assert "Traceback" not in err and len([l for l in err.splitlines() if l.strip()]) == 1
    assert needle in err
    assert not (tmp_path / "out").exists()


def test_evaluate_missing_label_field(tmp_path, capsys, monkeypatch):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"user": u, "text": "some words here"}) + "\n" for u in "aabb"))
    code, _, err = run_cli(["evaluate", "--risk-corpus", str(corpus), "--out", str(tmp_path / "o"), "--label-field", "author"],
                           capsys, monkeypatch)
    assert code == 2 and "author" in err and "--label-field" in err


def test_attack_list_and_bad_name(capsys, monkeypatch, tmp_path):
    code, out, _ = run_cli(["attack", "--list"], capsys, monkeypatch)
    assert code == 0 and "impostors" in out and "word2-svm" in out
    corpus = write_author_folders(tmp_path / "k", {"a": ["x y"], "b": ["z w"]})
    code, _, err = run_cli(["attack", "--known", str(corpus), "--unknown", str(corpus), "--attack", "nope"], capsys, monkeypatch)
    assert code == 2 and "nope" in err and "--list" in err


def _word_style_corpus(rng: np.random.Generator, authors: int, texts_per_author: int) -> LabelledCorpus:
    """Each author draws most words from a vocabulary slice of their own: identifiable on clean text."""
    from tests.conftest import TOY_WORDS

    content = list(TOY_WORDS[10:])
    texts, labels = [], []
    for author in range(authors):
        own = content[author * 8:(author + 1) * 8]
        for _ in range(texts_per_author):
            words = [own[i] if rng.random() < 0.8 else content[j] for i, j in
                     zip(rng.integers(0, len(own), 30), rng.integers(0, len(content), 30))]
            texts.append("The " + " ".join(words) + ".")
            labels.append(f"author{author}")
    return LabelledCorpus(texts, labels, name="toy-style")


def test_sweep_end_to_end_is_seeded_cached_and_timed(tmp_path, toy_word_embeddings):
    from textveil.evaluation import run_experiment

    vectors = tmp_path / "toy.vec"
    vectors.write_text(f"{len(toy_word_embeddings)} {toy_word_embeddings.dim}\n" + "".join(
        word + " " + " ".join(f"{x:.6f}" for x in vector) + "\n"
        for word, vector in zip(toy_word_embeddings.words, toy_word_embeddings.vectors)))
    rng = np.random.default_rng(5)
    known, unknown = _word_style_corpus(rng, 4, 8), _word_style_corpus(rng, 4, 3)
    corpora = EvaluationCorpora(known, unknown, known, unknown)  # the authors double as topics
    # clean training only: the release-trained path has tests of its own (test_release_training.py)
    plan = ExperimentPlan(grid=[0.5, 200.0], seed=3, embeddings=str(vectors), top_k=3,
                          attacks=["char3-svm", "embedding-1nn"], trainings=["clean"],
                          entities=EntityOptions(operator="off"),  # emp alone: word counts are its own
                          utility=["topic-5nn", "unigram-cosine", "stylometric-l2", "earth-movers"])
    ticks = []
    first = run_experiment(corpora, plan, cache_folder=tmp_path / "cache", progress=lambda *tick: ticks.append(tick))
    # every release, attack and utility task of the 3 points reports once, in order
    assert [done for _, done, _ in ticks] == list(range(1, 3 * (1 + 2 + 4) + 1)) and ticks[-1][2] == 21
    assert ticks[0][0] == "epsilon none: released" and ticks[-1][0] == "epsilon 200: earth-movers"
    second = run_experiment(corpora, plan, cache_folder=tmp_path / "cache")

    assert first["release_cache"]["misses"] == 4 and second["release_cache"]["hits"] == 4
    assert [p["attacks"] for p in first["points"]] == [p["attacks"] for p in second["points"]]
    assert [p["utility"] for p in first["points"]] == [p["utility"] for p in second["points"]]
    clean, noisiest, faintest = first["points"]
    assert clean["label"] == "none" and clean["attacks"]["char3-svm"]["top1"] > 0.9
    assert clean["utility"]["unigram-cosine"]["value"] == pytest.approx(1.0)
    assert clean["utility"]["earth-movers"]["value"] == pytest.approx(0.0, abs=1e-9)
    # eps 0.5 per word on 8-d vectors replaces nearly every word; eps 200 almost none.
    assert noisiest["release"]["words_changed_fraction"] > 0.7 > 0.1 > faintest["release"]["words_changed_fraction"]
    assert noisiest["utility"]["earth-movers"]["value"] > faintest["utility"]["earth-movers"]["value"]
    assert noisiest["attacks"]["embedding-1nn"]["top1"] < clean["attacks"]["embedding-1nn"]["top1"]
    assert {"fit char3-svm", "prepare topic-5nn", "attack embedding-1nn", "measure earth-movers"} <= set(first["task_seconds"])
    # A point's release depends on the seed and its own value, not on the rest of the grid.
    from dataclasses import replace

    alone = run_experiment(corpora, replace(plan, grid=[200.0]), cache_folder=None)
    assert alone["points"][1]["seed"] == faintest["seed"]
    assert alone["points"][1]["attacks"] == faintest["attacks"] and alone["points"][1]["utility"] == faintest["utility"]

    # Repeated releases: the first is the single release above (served from the cache), the
    # results are means with their spread, and the unmodified text is measured once.
    repeated = run_experiment(corpora, replace(plan, grid=[0.5], repeats=3), cache_folder=tmp_path / "cache")
    # two corpora (risk and utility) per release
    assert repeated["release_cache"]["hits"] == 2 and repeated["release_cache"]["misses"] == 4
    clean_again, noisy = repeated["points"]
    assert "seeds" not in clean_again and noisy["seeds"][0] == noisiest["seed"] and len(set(noisy["seeds"])) == 3
    values = noisy["attacks"]["embedding-1nn"]["top1_values"]
    assert values[0] == noisiest["attacks"]["embedding-1nn"]["top1"]
    assert noisy["attacks"]["embedding-1nn"]["top1"] == pytest.approx(np.mean(values))
    assert noisy["utility"]["earth-movers"]["sd"] >= 0 and len(noisy["utility"]["earth-movers"]["values"]) == 3
    assert noisy["release"]["releases"] == 3
    write_report(repeated, tmp_path / "repeated")
    assert "3 releases per value" in (tmp_path / "repeated" / "report.md").read_text()
    assert set(first["timings"]) >= {"release", "attacks", "utility", "total"}


def test_halving_point_uses_the_strongest_attack_and_says_when_the_grid_misses_it():
    from textveil.evaluation.tradeoff import BEST_ATTACK, halving_point

    def point(parameter, svm, knn, topic):
        return {"label": "none" if parameter is None else f"{parameter:g}", "parameter": parameter,
                "attacks": {"svm": {"top1": svm}, "knn": {"top1": knn}}, "utility": {"topic": {"value": topic}}}

    points = [point(None, 0.8, 0.6, 0.95), point(30.0, 0.7, 0.2, 0.95), point(10.0, 0.3, 0.1, 0.85)]
    best = halving_point(points, BEST_ATTACK, "topic")
    # The best attack at 30 is the svm (0.7 > 0.4), so identification has not halved there.
    assert best["halves"] and best["measured_parameter"] == 10.0
    assert best["interpolated_parameter"] == pytest.approx(30 - 20 * (0.7 - 0.4) / (0.7 - 0.3))
    assert best["interpolated_utility_change"] == pytest.approx(-0.1 * (0.3 / 0.4))
    knn = halving_point(points, "knn", "topic")
    assert knn["measured_parameter"] == 30.0 and "interpolated_parameter" not in knn  # halved at the first point
    never = halving_point([point(None, 0.8, 0.6, 0.9), point(30.0, 0.7, 0.5, 0.9)], "svm", "topic")
    assert never is not None and never["halves"] is False
    assert halving_point(points[1:], "svm", "topic") is None  # no unmodified point to compare with


def test_report_states_where_identification_halves(tmp_path):
    results = fake_results()
    clean = results["points"][0]["attacks"]["char3-svm"]["top1"]
    results["points"][1]["attacks"]["char3-svm"]["top1"] = clean / 3  # epsilon 10
    results["points"][2]["attacks"]["char3-svm"]["top1"] = clean  # epsilon 20
    write_report(results, tmp_path / "r")
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "Where identification has halved" in markdown
    assert ("| best attack | clean text: char3-svm (clean-trained); where halved: char3-svm (clean-trained) "
            "| topic-5nn |") in markdown and "(between 10 and 20)" in markdown


def test_a_report_with_no_halving_row_says_why_instead_of_an_empty_table(tmp_path):
    import re

    def halving_section(results: dict) -> str:
        write_report(results, tmp_path / "r")
        markdown = (tmp_path / "r" / "report.md").read_text()
        return markdown.split("## Where identification has halved")[1].split("\n## ")[0]

    no_topic = fake_results()
    for point in no_topic["points"]:
        point["utility"] = {"unigram-cosine": {"value": 0.5, "metric": "cosine", "higher_is_better": True}}
    section = halving_section(no_topic)
    assert "No topic-classification task was measured" in section and "|" not in section

    no_clean = fake_results()
    no_clean["points"] = no_clean["points"][1:]
    section = halving_section(no_clean)
    assert "no point on the unmodified text" in section and "|" not in section

    no_parameter = fake_results()
    no_parameter["plan"]["parameter"] = None
    no_parameter["points"][1].update(label="random", parameter=None)
    no_parameter["points"] = no_parameter["points"][:2]
    assert "no parameter to sweep" in halving_section(no_parameter)

    # and the HTML twin holds no table of headers alone either
    html = (tmp_path / "r" / "report.html").read_text()
    assert not re.search(r"<tbody></tbody>", html)


def test_pretrained_topic_task_starts_from_the_sweep_embeddings(toy_word_embeddings):
    from textveil.evaluation.utility_tasks import UTILITY_TASKS

    rng = np.random.default_rng(11)
    train, test = _word_style_corpus(rng, 3, 12), _word_style_corpus(rng, 3, 4)
    runner = UTILITY_TASKS.make("topic-fasttext-pretrained", embeddings=toy_word_embeddings, seed=0)
    runner.prepare(train, test)
    assert runner.model._model.get_dimension() == toy_word_embeddings.dim  # the vectors' size, not fastText's 100
    result = runner.measure(test.texts)
    assert result["value"] > 0.9 and "pretrained" in result["metric"]


@pytest.mark.data
@pytest.mark.slow
def test_paper001_shape_on_a_slice_of_c50_and_bbc():
    """A small, real version of paper 001's sweep: 8 C50 authors, 5 unknown texts each, BBC
    topics. Identification must fall from clean to epsilon 10 while topic accuracy falls less."""
    from tests.conftest import require_shared_data
    from textveil.evaluation import run_experiment

    c50, bbc = require_shared_data("reuters_c50"), require_shared_data("bbc_news", "bbc")
    corpora = load_evaluation_corpora(c50, utility_corpus=bbc, utility_encoding="latin-1", unknown_per_label=5, seed=0)
    authors = sorted(corpora.risk_known.label_set)[:8]

    def keep(corpus):
        return corpus.subset([i for i, label in enumerate(corpus.labels) if label in authors])

    topics = corpora.utility_test
    corpora = EvaluationCorpora(keep(corpora.risk_known), keep(corpora.risk_unknown), corpora.utility_train,
                                topics.subset(list(range(0, len(topics), 4))))
    # clean training, as paper 001's DRauth; release-trained attacks are tested on toy corpora
    plan = ExperimentPlan(grid=[10.0, 30.0], seed=2, attacks=["char3-svm"], utility=["topic-fasttext"],
                          trainings=["clean"])
    points = {p["label"]: p for p in run_experiment(corpora, plan)["points"]}
    risk = {label: p["attacks"]["char3-svm"]["top1"] for label, p in points.items()}
    topic = {label: p["utility"]["topic-fasttext"]["value"] for label, p in points.items()}
    print(f"char3-svm top-1 {risk}, fastText topic {topic}")
    assert risk["none"] >= 0.6 and topic["none"] >= 0.9
    assert risk["10"] < risk["none"] - 0.2  # identification falls at epsilon 10 ...
    assert topic["none"] - topic["10"] < risk["none"] - risk["10"]  # ... more than topic does
    assert risk["30"] > risk["10"] and abs(topic["30"] - topic["none"]) < 0.05


def test_a_single_corpus_is_cut_in_place_to_its_first_authors_and_texts(tmp_path):
    from textveil.evaluation.corpora import load_evaluation_corpora

    path = tmp_path / "c.jsonl"
    rows = [{"text": f"post {i} of {u}", "user": u, "job": j}
            for u, j in (("u1", "law"), ("u2", "arts"), ("u3", "law")) for i in range(5)]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    corpora = load_evaluation_corpora(path, label_field="user", known_per_label=2, labels_limit=2,
                                      texts_per_label=3, attribute_field="job")
    assert corpora.risk_known.texts == ["post 0 of u1", "post 1 of u1", "post 0 of u2", "post 1 of u2"]
    assert corpora.risk_unknown.texts == ["post 2 of u1", "post 2 of u2"]
    assert corpora.attributes == {"u1": "law", "u2": "arts"}  # only the authors evaluated
    unknown = tmp_path / "u.jsonl"
    unknown.write_text("\n".join(json.dumps({"text": f"new {i} of {u}", "user": u}) for u in ("u3", "u2", "u1")
                                  for i in range(3)))
    apart = load_evaluation_corpora(path, risk_unknown=unknown, label_field="user", labels_limit=2, texts_per_label=2)
    assert apart.risk_known.texts == ["post 0 of u1", "post 1 of u1", "post 0 of u2", "post 1 of u2"]
    assert apart.risk_unknown.texts == ["new 0 of u2", "new 1 of u2", "new 0 of u1", "new 1 of u1"]
    with pytest.raises(InvalidParameterError, match="--texts-per-label must be at least 1"):
        load_evaluation_corpora(path, label_field="user", texts_per_label=0)


def test_attack_prints_each_accuracy_with_its_interval(capsys, monkeypatch, tmp_path):
    from textveil.evaluation.intervals import rate_interval

    rng = np.random.default_rng(5)
    corpus = _word_style_corpus(rng, 4, 6)
    known = write_author_folders(tmp_path / "k", {label: [t for t, l in zip(corpus.texts, corpus.labels) if l == label]
                                                  for label in corpus.label_set})
    code, out, _ = run_cli(["attack", "--known", str(known), "--unknown", str(known), "--attack", "word1-svm",
                            "--top-k", "2", "--format", "json"], capsys, monkeypatch)
    assert code == 0
    found = json.loads(out)
    named = round(found["top1"] * found["n_unknown"])
    assert found["hits"].count("1") == named and len(found["hits"]) == found["n_unknown"]
    assert found["topk_intervals"][0] == rate_interval(named, found["n_unknown"]).to_dict()
    code, out, _ = run_cli(["attack", "--known", str(known), "--unknown", str(known), "--attack", "word1-svm",
                            "--top-k", "2"], capsys, monkeypatch)
    assert code == 0 and "95% interval" in out
