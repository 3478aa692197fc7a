"""Polish: any mechanism's release rewritten by the language model, which reads only the release.

What must hold: the Guarantee is the mechanism's (epsilon, kind, document epsilon) with the polish
named in its post-processing; a budget ledger charges what it charges without polish; the language
model never reads the input (a spy on everything it reads); the same seed gives the same bytes; a
polished release is another release (fingerprints, comparison keys); and every face (the library,
``sanitize``, ``release``, ``compare``, the service) takes it through the library's one parser, an
unknown name being one line that names the valid ones. The toy language model keeps these fast.
"""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("torch", reason="polish runs a language model (torch)")
pytest.importorskip("transformers", reason="polish runs a language model (transformers)")

from conftest import TOY_WORDS, run_cli, skip_without_bundled_language_model  # noqa: E402
from textveil.errors import InvalidParameterError  # noqa: E402
from textveil.mechanisms.earth_movers import EarthMoversPrivacy  # noqa: E402
from textveil.mechanisms.polish import Polish, PolishedMechanism, parse_then, with_polish, with_then  # noqa: E402
from textveil.mechanisms.prompting import PROMPTS  # noqa: E402
from textveil.mechanisms.random_replacement import RandomReplacement  # noqa: E402
from textveil.models.toy_language_model import toy_language_model  # noqa: E402

TEXTS = ["the market rallied and stocks rose", "oil prices fell in london", "", "growth and more growth"]


@pytest.fixture(scope="module")
def toy_lm():
    """A toy language model over the toy embeddings' words: its replies are words of theirs."""
    return toy_language_model(TOY_WORDS)


def _emp(embeddings, seed: int | None = 5) -> EarthMoversPrivacy:
    return EarthMoversPrivacy(10.0, embeddings, seed=seed)


def test_the_guarantee_is_the_mechanisms_with_the_polish_named(toy_word_embeddings, toy_lm):
    alone = _emp(toy_word_embeddings).sanitize_many(TEXTS)
    polished = with_polish(_emp(toy_word_embeddings), language_model=toy_lm, max_new_tokens=6).sanitize_many(TEXTS)
    for before, after in zip(alone, polished):
        first, second = before.guarantee, after.guarantee
        assert (second.mechanism, second.kind, second.epsilon, second.document_epsilon, second.words_protected,
                second.unit) == (first.mechanism, first.kind, first.epsilon, first.document_epsilon,
                                 first.words_protected, first.unit)
        assert second.post_processing[:-1] == first.post_processing
        note = second.post_processing[-1]
        assert note.startswith("polish:") and "read only the release, never the input" in note
        assert PROMPTS["polish"].instruction in note and toy_lm.name in note
        assert note in second.statement and "which costs no privacy" in second.statement
        assert after.changes == before.changes  # the mechanism's own record is kept
    assert [r.text for r in polished] != [r.text for r in alone]
    assert polished[2].text == ""  # an empty release stays empty: nothing to read


def test_a_ledger_charges_what_the_mechanism_alone_charges(toy_word_embeddings, toy_lm, tmp_path):
    from textveil.privacy.ledger import BudgetLedger
    from textveil.release.budgeted import release_with_budget

    plain, polished = _emp(toy_word_embeddings), with_polish(_emp(toy_word_embeddings), language_model=toy_lm,
                                                              max_new_tokens=4)
    assert polished.spend_per_release() == plain.spend_per_release()
    assert [polished.planned_spend(t) for t in TEXTS] == [plain.planned_spend(t) for t in TEXTS]
    spent = {}
    for name, mechanism in (("plain", plain), ("polished", polished)):
        ledger = BudgetLedger(tmp_path / f"{name}.sqlite")
        done = release_with_budget(mechanism, TEXTS, ["ann", "bob", "ann", "bob"], ledger)
        spent[name] = ([(s.subject, s.amount, s.unit) for s in done.spends], ledger.spent("ann"), ledger.spent("bob"))
    assert spent["polished"] == spent["plain"]


def test_the_language_model_reads_only_the_release(toy_word_embeddings, toy_lm, monkeypatch):
    """A spy on everything the polish's model reads (each text it tokenizes, each chat it lays
    out): the input's words never, the release's always. ``random`` draws every token from the
    vocabulary, which holds none of the input's words, so a polish that read the input would show
    them to the spy."""
    read: list[str] = []
    encode, chat_text = toy_lm.encode, toy_lm.chat_text

    def spied_encode(text, *args, **kwargs):
        read.append(text)
        return encode(text, *args, **kwargs)

    def spied_chat(system, user, *args, **kwargs):
        read.extend([system or "", user, json.dumps([args, kwargs], default=str)])
        return chat_text(system, user, *args, **kwargs)

    monkeypatch.setattr(toy_lm, "encode", spied_encode)
    monkeypatch.setattr(toy_lm, "chat_text", spied_chat)
    monkeypatch.setattr(toy_lm, "_template_parts", {}, raising=False)  # the template is laid out again, spied
    secrets = ["zyxwvut", "qqsecretqq", "plughxyzzy"]
    inputs = [f"{secrets[0]} {secrets[1]} and {secrets[2]}", f"{secrets[1]} {secrets[0]}"]
    mechanism = with_polish(RandomReplacement(toy_word_embeddings, seed=3), language_model=toy_lm,
                            max_new_tokens=4)
    releases = mechanism.sanitize_many(inputs)
    assert read, "the spy saw nothing: it no longer watches what the model reads"
    assert not any(secret in text for secret in secrets for text in read)
    inner = RandomReplacement(toy_word_embeddings, seed=3).sanitize_many(inputs)  # what the polish was given
    assert all(any(release.text in text for text in read) for release in inner)
    assert all(release.guarantee.epsilon == 0.0 for release in releases)


def test_the_same_seed_gives_the_same_bytes(toy_word_embeddings, toy_lm):
    sampled = PolishedMechanism(_emp(toy_word_embeddings, seed=None), Polish(temperature=0.9, max_new_tokens=6),
                                language_model=toy_lm)
    first = [r.text for r in sampled.with_params(seed=11).sanitize_many(TEXTS)]
    assert first == [r.text for r in sampled.with_params(seed=11).sanitize_many(TEXTS)]
    # a record's seed gives what that seed alone gives (a release job's shards and workers)
    records = sampled.sanitize_records(TEXTS, [11, 12, 13, 14])
    assert [r.text for r in records] == [sampled.with_params(seed=s).sanitize(t).text
                                         for s, t in zip([11, 12, 13, 14], TEXTS)]
    # the polish draws from a stream of its own: unseeded, two releases of many texts differ
    many = ["stocks rose and the market rallied"] * 8
    assert [r.text for r in sampled.sanitize_many(many)] != [r.text for r in sampled.sanitize_many(many)]


def test_greedy_decoding_takes_the_most_likely_token(toy_word_embeddings):
    """At temperature 0 every token is the model's best over the output vocabulary: with one
    word far above the rest, the reply is that word until it is cut at L tokens."""
    favoured = toy_language_model(TOY_WORDS, {word: {TOY_WORDS[0]: 50.0} for word in ("system", "user", "assistant")})
    polished = with_polish(_emp(toy_word_embeddings), language_model=favoured, max_new_tokens=3)
    assert polished.sanitize("the market rallied").text.split() == [TOY_WORDS[0]] * 3
    assert polished.with_params(seed=None).sanitize("growth").text == polished.with_params(seed=9).sanitize("growth").text


def test_a_polished_release_is_another_release(toy_word_embeddings, toy_lm):
    plain = _emp(toy_word_embeddings)
    greedy = with_polish(plain, language_model=toy_lm)
    sampled = with_polish(plain, language_model=toy_lm, temperature=0.7)
    prints = [json.dumps(m.fingerprint(), sort_keys=True) for m in (plain, greedy, sampled)]
    assert len(set(prints)) == 3
    assert greedy.fingerprint()["then"][0]["temperature"] == 0.0
    assert with_polish(greedy, language_model=toy_lm).then == (Polish(), Polish())


def test_the_entity_stage_goes_inside_the_polish(toy_word_embeddings, toy_lm):
    from textveil.building import build_mechanism
    from textveil.pii.stage import EntityOptions, EntityStage
    from textveil.pii.staged import StagedMechanism, as_attacker

    options = EntityOptions(operator="placeholder")
    built = build_mechanism("emp", {"epsilon": 10.0}, toy_word_embeddings, entities=EntityStage(options),
                            then="polish", then_language_model=toy_lm, seed=1)
    assert isinstance(built, PolishedMechanism) and isinstance(built.mechanism, StagedMechanism)
    assert built.with_params(seed=2).polisher.language_model is toy_lm
    attacker = as_attacker(built, 3)
    assert isinstance(attacker, PolishedMechanism) and attacker.polish == built.polish
    assert build_mechanism("emp", {"epsilon": 10.0}, toy_word_embeddings, entities=EntityOptions(operator="off"),
                           then=(), seed=1).name == "emp"


@pytest.mark.parametrize("given, valid", [
    ("polish", ("polish",)),
    (["polish", "polish[temperature=0.5]"], ("polish", "polish[temperature=0.5]")),
    ("polish+polish[max_new_tokens=32,engine=transformers]", ("polish", "polish[engine=transformers,max_new_tokens=32]")),
])
def test_the_one_parser_reads_names_and_settings(given, valid):
    assert tuple(step.text for step in parse_then(given)) == valid
    assert parse_then([step.text for step in parse_then(given)]) == parse_then(given)  # a step's text reads back


@pytest.mark.parametrize("given, message", [
    ("gloss", "unknown --then 'gloss'; use one of: polish"),
    ("polish[temperature=-1]", "polish's temperature must be 0 (greedy) or more"),
    ("polish[top_p=0.9]", "polish takes no setting 'top_p'; its settings: temperature, model, engine, max_new_tokens"),
    ("polish[temperature=0.5", "close its settings with ']'"),
    ("polish[engine=vllm]", "unknown --engine 'vllm'"),
])
def test_a_bad_step_is_one_line_naming_the_fix(given, message):
    with pytest.raises(InvalidParameterError, match=re.escape(message)) as raised:
        parse_then(given)
    assert "\n" not in str(raised.value)


def test_code_words_are_not_polished(toy_word_embeddings, toy_lm):
    from textveil.mechanisms.pivot import Pivot

    with pytest.raises(InvalidParameterError, match="code words"):
        with_then(Pivot(l=2, seed=1), "polish", language_model=toy_lm)


# -- the faces ------------------------------------------------------------------------------


def _tiny_polish(folder) -> str:
    return f"polish[model={folder},max_new_tokens=6,temperature=0.8]"


def test_sanitize_then_polish_end_to_end(tmp_path, vectors, tiny_lm_folder, capsys, monkeypatch):
    doc = tmp_path / "post.txt"
    doc.write_text("The market rallied and stocks rose. Oil prices fell.", encoding="utf-8")
    args = ["sanitize", str(doc), "-e", "10", "--embeddings", str(vectors), "--entities", "off", "--seed", "4"]
    code, plain, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    code, polished, err = run_cli([*args, "--then", _tiny_polish(tiny_lm_folder)], capsys, monkeypatch)
    assert code == 0, err
    assert "post-processing (costs no privacy): polish: the release was rewritten" in err.replace("\n", " ")
    assert polished != plain and "epsilon=10" in err
    again = run_cli([*args, "--then", _tiny_polish(tiny_lm_folder)], capsys, monkeypatch)[1]
    assert again == polished
    code, out, err = run_cli([*args, "--format", "json", "--then", _tiny_polish(tiny_lm_folder)], capsys, monkeypatch)
    guarantee = json.loads(out)["guarantee"]
    assert guarantee["epsilon"] == 10.0 and guarantee["post_processing"][-1].startswith("polish:")


def test_an_unknown_step_is_one_line(tmp_path, vectors, capsys, monkeypatch):
    doc = tmp_path / "post.txt"
    doc.write_text("The market rallied.", encoding="utf-8")
    code, out, err = run_cli(["sanitize", str(doc), "-e", "10", "--embeddings", str(vectors), "--entities", "off",
                              "--then", "gloss"], capsys, monkeypatch)
    assert code != 0 and out == ""
    assert "unknown --then 'gloss'; use one of: polish" in err and len(err.strip().splitlines()) == 1


def test_release_then_polish_names_it_in_the_manifest(tmp_path, vectors, tiny_lm_folder, capsys, monkeypatch):
    from textveil.release.seeds import record_seeds
    from textveil.release.shards import MechanismSpec

    records = [{"id": i, "text": f"{TOY_WORDS[i]} {TOY_WORDS[i + 1]} and {TOY_WORDS[i + 2]}."} for i in range(5)]
    corpus = tmp_path / "posts.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    step = _tiny_polish(tiny_lm_folder)
    code, _, err = run_cli(["release", str(corpus), "--out", str(tmp_path / "out"), "-m", "emp", "-e", "10",
                            "--embeddings", str(vectors), "--entities", "off", "--seed", "77", "--workers", "0",
                            "--shard-size", "2", "--then", step], capsys, monkeypatch)
    assert code == 0, err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["then"] == [parse_then(step)[0].text]
    assert manifest["fingerprint"]["then"][0]["name"] == "polish"
    assert manifest["summary"]["post_processing"][-1].startswith("polish:")
    assert "post-processing (costs no privacy): polish" in err.replace("\n", " ")
    released = [json.loads(line)["text"] for path in sorted((tmp_path / "out").glob("shard-*"))
                for line in path.read_text().splitlines()]
    spec = MechanismSpec("emp", {"epsilon": 10.0}, str(vectors), entities={"operator": "off"},
                         then=(parse_then(step)[0].text,))
    expected = spec.build().sanitize_records([r["text"] for r in records], record_seeds(77, 0, len(records)))
    assert released == [r.text for r in expected]  # every shard polished as the library polishes


def test_compare_entries_take_a_polish_suffix(tmp_path):
    from textveil.evaluation.comparison import ComparisonPlan, parse_compared_mechanism, point_key
    from textveil.evaluation.experiment_plan import EvaluationCorpora
    from textveil.corpus.labelled import LabelledCorpus

    polished = parse_compared_mechanism("emp[layout=keep]:10,20+polish")
    plain = parse_compared_mechanism("emp[layout=keep]:10,20")
    assert (polished.grid, polished.options, polished.then) == ([10.0, 20.0], {"layout": "keep"}, ("polish",))
    assert polished.label == "emp [layout=keep]+polish" != plain.label
    assert parse_compared_mechanism("redact+polish[temperature=0.7]").then == ("polish[temperature=0.7]",)
    plan = ComparisonPlan([plain, polished], seed=1)
    assert plan.sweep_plan(polished).then == ("polish",) and plan.sweep_plan(plain).then == ()
    corpus = LabelledCorpus(["a b", "c d"], ["x", "y"])
    corpora = EvaluationCorpora(corpus, corpus)
    assert point_key(plan, corpora, polished, 10.0) != point_key(plan, corpora, plain, 10.0)
    with pytest.raises(InvalidParameterError, match=re.escape("unknown --mechanism 'emp:10+gloss' 'gloss'; use one "
                                                              "of: polish")):
        parse_compared_mechanism("emp:10+gloss")


def test_the_service_polishes_on_request(toy_word_embeddings, tiny_lm_folder):
    pytest.importorskip("fastapi", reason="the service needs fastapi")
    from fastapi.testclient import TestClient

    from textveil.service import ServiceSettings, create_app

    served = TestClient(create_app(ServiceSettings(embeddings=toy_word_embeddings, models=(tiny_lm_folder,))))
    assert served.get("/healthz").json()["polish"] == {"available": True, "reason": None}
    body = {"texts": ["The market rallied and stocks rose."], "mechanism": "emp", "parameters": {"epsilon": 10},
            "seed": 3, "entities": {"operator": "off"}}
    plain = served.post("/v1/sanitize", json=body).json()
    answer = served.post("/v1/sanitize", json={**body, "then": ["polish"]})
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["then"] == ["polish"] and plain["then"] == []
    guarantee = data["releases"][0]["guarantee"]
    assert guarantee["epsilon"] == plain["releases"][0]["guarantee"]["epsilon"] == 10.0
    note = guarantee["post_processing"][-1]
    assert note.startswith("polish:") and tiny_lm_folder.name in note and str(tiny_lm_folder) not in note
    assert any("post-processing (costs no privacy): polish" in line["text"] for line in data["summary_lines"])
    for then, message in ((["gloss"], "unknown then 'gloss'; use one of: polish"),
                          (["polish[temperature=0.7]"], "this service polishes with its own settings")):
        refused = served.post("/v1/sanitize", json={**body, "then": then})
        assert refused.status_code == 400 and message in refused.json()["detail"]
    upload = served.post("/v1/sanitize/upload", files={"file": ("post.txt", b"Oil prices fell in London.")},
                         data={"mechanism": "emp", "parameters": json.dumps({"epsilon": 10}), "then": "polish",
                               "entities": json.dumps({"operator": "off"})})
    assert upload.status_code == 200 and upload.json()["then"] == ["polish"], upload.text
    # a service that offers no mechanism with a language model does not polish, and says so
    cheap = TestClient(create_app(ServiceSettings(embeddings=toy_word_embeddings, mechanisms=("emp",))))
    assert cheap.get("/healthz").json()["polish"]["available"] is False
    refused = cheap.post("/v1/sanitize", json={**body, "then": ["polish"]})
    assert refused.status_code == 400 and "does not polish" in refused.json()["detail"]


def test_the_bundled_model_polishes_an_emp_release(toy_word_embeddings):
    skip_without_bundled_language_model()
    release = with_polish(_emp(toy_word_embeddings), max_new_tokens=12).sanitize("the market rallied and stocks rose")
    assert release.text.strip() and release.guarantee.epsilon == 10.0
    assert "smollm2-135m-instruct" in release.guarantee.post_processing[-1]
