"""The engines under the language-model mechanisms (:mod:`textveil.models.engines`).

A tiny random Llama is written as a GGUF file in-process (the ``gguf`` package) and run through
both engines: their logits for the same prompt agree within a stated tolerance; llama.cpp's
continuous batching gives a text the same logits and the same release whatever is decoded beside
it; the queue decodes concurrent callers together and fails one caller alone. The llama.cpp tests
skip, with the reason and the fix, where llama-cpp-python is not built or fails its check here.
"""

from __future__ import annotations

import threading
from array import array

import numpy as np
import pytest

pytest.importorskip("torch", reason="the language-model engines' tests need torch")
pytest.importorskip("transformers", reason="the language-model engines' tests need transformers")
pytest.importorskip("gguf", reason="writing the tiny GGUF model needs the gguf package (pip install gguf)")

from conftest import HANG_GUARD_S, join_guarded  # noqa: E402
from textveil.errors import InputError, InvalidParameterError  # noqa: E402
from textveil.mechanisms.paraphrase import Paraphrase  # noqa: E402
from textveil.mechanisms.restyle import Restyle  # noqa: E402
from textveil.models.engines.batching import DecodeJob, DecodeQueue, Engine  # noqa: E402
from textveil.models.engines.choice import resolve_engine  # noqa: E402
from textveil.models.engines.native import (WEIGHTS_VARIABLE, candidate_weights, cmake_args,  # noqa: E402
                                            llama_cpp_unavailable)
from textveil.models.gguf_writing import write_tiny_gguf  # noqa: E402
from textveil.models.language_model import LanguageModel, load_language_model  # noqa: E402

LOGIT_TOLERANCE = 0.02
"""Largest difference allowed between the two engines' logits for one prompt (the tiny model's
logits spread over about 4.5 nats; llama.cpp keeps its key-value cache in float16)."""

TEXTS = ["The market rallied on Friday.", "Oil prices fell in London; the bank said so.",
         "We knit a scarf with soft wool.", "I went to the zoo with my sister and we saw an elephant.",
         "The report is due next week, sorry for the delay.", "Growth, growth and more growth.",
         "The bank said so.", "Sorry for the delay, the zoo was shut."]


def need_llama_cpp() -> None:
    reason = llama_cpp_unavailable()
    if reason is not None:
        pytest.skip(f"the llama.cpp engine's tests cannot run here: {reason}")


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("tiny-gguf") / "tiny.gguf")


@pytest.fixture(scope="module")
def on_llama_cpp(tiny_gguf):
    need_llama_cpp()
    # The file's own weights, not the fastest format timed on this machine: on a CPU with bfloat16
    # dot products the timing may pick bfloat16 (8 bits of mantissa), and the engines' logits then
    # differ by more than the tolerance below, by the load of the machine rather than by the code.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(WEIGHTS_VARIABLE, "file")
        return load_language_model(str(tiny_gguf), "cpu", engine="llama-cpp")


@pytest.fixture(scope="module")
def on_transformers(tiny_gguf):
    return load_language_model(str(tiny_gguf), "cpu", engine="transformers")


# -- the two engines agree --------------------------------------------------------------


def first_step_logits(lm, prompt: list[int]) -> np.ndarray:
    """The logits ``lm`` gives after reading ``prompt`` (the first step of a reply)."""
    from textveil.models.lm_decoding import decode

    seen: list[np.ndarray] = []

    def keep(logits, rows):
        seen.append(logits[0].copy())
        return np.full(len(rows), lm.end_token_ids[0])

    decode(lm, [prompt], 0, 1, keep)
    return seen[0]


def test_both_engines_give_the_same_logits_for_the_same_prompt(on_llama_cpp, on_transformers, tmp_path):
    assert on_llama_cpp.engine.name == "llama-cpp" and on_transformers.engine.name == "transformers"
    assert on_llama_cpp.content_hash == on_transformers.content_hash  # the same file
    prompt = on_llama_cpp.chat_prompt("You rewrite texts.", "Paraphrase: the market rallied on Friday.")
    assert prompt == on_transformers.chat_prompt("You rewrite texts.", "Paraphrase: the market rallied on Friday.")
    native, reference = first_step_logits(on_llama_cpp, prompt), first_step_logits(on_transformers, prompt)
    assert native.shape == reference.shape == (on_transformers.vocabulary_size,)
    difference = np.abs(native - reference).max()
    assert difference < LOGIT_TOLERANCE, f"the engines' logits differ by {difference:.4f}"
    assert native.argmax() == reference.argmax()
    # power: another model's logits lie far outside the tolerance
    other = load_language_model(str(write_tiny_gguf(tmp_path / "other.gguf", seed=1)), "cpu", engine="transformers")
    assert np.abs(first_step_logits(other, prompt) - reference).max() > 10 * LOGIT_TOLERANCE


def test_both_engines_score_a_text_alike(on_llama_cpp, on_transformers):
    from textveil.utility.fluency import perplexity

    native, reference = (perplexity(lm, TEXTS, max_tokens=32).perplexity for lm in (on_llama_cpp, on_transformers))
    assert native == pytest.approx(reference, rel=0.01)


def test_the_guarantee_and_the_fingerprint_name_the_engine(on_llama_cpp, on_transformers):
    native = Paraphrase(30.0, language_model=on_llama_cpp, max_new_tokens=4, seed=1)
    reference = Paraphrase(30.0, language_model=on_transformers, max_new_tokens=4, seed=1)
    statement = native.sanitize(TEXTS[0]).guarantee.statement
    assert "llama.cpp" in statement and on_llama_cpp.content_hash in statement
    assert "transformers" in reference.sanitize(TEXTS[0]).guarantee.statement
    assert native.fingerprint()["engine"].startswith("llama-cpp")
    assert native.fingerprint() != reference.fingerprint()  # cached releases of one never serve the other


# -- a text's release does not depend on its neighbours -----------------------------------


def _logits_of_text(lm, prompts, target, order, batch_size):
    """The logits of every step of ``target``'s reply when ``prompts`` are decoded in ``order``
    with ``batch_size`` slots, each row drawing a fixed token sequence (never an end token)."""
    steps: list[np.ndarray] = []
    index = order.index(target)

    def fixed(logits, rows):
        for k, row in enumerate(rows):
            if row == index:
                steps.append(logits[k].copy())
        return np.full(len(rows), 300 % lm.vocabulary_size)

    from textveil.models.lm_decoding import decode

    decode(lm, [prompts[i] for i in order], 0, 6, fixed, batch_size=batch_size)
    return steps


def test_a_texts_logits_are_bit_for_bit_the_same_whatever_its_neighbours(on_llama_cpp):
    lm = on_llama_cpp
    prompts = [lm.chat_prompt("You rewrite texts.", text) for text in TEXTS]
    alone = _logits_of_text(lm, prompts, 3, [3], batch_size=1)
    assert len(alone) == 6
    for order, batch in (([0, 1, 2, 3, 4, 5, 6, 7], 8), ([7, 3, 5], 2), ([5, 6, 3, 1, 0], 4), ([3, 2], 16)):
        beside = _logits_of_text(lm, prompts, 3, order, batch_size=batch)
        assert all(np.array_equal(a, b) for a, b in zip(alone, beside)), (order, batch)


def test_scoring_follows_the_free_cores_and_scores_alike_on_one_thread(on_llama_cpp, monkeypatch):
    """Fluency's scoring context runs on the threads other processes leave free, as decoding does:
    with one core taken it is set to one thread, and its scores do not change."""
    from textveil.models.engines import llama_cpp_engine
    from textveil.models.engines.llama_cpp_engine import LlamaCppEngine
    from textveil.utility.fluency import perplexity

    engine = LlamaCppEngine(on_llama_cpp.engine.weights, on_llama_cpp.engine.weights_type, threads=2)
    lm = LanguageModel(engine, on_llama_cpp.tokenizer, on_llama_cpp.name, on_llama_cpp.content_hash)
    before = perplexity(lm, TEXTS, max_tokens=32).perplexity
    set_to: list[tuple[int, int]] = []
    real = llama_cpp_engine._llama()

    class Recording:
        def __getattr__(self, name):
            return getattr(real, name)

        def llama_set_n_threads(self, context, threads, batch_threads):
            set_to.append((threads, batch_threads))
            return real.llama_set_n_threads(context, threads, batch_threads)

    class OneFree:
        def threads(self, most: int) -> int:
            return 1

    monkeypatch.setattr(llama_cpp_engine, "_llama", lambda: Recording())
    engine._free_cores = OneFree()
    after = perplexity(lm, TEXTS, max_tokens=32).perplexity
    assert set_to == [(1, 1)]  # set once, when the free cores changed, not before every text
    assert after == pytest.approx(before, rel=1e-6)
    engine.close()


def test_a_release_is_the_same_alone_among_others_and_with_one_thread(tiny_gguf, on_llama_cpp, monkeypatch):
    mechanism = Paraphrase(25.0, language_model=on_llama_cpp, max_new_tokens=12, seed=5)
    seeds = list(range(20, 28))
    together = [r.text for r in mechanism.sanitize_records(TEXTS, seeds)]
    alone = [mechanism.with_params(seed=s).sanitize(t).text for t, s in zip(TEXTS, seeds)]
    assert together == alone and len(set(together)) > 4
    shuffled = [r.text for r in mechanism.with_params().sanitize_records(TEXTS[::-1], seeds[::-1])]
    assert shuffled[::-1] == together
    from textveil.models.engines.llama_cpp_engine import LlamaCppEngine
    from textveil.models.language_model import LanguageModel

    one_thread = LlamaCppEngine(on_llama_cpp.engine.weights, on_llama_cpp.engine.weights_type, threads=1)
    lm = LanguageModel(one_thread, on_llama_cpp.tokenizer, on_llama_cpp.name, on_llama_cpp.content_hash)
    again = Paraphrase(25.0, language_model=lm, max_new_tokens=12, seed=5).sanitize_records(TEXTS, seeds)
    assert [r.text for r in again] == together


def test_a_public_base_release_is_the_same_alone_among_others_and_in_small_batches(on_llama_cpp, on_transformers):
    """On llama.cpp the two rows of a unit (with the document, and the public prompt without it) are
    read in slots of their own and draw their first token once both are read: a release is the same
    alone, among others, in batches of one pair, and its rows always reach the draw together. The
    transformers engine releases every text too (its logits differ in the last bits: other bytes)."""
    from textveil.models.engines import batching

    mechanism = Paraphrase(8.0, score="public-base", language_model=on_llama_cpp, max_new_tokens=10, seed=5)
    seeds = list(range(30, 38))
    together = [r.text for r in mechanism.sanitize_records(TEXTS, seeds)]
    alone = [mechanism.with_params(seed=s).sanitize(t).text for t, s in zip(TEXTS, seeds)]
    small = [r.text for r in Paraphrase(8.0, score="public-base", language_model=on_llama_cpp, max_new_tokens=10,
                                        batch_size=2).sanitize_records(TEXTS, seeds)]
    assert together == alone == small and len(set(together)) > 4
    groups = []
    original = batching.DecodeJob.draw

    def spy(job, logits, rows):
        groups.append(sorted(np.asarray(rows).tolist()))
        return original(job, logits, rows)

    batching.DecodeJob.draw = spy
    try:
        mechanism.with_params(seed=1).sanitize_many(TEXTS)
    finally:
        batching.DecodeJob.draw = original
    assert groups and all(rows[::2] == [r - 1 for r in rows[1::2]] for rows in groups)
    on_torch = Paraphrase(8.0, score="public-base", language_model=on_transformers, max_new_tokens=10)
    assert [r.units for r in on_torch.sanitize_records(TEXTS, seeds)] == [
        r.units for r in mechanism.sanitize_records(TEXTS, seeds)]


# -- one face, one stop rule ---------------------------------------------------------------


def _engine_methods() -> dict[str, list[str]]:
    """The methods :class:`Engine` declares, each with its parameters' names."""
    import inspect

    return {name: list(inspect.signature(member).parameters) for name, member in vars(Engine).items()
            if not name.startswith("_") and inspect.isfunction(member)}


@pytest.mark.parametrize("engine_class", ["llama_cpp_engine.LlamaCppEngine", "transformers_engine.TransformersEngine"])
def test_every_engine_class_offers_the_whole_engine_face(engine_class):
    """Every method the protocol declares (``close`` and ``reset`` included) is the class's own,
    with the same parameters; the properties are there too (instances are checked below)."""
    import importlib
    import inspect

    module, name = engine_class.split(".")
    cls = getattr(importlib.import_module(f"textveil.models.engines.{module}"), name)
    methods = _engine_methods()
    assert {"run", "token_log_likelihoods", "reset", "close"} <= methods.keys()
    for method, parameters in methods.items():
        assert inspect.isfunction(getattr(cls, method, None)), (name, method)
        assert list(inspect.signature(getattr(cls, method)).parameters) == parameters, (name, method)
    properties = [n for n, member in vars(Engine).items() if isinstance(member, property)]
    assert {"description", "identity", "vocabulary_size", "context_length", "default_batch_rows"} <= set(properties)
    assert {"name", "device"} <= set(Engine.__annotations__) and isinstance(getattr(cls, "name", None), str)


def test_loaded_transformers_engines_satisfy_the_protocol(on_transformers, tiny_language_model):
    from textveil.models.toy_language_model import toy_language_model

    for lm in (on_transformers, tiny_language_model, toy_language_model(["calm"])):  # the tests' toy too
        assert isinstance(lm.engine, Engine), lm.engine
    assert not isinstance(object(), Engine)  # power: the check reads the members


def test_a_loaded_llama_cpp_engine_satisfies_the_protocol(on_llama_cpp):
    assert isinstance(on_llama_cpp.engine, Engine)


def test_the_transformers_engine_closes():
    from textveil.models.toy_language_model import toy_language_model

    engine = toy_language_model(["calm"]).engine
    engine.prefix_cache((1, 2))
    engine.close()
    assert engine.network is None and not engine._prefix_caches


def _scripted(lm, monkeypatch, scripts: dict[int, list[int]], limit: int, more_end_token_ids=()) -> tuple[list, list]:
    """Rows decoded together on ``lm``'s engine, row r drawing ``scripts[r]`` token by token: the
    replies, and every (row, token) the engine handed to the job's stop rule."""
    from textveil.models.lm_decoding import decode

    drawn = {row: 0 for row in scripts}
    seen: list[tuple[int, int]] = []
    original = DecodeJob.add_token

    def choose(logits, rows):
        tokens = []
        for row in rows:
            tokens.append(scripts[int(row)][drawn[int(row)]])
            drawn[int(row)] += 1
        return np.array(tokens)

    def watched(job, row, tokens, token):
        seen.append((row, token))
        return original(job, row, tokens, token)

    prompt = lm.encode("The market rallied on Friday.")
    with monkeypatch.context() as patched:
        patched.setattr(DecodeJob, "add_token", watched)
        replies = decode(lm, [prompt] * len(scripts), 0, limit, choose, more_end_token_ids=more_end_token_ids)
    return replies, seen


def _stops_by_the_one_rule(lm, monkeypatch) -> None:
    """A reply ends at an end token, at a line break (the caller's public stop rule) or at L
    tokens, and every drawn token went through :meth:`DecodeJob.add_token`; without the line-break
    rule a line break is a token like any other."""
    from textveil.mechanisms.unit_plan import line_break_tokens

    end, line_break = lm.end_token_ids[0], line_break_tokens(lm)[0]
    word = next(t for t in lm.encode(" market bank rain") if t not in lm.end_token_ids and t != line_break)
    scripts = {0: [word, word, end], 1: [word, line_break, word, word, word], 2: [word] * 9}
    replies, seen = _scripted(lm, monkeypatch, scripts, 4, more_end_token_ids=[line_break])
    assert replies == [([word, word], True), ([word], True), ([word] * 4, False)]
    assert sorted(seen) == sorted([(0, word), (0, word), (0, end), (1, word), (1, line_break)] + [(2, word)] * 4)
    replies, _ = _scripted(lm, monkeypatch, scripts, 4)
    assert replies[1] == ([word, line_break, word, word], False)


def test_the_transformers_engine_stops_by_the_one_rule(on_transformers, monkeypatch):
    _stops_by_the_one_rule(on_transformers, monkeypatch)


def test_the_llama_cpp_engine_stops_by_the_one_rule(on_llama_cpp, monkeypatch):
    _stops_by_the_one_rule(on_llama_cpp, monkeypatch)


# -- the queue: concurrent callers share batches, a failure stays with its caller ------------


class _CountingEngine:
    """An engine (the whole face, :class:`Engine`) that records how many rows each step decodes:
    every row of a job takes one step, its token through the job's stop rule."""

    name = "counting"
    device = "cpu"
    description = identity = "a counting test engine"
    vocabulary_size, context_length, default_batch_rows = 4, 64, 16

    def __init__(self) -> None:
        self.steps: list[int] = []

    def run(self, queue: DecodeQueue) -> None:
        while True:
            rows = queue.take_waiting()
            if not rows:
                return
            self.steps.append(len(rows))
            for job in {job for job, _ in rows}:
                mine = [row for j, row in rows if j is job]
                tokens = job.draw(np.zeros((len(mine), 4), dtype=np.float32), np.array(mine))
                for row, token in zip(mine, tokens if tokens is not None else []):
                    job.add_token(row, [], int(token))  # a job of one token a row: written

    def token_log_likelihoods(self, sequences, batch_size: int = 16) -> list[np.ndarray]:
        return [np.zeros(max(0, len(s) - 1)) for s in sequences]

    def reset(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_the_test_engine_offers_the_whole_face():
    assert isinstance(_CountingEngine(), Engine)


def _job(count: int, choose=None, progress=None) -> DecodeJob:
    return DecodeJob([[1, 2]] * count, 1, 1, choose or (lambda logits, rows: np.full(len(rows), 3)), frozenset({0}),
                     progress=progress)


def test_jobs_sent_together_are_decoded_in_one_batch():
    engine = _CountingEngine()
    queue = DecodeQueue(engine, join_window=1.0)  # generous: five threads start well within it
    results = {}
    threads = [threading.Thread(target=lambda i=i: results.setdefault(i, queue.decode(_job(2)))) for i in range(5)]
    for thread in threads:
        thread.start()
    join_guarded(threads, "five decode callers")
    assert len(results) == 5 and all(r == [([3], False)] * 2 for r in results.values())
    assert engine.steps[0] == 10  # every caller's rows in the first batch


def test_a_failing_job_fails_alone():
    engine = _CountingEngine()
    queue = DecodeQueue(engine, join_window=0.2)

    def broken(logits, rows):
        raise RuntimeError("this caller's draw broke")

    outcome = {}

    def send(name, job):
        try:
            outcome[name] = queue.decode(job)
        except RuntimeError as error:
            outcome[name] = error

    threads = [threading.Thread(target=send, args=("good", _job(3))), threading.Thread(target=send,
               args=("bad", _job(2, broken)))]
    for thread in threads:
        thread.start()
    join_guarded(threads, "the two decode callers")
    assert outcome["good"] == [([3], False)] * 3
    assert isinstance(outcome["bad"], RuntimeError) and "broke" in str(outcome["bad"])
    assert queue.decode(_job(1)) == [([3], False)]  # the worker goes on


def test_a_job_holds_only_the_prompts_of_rows_not_yet_written():
    """A document of many units, each unit's prompt made as the unit before it is written (four
    sections side by side): at every step the job holds the prompts of the rows in flight alone,
    as 32-bit ids, and none once it is done; the opening stays known throughout."""
    units, sections = 400, 4
    held: list[int] = []

    class Watching(_CountingEngine):
        def run(self, queue: DecodeQueue) -> None:
            while True:
                rows = queue.take_waiting()
                if not rows:
                    return
                job = rows[0][0]
                held.append(sum(prompt is not None for prompt in job.prompts))
                assert all(isinstance(job.prompts[row], array) for _, row in rows)
                assert job.opening == (7,)
                tokens = job.draw(np.zeros((len(rows), 4), dtype=np.float32), np.array([r for _, r in rows]))
                for (_, row), token in zip(rows, tokens):
                    job.add_token(row, [], int(token))

    def successor(row, tokens, ended):
        follower = row + sections
        return (follower, [7, follower % 50, *tokens] * 40) if follower < units else None

    prompts = [[7, row] if row < sections else None for row in range(units)]
    job = DecodeJob(prompts, 1, 1, lambda logits, rows: np.full(len(rows), 3), frozenset({0}), successor=successor)
    results = DecodeQueue(Watching()).decode(job)
    assert results == [([3], False)] * units
    assert len(held) == units // sections and max(held) == sections
    assert job.prompts == [None] * units and job.opening == (7,)


def test_a_caller_that_gives_up_in_progress_stops_its_job(on_llama_cpp):
    class GaveUp(Exception):
        pass

    def give_up(_done):
        raise GaveUp()

    mechanism = Paraphrase(25.0, language_model=on_llama_cpp, max_new_tokens=8, seed=5)
    with pytest.raises(GaveUp):
        mechanism.sanitize_many(TEXTS, progress=give_up)
    assert len(mechanism.sanitize_many(TEXTS[:2])) == 2  # the engine serves the next caller


def test_concurrent_releases_equal_their_releases_alone(on_llama_cpp):
    mechanism = Paraphrase(25.0, language_model=on_llama_cpp, max_new_tokens=10, seed=9)
    alone = [mechanism.with_params(seed=i).sanitize(text).text for i, text in enumerate(TEXTS)]
    out: dict[int, str] = {}
    def release(index: int, text: str) -> None:
        out[index] = mechanism.with_params(seed=index).sanitize(text).text

    threads = [threading.Thread(target=release, args=(i, t)) for i, t in enumerate(TEXTS)]
    for thread in threads:
        thread.start()
    join_guarded(threads, "the concurrent releases")
    assert [out[i] for i in range(len(TEXTS))] == alone


# -- choosing an engine ------------------------------------------------------------------


def test_auto_takes_llama_cpp_for_a_gguf_on_the_cpu_and_transformers_otherwise(tiny_gguf, tiny_lm_folder):
    assert resolve_engine("auto", tiny_lm_folder, "cpu") == "transformers"
    assert resolve_engine("auto", tiny_gguf, "cuda") == "transformers"
    assert resolve_engine("transformers", tiny_gguf, "cpu") == "transformers"
    expected = "llama-cpp" if llama_cpp_unavailable() is None else "transformers"
    assert resolve_engine("auto", tiny_gguf, "cpu") == expected


def test_an_engine_that_cannot_run_the_model_is_a_one_line_error(tiny_gguf, tiny_lm_folder):
    with pytest.raises(InputError, match="reads GGUF files.*engine=transformers"):
        resolve_engine("llama-cpp", tiny_lm_folder, "cpu")
    with pytest.raises(InputError, match="runs on the CPU here"):
        resolve_engine("llama-cpp", tiny_gguf, "cuda")
    with pytest.raises(InvalidParameterError, match="unknown --engine 'vllm'; use one of"):
        Paraphrase(30.0, engine="vllm")
    with pytest.raises(InvalidParameterError, match="runs on transformers"):
        Paraphrase(30.0, engine="llama-cpp", language_model=load_language_model(str(tiny_lm_folder), "cpu"))


def test_a_missing_llama_cpp_falls_back_to_transformers_with_one_line(tiny_gguf, monkeypatch, caplog):
    from textveil.models.engines import choice, native

    monkeypatch.setattr(native, "installed_version", lambda: None)
    monkeypatch.setattr(choice, "_TOLD", set())
    with caplog.at_level("WARNING", logger="textveil.models"):
        assert resolve_engine("auto", tiny_gguf, "cpu") == "transformers"
        assert resolve_engine("auto", tiny_gguf, "cpu") == "transformers"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "not installed" in lines[0] and "make demo" in lines[0]
    with pytest.raises(InputError, match="not installed: make demo builds it"):
        resolve_engine("llama-cpp", tiny_gguf, "cpu")


def test_a_crashing_native_library_is_caught_by_the_subprocess_check(monkeypatch, tmp_path):
    """The check runs llama.cpp in a child process: one killed by a signal (an instruction the CPU
    refuses) makes llama.cpp unavailable with the signal's name and the fix, and the verdict is kept."""
    import subprocess

    from textveil.models.engines import native

    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native, "_VERDICT", {})
    monkeypatch.setattr(native, "installed_version", lambda: "0.0-test")
    monkeypatch.setattr(native, "_library_key", lambda: "a-library-that-crashes")
    calls = []

    def killed(*args, **kwargs):
        calls.append(args)
        return subprocess.CompletedProcess(args, -4, "", "")  # SIGILL

    monkeypatch.setattr(native.subprocess, "run", killed)
    reason = native.llama_cpp_unavailable()
    assert "SIGILL" in reason and "make demo" in reason
    monkeypatch.setattr(native, "_VERDICT", {})
    assert native.llama_cpp_unavailable() == reason and len(calls) == 1  # remembered in the cache folder


def test_a_missing_python_package_is_not_remembered_as_the_cpus_verdict(monkeypatch, tmp_path):
    """A check that fails on an import (a requirement pip left out) says so in one line, but is run
    again by the next process: installing the package fixes it, and a kept verdict would not see that."""
    import subprocess

    from textveil.models.engines import native

    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native, "_VERDICT", {})
    monkeypatch.setattr(native, "installed_version", lambda: "0.0-test")
    monkeypatch.setattr(native, "_library_key", lambda: "a-library-missing-a-package")
    outcomes = [subprocess.CompletedProcess([], 1, "", "ModuleNotFoundError: No module named 'diskcache'"),
                subprocess.CompletedProcess([], 0, "", "")]
    monkeypatch.setattr(native.subprocess, "run", lambda *args, **kwargs: outcomes.pop(0))
    reason = native.llama_cpp_unavailable()
    assert "diskcache" in reason and "\n" not in reason
    monkeypatch.setattr(native, "_VERDICT", {})  # a new process, after the package was installed
    assert native.llama_cpp_unavailable() is None and not outcomes


def test_the_build_never_asks_for_amx_or_native_code():
    args = cmake_args({"avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw",
                       "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"})
    assert "-DGGML_NATIVE=OFF" in args and "AMX" not in args and "-DGGML_AVX512_BF16=ON" in args
    assert "-DGGML_AVX512=OFF" not in args and "-DGGML_AVX512=ON" in args
    assert "-DGGML_AVX512=ON" not in cmake_args({"avx", "avx2", "fma", "f16c"})
    assert candidate_weights({"avx2"}) == ["file", "f16"] and "bf16" in candidate_weights({"amx_bf16"})


# -- the restyle baseline runs on either engine --------------------------------------------


def test_restyle_runs_on_the_native_engine(on_llama_cpp):
    releases = Restyle(temperature=1.0, language_model=on_llama_cpp, max_new_tokens=6, seed=2).sanitize_many(TEXTS)
    assert len(releases) == len(TEXTS) and any(r.text for r in releases)
    assert all(r.guarantee.kind == "none" and "llama.cpp" in r.guarantee.statement for r in releases)


# -- the mechanism on the native engine, end to end ------------------------------------------


def test_paraphrase_on_llama_cpp_draws_from_the_exponential_mechanism_over_its_logits(on_llama_cpp):
    """One-token releases through the public API: the drawn tokens follow the exponential
    mechanism over the engine's own logits for the prompt (chi-square), and the exact per-token
    log-probabilities of two inputs differ by at most epsilon; power: the law at 2 epsilon is rejected."""
    from scipy import stats

    from textveil.mechanisms.sampling import exponential_mechanism_log_probabilities

    epsilon, count = 3.0, 3_000
    mechanism = Paraphrase(epsilon, language_model=on_llama_cpp, max_new_tokens=1, width=10.0, seed=11)
    drawn: list[int] = []
    original = mechanism._draw

    def recording(logits, candidates, rngs):
        positions = original(logits, candidates, rngs)
        drawn.extend(int(p) for p in positions)
        return positions

    mechanism._draw = recording
    mechanism.sanitize_many([TEXTS[0]] * count)
    candidates = mechanism._candidates()

    def law(text: str, at: float) -> np.ndarray:
        logits = first_step_logits(on_llama_cpp, mechanism.prompt_ids(text))
        return np.exp(exponential_mechanism_log_probabilities(mechanism.scores(logits[None, candidates]), at,
                                                              mechanism.sensitivity)[0])

    def fit(expected: np.ndarray) -> float:
        observed = np.bincount(drawn, minlength=expected.size)
        keep = expected * count >= 5  # rare tokens pooled into one cell, where there are any
        cells, means = observed[keep], expected[keep] * count
        if (~keep).any():
            cells, means = np.append(cells, observed[~keep].sum()), np.append(means, expected[~keep].sum() * count)
        return stats.chisquare(cells, means * cells.sum() / means.sum()).pvalue

    assert len(drawn) == count
    assert fit(law(TEXTS[0], epsilon)) > 1e-3
    assert fit(law(TEXTS[0], 2 * epsilon)) < 1e-3
    gap = np.abs(np.log(law(TEXTS[0], epsilon)) - np.log(law(TEXTS[1], epsilon))).max()
    assert gap <= epsilon + 1e-9


def test_a_release_job_on_llama_cpp_is_the_same_whatever_the_shards(tiny_gguf, on_llama_cpp, tmp_path):
    """``textveil release`` with the tiny GGUF on llama.cpp: shards of 1, 3 or all 8 records, the
    same bytes, and the library's sanitize_records."""
    from tests.test_release import SEED, concatenated, released_records, write_lm_posts
    from textveil.release.job import ReleaseJob, run_release
    from textveil.release.seeds import record_seeds
    from textveil.release.shards import MechanismSpec

    write_lm_posts(tmp_path / "posts.jsonl")
    spec = MechanismSpec("paraphrase", {"epsilon": 20.0, "max_new_tokens": 6, "model": str(tiny_gguf),
                                        "engine": "llama-cpp"}, entities={"operator": "off"})
    outputs = []
    for size in (1, 3, 8):
        run_release(ReleaseJob([str(tmp_path / "posts.jsonl")], tmp_path / f"out{size}", spec, shard_size=size,
                               seed=SEED))
        outputs.append(concatenated(tmp_path / f"out{size}"))
    assert outputs[0] == outputs[1] == outputs[2]
    texts = [record["text"] for record in _read_jsonl(tmp_path / "posts.jsonl")]
    library = Paraphrase(20.0, max_new_tokens=6, language_model=on_llama_cpp).sanitize_records(
        texts, record_seeds(SEED, 0, len(texts)))
    assert [r["text"] for r in released_records(tmp_path / "out3")] == [r.text for r in library]


def _read_jsonl(path):
    import json

    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_reply_longer_than_the_context_is_refused_in_one_line(on_llama_cpp):
    too_long = Paraphrase(30.0, language_model=on_llama_cpp, max_new_tokens=on_llama_cpp.context_length)
    with pytest.raises(InvalidParameterError, match="passes the language model's context of 1024 tokens"):
        too_long.sanitize(TEXTS[0])


@pytest.mark.slow
def test_the_bundled_model_releases_a_text_alike_alone_and_beside_long_neighbours():
    """The same on the real model (30 layers, bfloat16 or float16 weights where the calibration
    chose them, flash attention): long prompts (the sample read whole, about 250 tokens) and short
    ones, replies of up to 120 tokens, decoded together, in another order with other slots, and alone."""
    from tests.conftest import REPO_ROOT, skip_without_bundled_language_model

    skip_without_bundled_language_model()
    need_llama_cpp()
    sample = (REPO_ROOT / "examples" / "sample.txt").read_text(encoding="utf-8")
    texts = [sample, TEXTS[0], sample[::-1].swapcase(), TEXTS[3]]
    mechanism = Paraphrase(30.0, max_new_tokens=120, seed=3, engine="llama-cpp")
    seeds = [31, 32, 33, 34]
    together = [r.text for r in mechanism.sanitize_records(texts, seeds)]
    reordered = Paraphrase(30.0, max_new_tokens=120, seed=3, engine="llama-cpp", batch_size=3)
    backwards = [r.text for r in reordered.sanitize_records(texts[::-1], seeds[::-1])][::-1]
    alone = [mechanism.with_params(seed=s).sanitize(t).text for t, s in zip(texts, seeds)]
    assert together == alone == backwards


def test_the_service_decodes_requests_that_arrive_together_in_one_batch(tiny_gguf, on_llama_cpp, toy_word_embeddings,
                                                                         tmp_path, monkeypatch):
    """Six paraphrase requests sent at once to a service offering the tiny GGUF: their texts share
    decode steps (the engine saw rows of several requests in one step), every request is answered
    with the release it gets alone (the same seed), and the ledger counts each once."""
    from fastapi.testclient import TestClient

    from textveil.models.engines.llama_cpp_engine import LlamaCppEngine
    from textveil.privacy.ledger import BudgetLedger
    from textveil.service import ServiceSettings, create_app

    jobs_per_step: list[int] = []
    original = LlamaCppEngine._decode_step

    def counting(self, rows):
        jobs_per_step.append(len({id(row.job) for row in rows.values()}))
        return original(self, rows)

    monkeypatch.setattr(LlamaCppEngine, "_decode_step", counting)
    ledger = tmp_path / "budget.sqlite"
    client = TestClient(create_app(ServiceSettings(embeddings=toy_word_embeddings, models=(tiny_gguf,), ledger=ledger,
                                                   concurrency=1)))

    def body(i: int) -> dict:
        return {"texts": [TEXTS[i]], "mechanism": "paraphrase", "seed": 40 + i, "subject": f"s{i}",
                "parameters": {"epsilon": 20, "max_new_tokens": 200, "model": tiny_gguf.name, "engine": "llama-cpp"},
                "entities": {"operator": "off"}}

    answers: dict[int, dict] = {}
    together = threading.Barrier(6)

    def send(i: int) -> None:
        together.wait(HANG_GUARD_S)  # the six requests leave at once; each decodes for up to 200 steps
        answers[i] = client.post("/v1/sanitize", json=body(i)).json()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    join_guarded(threads, "the six requests")
    assert all("releases" in answers[i] for i in range(6)), answers
    assert max(jobs_per_step) >= 2  # requests in flight together were decoded in the same steps
    alone = [Paraphrase(20.0, max_new_tokens=200, seed=40 + i, language_model=on_llama_cpp).sanitize(TEXTS[i]).text
             for i in range(6)]
    assert [answers[i]["releases"][0]["text"] for i in range(6)] == alone
    assert sum(BudgetLedger(ledger).spent(f"s{i}") for i in range(6)) == 6 * 20 * 200


def test_the_audit_of_paraphrase_on_llama_cpp_keeps_its_claims(tiny_gguf, on_llama_cpp, capsys, monkeypatch):
    """``textveil audit -m paraphrase --model tiny.gguf``: the real pair (a name changed) released by
    the mechanism on llama.cpp, and the canary, both within their claims."""
    import json

    from tests.test_cli_audit import _audit

    code, out, err = _audit(["-m", "paraphrase", "-e", "4", "--set", "max_new_tokens=2", "--set", "width=10",
                             "--model", str(tiny_gguf), "--trials", "30", "--kinds", "canary,name", "--format",
                             "json"], capsys, monkeypatch)
    assert code == 0, err
    data = json.loads(out)
    assert data["passed"] is True and {p["kind"] for p in data["pairs"]} == {"canary", "name"}
    assert all(p["passed"] is True and p["bound"] <= p["claim"] for p in data["pairs"])


# -- transformers: continuous batching and the draw on the device ------------------------------


def _staggered_decode(lm, prompts, batch_size, device_logits=False, first=0):
    """Greedy decoding where row r (numbered from ``first``) ends after (r % 5) + 1 tokens, so rows leave the batch at
    different steps and waiting rows take their places; returns each row's logits, step by step."""
    import torch

    from textveil.models.lm_decoding import decode

    seen: dict[int, list[np.ndarray]] = {}
    end = next(iter(lm.end_token_ids))

    def choose(logits, rows):
        if device_logits:
            assert isinstance(logits, torch.Tensor)
            logits = logits.float().numpy()
        tokens = []
        for row, values in zip(rows, logits):
            row = int(row) + first
            seen.setdefault(row, []).append(np.array(values))
            tokens.append(end if len(seen[row]) > row % 5 + 1 else int(np.argmax(values[3:]) + 3))
        return np.array(tokens)

    results = decode(lm, prompts, 0, 8, choose, batch_size=batch_size, device_logits=device_logits)
    return results, seen


def test_transformers_refills_free_places_and_each_row_reads_as_it_would_alone(tiny_language_model):
    """Rows of many lengths ending at different steps, decoded 3 at a time (every freed place
    refilled, padding columns dropped as rows leave), 64 at a time and one at a time: every row
    sees the logits it sees alone (float32 rounding of batched products aside)."""
    lm = tiny_language_model
    prompts = [lm.encode("The bank said so. " * (1 + i % 7) + f"Row {i}.") for i in range(23)]
    alone = [_staggered_decode(lm, [prompt], 1, first=i)[1][i] for i, prompt in enumerate(prompts)]
    for batch_size, device_logits in ((3, False), (64, False), (3, True)):
        results, seen = _staggered_decode(lm, prompts, batch_size, device_logits)
        assert [len(tokens) for tokens, _ in results] == [i % 5 + 1 for i in range(23)]
        for row, steps in seen.items():
            assert len(steps) == len(alone[row])
            for ours, theirs in zip(steps, alone[row]):
                np.testing.assert_allclose(ours, theirs, atol=1e-4)


def test_transformers_takes_a_thousand_rows_on_a_gpu_and_sixteen_on_the_cpu(tiny_language_model):
    from textveil.models.engines.transformers_engine import TransformersEngine

    assert tiny_language_model.engine.default_batch_rows == 16
    assert TransformersEngine(tiny_language_model.engine.network, device="cuda").default_batch_rows == 1024
