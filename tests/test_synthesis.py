"""Paper 004's neural synthesis (``synth``) end to end on tiny models: each cell overfits a
two-user corpus and writes each user's characters, the temperature behaves as eq. 8 says (tau
-> 0 is greedy decoding, draws follow softmax(logits / tau), specials are never drawn), seeded
releases repeat, resumable training, damaged checkpoints and saved models, the corpus release,
the Guarantee, and the three cells against their equations (appendix 6).

Every model is tiny (hidden 24, eight texts of at most nine characters, one full batch per
epoch) and seeded, so the whole file runs in seconds and every number is reproducible. torch
runs on one thread: on a busy machine more threads make each tiny batch much slower.
"""

from __future__ import annotations

import functools
import json
import math
import shutil

import numpy as np
import pytest
from conftest import TrainingInterrupt
import torch
from scipy import stats

from textveil.errors import InputError
from textveil.mechanisms.base import MANIFEST, Mechanism
from textveil.mechanisms.synthesis import CHECKPOINT, NeuralSynthesis
from textveil.models import char_rnn
from textveil.models.autoencoder_training import CHECKPOINT_FORMAT as AUTOENCODER_CHECKPOINT_FORMAT
from textveil.models.char_rnn import (
    ARCHITECTURES,
    EOS_ID,
    LECUN_SCALE,
    LECUN_SLOPE,
    NEVER_SAMPLED,
    SPECIALS,
    CharModelShape,
    UserCharRNN,
    next_characters,
    sample_texts,
)

# Two users with disjoint letters (the space is shared). Every prefix of a user's texts has one
# most frequent continuation by a margin of at least log 2, so greedy decoding is well defined.
A_TEXTS = ("aaaa bbbb", "aaaa bbbb", "abab baba", "bbbb aaaa")
B_TEXTS = ("xyz xyz", "xyz xyz", "zyx zyx", "xxyyzz")
TEXTS = A_TEXTS + B_TEXTS
USERS = ("A",) * len(A_TEXTS) + ("B",) * len(B_TEXTS)
A_CHARS, B_CHARS = set("ab "), set("xyz ")
A_ONLY, B_ONLY = A_CHARS - B_CHARS, B_CHARS - A_CHARS

TINY = dict(hidden=24, epochs=60, batch_size=8, learning_rate=0.02, max_length=20, seed=0, device="cpu")
"""One full batch per epoch: Adam on the whole corpus, enough to overfit it in 60 steps."""

SAMPLED_USERS = ["A"] * 20 + ["B"] * 20


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@functools.lru_cache(maxsize=None)
def _trained(architecture: str) -> NeuralSynthesis:
    """A tiny model of TEXTS (trained once per architecture; tests copy it with ``with_params``)."""
    return NeuralSynthesis(0.3, architecture=architecture, **TINY).train(TEXTS, USERS)


@pytest.fixture(scope="module")
def delta_model() -> NeuralSynthesis:
    return _trained("delta")


def _share(texts: list[str], allowed: set[str]) -> float:
    characters = "".join(texts)
    return sum(c in allowed for c in characters) / max(1, len(characters))


# --------------------------------------------------------------------------------------
# 1. Learning: every cell overfits a two-user corpus and writes in each user's characters.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_each_cell_overfits_two_users(architecture) -> None:
    """The training loss falls far below the first epoch's, and at temperature 0.3 user A's
    samples are written in A's characters, B's in B's: the user conditioning works."""
    model = _trained(architecture)
    losses = [record["train_loss"] for record in model.history_]
    assert len(losses) == TINY["epochs"]
    assert losses[-1] < 0.3 * losses[0], losses
    assert np.mean(losses[-5:]) < np.mean(losses[10:15]) < np.mean(losses[:5])
    assert model.users == ["A", "B"]

    texts = model.with_params(seed=1).synthesize(SAMPLED_USERS)
    a_texts, b_texts = texts[:20], texts[20:]
    assert sum(map(len, a_texts)) >= 20 * 4 and sum(map(len, b_texts)) >= 20 * 4  # not empty texts
    assert _share(a_texts, A_CHARS) > 0.9 and not set("".join(a_texts)) & B_ONLY, a_texts
    assert _share(b_texts, B_CHARS) > 0.9 and not set("".join(b_texts)) & A_ONLY, b_texts
    assert sum(t in A_TEXTS for t in a_texts) >= 15 and sum(t in B_TEXTS for t in b_texts) >= 15


# --------------------------------------------------------------------------------------
# 2. The temperature (eq. 8).
# --------------------------------------------------------------------------------------


def _sample(model: NeuralSynthesis, users: list[str], temperature: float, seed: int) -> list[str]:
    generator = torch.Generator().manual_seed(seed)
    index = {u: i for i, u in enumerate(model.users)}
    return sample_texts(model._network(), [index[u] for u in users], [str(c) for c in model.characters_],
                        temperature=temperature, max_length=model.max_length, generator=generator)


def _greedy_margins(model: NeuralSynthesis, user: str) -> list[float]:
    """Along the greedy path of ``user``: the gap between the best drawable logit and the next."""
    network = model._network()
    ids = [char_rnn.BOS_ID]
    margins = []
    with torch.no_grad():
        for _ in range(model.max_length):
            logits = network(torch.tensor([ids]), torch.tensor([model.users.index(user)]))[0, -1].clone()
            logits[list(NEVER_SAMPLED)] = -math.inf
            top = torch.topk(logits, 2)
            margins.append(float(top.values[0] - top.values[1]))
            ids.append(int(top.indices[0]))
            if ids[-1] == EOS_ID:
                break
    return margins


def test_temperature_towards_zero_is_greedy_decoding(delta_model) -> None:
    """Temperature 0 is the argmax (the same texts from any generator); temperature 0.01 draws
    exactly those texts (every greedy step wins by a margin that makes any other draw
    impossible at that temperature); temperature 2 does not."""
    greedy = _sample(delta_model, SAMPLED_USERS, 0.0, seed=1)
    assert greedy == _sample(delta_model, SAMPLED_USERS, 0.0, seed=2)
    assert len(set(greedy[:20])) == 1 and len(set(greedy[20:])) == 1 and greedy[0] != greedy[-1]
    assert greedy[0] in A_TEXTS and greedy[-1] in B_TEXTS
    for user in ("A", "B"):
        assert min(_greedy_margins(delta_model, user)) > 0.3  # exp(-30) per alternative at tau = 0.01
    assert _sample(delta_model, SAMPLED_USERS, 0.01, seed=3) == greedy
    hot = _sample(delta_model, SAMPLED_USERS, 2.0, seed=3)
    assert sum(h != g for h, g in zip(hot, greedy)) >= 10


LOGITS = torch.tensor([4.0, 4.0, 0.3, 4.0, 1.0, 0.5, -0.5, 0.0, 2.0])
"""Padding, start and unknown are the likeliest rows: the sampler must never draw them."""
NEVER = [SPECIALS.index(special) for special in ("<pad>", "<s>", "<unk>")]
DRAWABLE = [i for i in range(len(LOGITS)) if i not in NEVER]


def _draw_counts(temperature: float, n: int = 20_000, seed: int = 0) -> np.ndarray:
    draws = next_characters(LOGITS.repeat(n, 1), temperature, torch.Generator().manual_seed(seed))
    return np.bincount(draws.numpy(), minlength=len(LOGITS))


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_next_characters_draws_softmax_at_the_temperature(temperature) -> None:
    """The frequencies of many draws fit softmax(logits / T) over the drawable rows (chi-square),
    and not softmax(logits): the temperature is applied, and applied once."""
    counts = _draw_counts(temperature)
    assert counts[NEVER].sum() == 0 and (counts[DRAWABLE] > 0).all()
    drawable = LOGITS[DRAWABLE].double()
    expected = torch.softmax(drawable / temperature, 0).numpy() * counts.sum()
    assert stats.chisquare(counts[DRAWABLE], expected).pvalue > 1e-3
    if temperature != 1.0:
        untempered = torch.softmax(drawable, 0).numpy() * counts.sum()
        assert stats.chisquare(counts[DRAWABLE], untempered).pvalue < 1e-6


def test_next_characters_at_temperature_zero_and_near_it_takes_the_best_drawable() -> None:
    """At 0 and at 1e-3 every draw is the best drawable row (not the likelier specials)."""
    best = DRAWABLE[int(LOGITS[DRAWABLE].argmax())]
    assert next_characters(LOGITS.repeat(5, 1), 0.0, None).tolist() == [best] * 5
    counts = _draw_counts(1e-3, n=2000)
    assert counts[best] == 2000


# --------------------------------------------------------------------------------------
# 3, 4. Seeds and users.
# --------------------------------------------------------------------------------------


def test_seeded_synthesis_repeats_and_unseeded_differs(delta_model) -> None:
    """The same seed writes the same texts; ``with_params(seed=...)`` restarts the stream; other
    seeds and unseeded copies write differently (at temperature 1, where draws vary)."""
    hot = delta_model.with_params(temperature=1.0, seed=7)
    first = hot.synthesize(SAMPLED_USERS)
    assert hot.synthesize(SAMPLED_USERS) != first  # the stream moves on...
    assert hot.with_params(seed=7).synthesize(SAMPLED_USERS) == first  # ...and restarts from the seed
    assert delta_model.with_params(temperature=1.0, seed=7).synthesize(SAMPLED_USERS) == first
    assert delta_model.with_params(temperature=1.0, seed=8).synthesize(SAMPLED_USERS) != first
    unseeded = [delta_model.with_params(temperature=1.0, seed=None).synthesize(SAMPLED_USERS) for _ in range(2)]
    assert unseeded[0] != unseeded[1]


def test_a_user_absent_from_training_is_refused(delta_model) -> None:
    """Writing for a user the model never saw fails with one line naming that user."""
    for call in (lambda: delta_model.synthesize(["A", "Zed"]),
                 lambda: delta_model.release_corpus(["some text", "other"], ["B", "Zed"])):
        with pytest.raises(InputError, match="'Zed'") as error:
            call()
        assert "\n" not in str(error.value)


# --------------------------------------------------------------------------------------
# 5, 6. Checkpoints, resuming and saved models.
# --------------------------------------------------------------------------------------


RESUMABLE = dict(hidden=16, epochs=3, batch_size=2, learning_rate=0.01, max_length=20, seed=5, device="cpu")
"""4 batches per epoch, 12 in all."""


@pytest.fixture
def checkpoint_every_two(monkeypatch):
    """The mechanism builds its CharTrainingSettings itself: make their default a checkpoint every 2 batches."""
    settings = functools.partial(char_rnn.CharTrainingSettings, checkpoint_every=2)
    monkeypatch.setattr(char_rnn, "CharTrainingSettings", settings)


def _interrupted(folder, at: int = 3, **changes) -> None:
    with pytest.raises(KeyboardInterrupt):
        NeuralSynthesis(**{**RESUMABLE, **changes}).train(TEXTS, USERS, folder=folder, progress=TrainingInterrupt(at))
    assert (folder / CHECKPOINT).is_file()


def test_interrupted_training_resumes_to_the_same_weights(tmp_path, checkpoint_every_two) -> None:
    """A run stopped mid-epoch (one batch after its last checkpoint) and started again into the
    same folder ends with exactly the weights and losses of a run never interrupted, and writes
    the same texts."""
    whole = NeuralSynthesis(**RESUMABLE).train(TEXTS, USERS, folder=tmp_path / "whole")

    folder = tmp_path / "interrupted"
    stop = TrainingInterrupt(at=7)  # epoch 2, batch 3; the checkpoint after batch 2 was written
    with pytest.raises(KeyboardInterrupt):
        NeuralSynthesis(**RESUMABLE).train(TEXTS, USERS, folder=folder, progress=stop)
    assert stop.done == list(range(1, 8)) and (folder / CHECKPOINT).is_file()

    told, messages = TrainingInterrupt(), []
    resumed = NeuralSynthesis(**RESUMABLE).train(TEXTS, USERS, folder=folder, progress=told, log=messages.append)
    assert told.done == list(range(7, 13))  # batch 7 is done again, nothing before it
    assert any("resuming" in message for message in messages)
    assert np.array_equal(resumed.weights_, whole.weights_)
    assert [r["train_loss"] for r in resumed.history_] == pytest.approx([r["train_loss"] for r in whole.history_],
                                                                         rel=1e-12)
    torch.manual_seed(123)  # the global stream plays no part: training draws from its own seed only
    fresh = NeuralSynthesis(**RESUMABLE).train(TEXTS, USERS)
    assert np.array_equal(fresh.weights_, whole.weights_)
    assert not np.array_equal(fresh.weights_, NeuralSynthesis(**{**RESUMABLE, "seed": 6}).train(TEXTS, USERS).weights_)
    assert resumed.synthesize(SAMPLED_USERS) == whole.synthesize(SAMPLED_USERS)


def test_an_unseeded_run_resumes_with_its_own_seed(tmp_path, checkpoint_every_two) -> None:
    """Rerunning the same unseeded command into the same folder resumes it (the seed drawn from
    OS entropy is the checkpoint's), rather than refusing the checkpoint as "other settings"."""
    unseeded = {**RESUMABLE, "seed": None}
    with pytest.raises(KeyboardInterrupt):
        NeuralSynthesis(**unseeded).train(TEXTS, USERS, folder=tmp_path, progress=TrainingInterrupt(at=5))
    messages: list[str] = []
    resumed = NeuralSynthesis(**unseeded).train(TEXTS, USERS, folder=tmp_path, log=messages.append)
    assert any("resuming" in message for message in messages) and len(resumed.history_) == RESUMABLE["epochs"]


def test_fit_holds_out_each_users_tenth_texts_so_no_user_loses_all_of_them() -> None:
    """A user whose only text sits at a corpus-wide tenth position still trains (it used to be
    held out whole, and fit refused the corpus)."""
    texts = ["aaaa bbbb"] * 9 + ["xyz xyz"] + ["aaaa bbbb"] * 10
    users = ["A"] * 9 + ["C"] + ["A"] * 10
    model = NeuralSynthesis(hidden=8, epochs=1, batch_size=8, seed=0, device="cpu").fit(texts, users)
    assert model.users == ["A", "C"] and model.history_[0]["validation_loss"] is not None


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_corrupt_checkpoint_is_refused(tmp_path, checkpoint_every_two, damage) -> None:
    """A garbled, truncated or empty checkpoint.pt gives a one-line InputError naming the
    checkpoint, not a torch traceback."""
    folder = tmp_path / "model"
    _interrupted(folder)
    path = folder / CHECKPOINT
    if damage == "garbage":
        path.write_bytes(b"not a checkpoint at all" * 10)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        path.write_bytes(b"")
    with pytest.raises(InputError, match="checkpoint") as error:
        NeuralSynthesis(**RESUMABLE).train(TEXTS, USERS, folder=folder)
    assert "\n" not in str(error.value) and "corrupt or truncated" in str(error.value)


@pytest.mark.parametrize(("damage", "named"), [("auto-encoder", "this kind of network"), ("not a dict", "this kind"),
                                               ("learning rate", "settings"), ("hidden", "shape"),
                                               ("data", "data"), ("architecture", "shape")])
def test_a_checkpoint_of_another_network_or_run_is_refused(tmp_path, checkpoint_every_two, damage, named) -> None:
    """A checkpoint of an auto-encoder (its format), or of a character network with other
    settings, shape or data, is refused with one line saying what differs."""
    folder = tmp_path / "model"
    _interrupted(folder)
    path = folder / CHECKPOINT
    changes, texts = {}, TEXTS
    if damage == "auto-encoder":
        saved = torch.load(path, weights_only=True)
        torch.save({**saved, "format": AUTOENCODER_CHECKPOINT_FORMAT}, path)
    elif damage == "not a dict":
        torch.save([1, 2, 3], path)
    elif damage == "learning rate":
        changes = {"learning_rate": 0.005}
    elif damage == "hidden":
        changes = {"hidden": 8}
    elif damage == "architecture":
        changes = {"architecture": "gru"}
    else:
        texts = TEXTS[:-1] + ("xyz zyx",)
    with pytest.raises(InputError, match=named) as error:
        NeuralSynthesis(**{**RESUMABLE, **changes}).train(texts, USERS, folder=folder)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


@pytest.fixture(scope="module")
def saved_model(delta_model, tmp_path_factory):
    return delta_model.save(tmp_path_factory.mktemp("synth") / "model")


def test_a_saved_model_loads_and_writes_the_same(delta_model, saved_model) -> None:
    """Save then load: the same users, characters and weights, and the same texts for a seed
    (the loaded model's own seed, and any other)."""
    loaded = Mechanism.load(saved_model)
    assert isinstance(loaded, NeuralSynthesis)
    assert loaded.users == delta_model.users and list(loaded.characters_) == list(delta_model.characters_)
    assert np.array_equal(loaded.weights_, delta_model.weights_)
    assert loaded.fingerprint() == delta_model.fingerprint()
    assert loaded.synthesize(SAMPLED_USERS) == delta_model.with_params(seed=TINY["seed"]).synthesize(SAMPLED_USERS)
    hot = dict(temperature=1.0, seed=4)
    assert loaded.with_params(**hot).synthesize(SAMPLED_USERS) == delta_model.with_params(**hot).synthesize(
        SAMPLED_USERS)


@pytest.mark.parametrize("damage", ["truncated state", "garbage state", "no state", "other hidden size"])
def test_a_damaged_model_folder_is_refused(saved_model, tmp_path, damage) -> None:
    """A truncated, garbled or missing state.npz, or weights that do not fit the network the
    manifest describes, fail on load with a one-line InputError."""
    folder = shutil.copytree(saved_model, tmp_path / "model")
    state = folder / "state.npz"
    if damage == "truncated state":
        state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    elif damage == "garbage state":
        state.write_bytes(b"PK\x03\x04 but not a zip")
    elif damage == "no state":
        state.unlink()
    else:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        manifest["parameters"]["hidden"] = 32
        (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(InputError) as error:
        Mechanism.load(folder)
    assert "\n" not in str(error.value)
    assert ("does not fit" if damage == "other hidden size" else "state.npz") in str(error.value)


# --------------------------------------------------------------------------------------
# 7, 9. The corpus release and its Guarantee.
# --------------------------------------------------------------------------------------


def test_release_corpus_keeps_users_and_never_reads_the_texts(delta_model) -> None:
    """One synthetic text per label, in the labels' order (each in its user's characters), not
    aligned with the input; other texts with the same labels and seed give the same release."""
    labels = ["B", "A", "A", "B", "A", "B", "B", "A", "B"]
    release = delta_model.with_params(seed=11).release_corpus(["?"] * len(labels), labels)
    assert release.labels == labels and release.aligned is False
    assert len(release.texts) == len(labels)
    for text, label in zip(release.texts, labels):
        assert text and set(text) <= (A_CHARS if label == "A" else B_CHARS), (text, label)
    assert release.stats == {"texts_synthesised": len(labels),
                             "characters_synthesised": sum(map(len, release.texts))}
    other = delta_model.with_params(seed=11).release_corpus(["secret " * 20] * len(labels), labels)
    assert other.texts == release.texts and other.labels == labels
    assert delta_model.with_params(seed=11).synthesize(labels) == release.texts


def test_the_guarantee_is_none(delta_model) -> None:
    """No formal guarantee: kind none, no epsilon, and the statement says so in capitals and
    names what is released unprotected."""
    guarantee = delta_model.guarantee()
    assert guarantee.kind == "none" and guarantee.epsilon is None
    assert "NO formal" in guarantee.statement and "synth" in guarantee.statement
    assert any("memorised" in item for item in guarantee.unprotected)
    assert NeuralSynthesis.spec().guarantee == "none"


# --------------------------------------------------------------------------------------
# 10. The cells follow their equations (appendix 6).
# --------------------------------------------------------------------------------------


def _ln(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """Eqs. 10-11, written out (biased variance, the epsilon of torch's layer norm)."""
    mean = x.mean(-1, keepdim=True)
    return scale * (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5) + shift


def _reference_step(cell, c: int, j: int, h: torch.Tensor) -> torch.Tensor:
    """One step of each cell from the paper's equations and the module's own parameters."""
    size = cell.hidden
    wx, ue = cell.char_in.weight[c], cell.user_in.weight[j]
    if isinstance(cell, char_rnn.ElmanCell):  # eq. 1 with LN of the whole pre-activation
        return torch.tanh(_ln(wx + ue + cell.recurrent.weight @ h, cell.norm.weight, cell.norm.bias))
    if isinstance(cell, char_rnn.DeltaCell):  # eqs. 12-17
        d_rec = _ln(cell.recurrent.weight @ h, cell.recurrent_norm.weight, cell.recurrent_norm.bias)
        d_dat = _ln(wx, cell.char_norm.weight, cell.char_norm.bias) + _ln(ue, cell.user_norm.weight,
                                                                          cell.user_norm.bias)
        z = LECUN_SCALE * torch.tanh(LECUN_SLOPE * (d_rec * d_dat + d_rec + d_dat))
        r = torch.sigmoid(d_dat + cell.gate_bias)
        return (1 - r) * z + r * h
    # GRU, eqs. 18-21: chunk k of the input weights is gate k (z, r, candidate)

    def data(k: int) -> torch.Tensor:
        part = slice(k * size, (k + 1) * size)
        return (_ln(wx[part], cell.char_norm.scale[k], cell.char_norm.shift[k])
                + _ln(ue[part], cell.user_norm.scale[k], cell.user_norm.shift[k]))

    v_z, v_r = cell.gates_rec.weight[:size], cell.gates_rec.weight[size:]
    z = torch.sigmoid(data(0) + _ln(v_z @ h, cell.gates_norm.scale[0], cell.gates_norm.shift[0]))
    r = torch.sigmoid(data(1) + _ln(v_r @ h, cell.gates_norm.scale[1], cell.gates_norm.shift[1]))
    candidate = torch.tanh(data(2) + _ln(cell.candidate_rec.weight @ (r * h), cell.candidate_norm.weight,
                                         cell.candidate_norm.bias))
    return z * h + (1 - z) * candidate


def _random_network(architecture: str, seed: int = 0) -> UserCharRNN:
    """A small network whose every parameter (layer-norm scales and shifts too) is random."""
    torch.manual_seed(seed)
    network = UserCharRNN(CharModelShape(architecture, characters=7, users=3, hidden=6))
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.copy_(torch.randn_like(parameter))
    return network


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_each_cell_follows_its_equations(architecture) -> None:
    """The network's logits over a sequence equal W_out h_t + b with h_t unrolled from the
    paper's equations (so a swapped gate, chunk or normalisation shows); and the state matters."""
    network = _random_network(architecture)
    ids, user = [1, 4, 6, 5, 4], 2
    with torch.no_grad():
        logits = network(torch.tensor([ids]), torch.tensor([user]))[0]
        h, expected = torch.zeros(6), []
        for c in ids:
            h = _reference_step(network.cell, c, user, h)
            expected.append(network.out.weight @ h + network.out.bias)
        assert torch.allclose(logits, torch.stack(expected), atol=1e-5)
        pre = network.cell.inputs(torch.tensor([[4]]), torch.tensor([user]))[:, 0]
        h1, h2 = torch.randn(1, 6), torch.randn(1, 6)
        assert not torch.allclose(network.cell.step(pre, h1), network.cell.step(pre, h2), atol=1e-3)


def test_delta_cell_without_recurrent_weights_interpolates() -> None:
    """With V_d = 0, d_rec = LN(0) = 0 and the step is (1 - r) * phi(d_dat) + r * h, with
    phi(v) = 1.7159 tanh(2v / 3) and r = sigmoid(d_dat + b_r) (eqs. 12-17)."""
    torch.manual_seed(1)
    cell = UserCharRNN(CharModelShape("delta", characters=7, users=3, hidden=6)).cell
    with torch.no_grad():
        cell.recurrent.weight.zero_()
        cell.gate_bias.copy_(torch.randn(6))
        h = torch.randn(2, 6)
        ids, users = torch.tensor([[4], [5]]), torch.tensor([0, 2])
        d_dat = cell.char_norm(cell.char_in(ids[:, 0])) + cell.user_norm(cell.user_in(users))
        r = torch.sigmoid(d_dat + cell.gate_bias)
        phi = LECUN_SCALE * torch.tanh(LECUN_SLOPE * d_dat)
        stepped = cell.step(cell.inputs(ids, users)[:, 0], h)
        assert torch.allclose(stepped, (1 - r) * phi + r * h, atol=1e-6)
        assert torch.allclose(LECUN_SCALE * torch.tanh(torch.tensor(LECUN_SLOPE)), torch.tensor(1.0), atol=2e-3)


def test_gru_update_gate_near_one_keeps_the_state_and_near_zero_replaces_it() -> None:
    """Shifting the update gate's recurrent term far up makes z ~ 1 and h_t = h_{t-1} (eq. 21);
    shifting the reset gate's instead does not; z ~ 0 with r ~ 0 gives a candidate that ignores
    h_{t-1} (eq. 20)."""
    network = _random_network("gru")
    cell = network.cell
    pre = cell.inputs(torch.tensor([[4], [5]]), torch.tensor([0, 1]))[:, 0]
    h, other = torch.rand(2, 6) * 2 - 1, torch.rand(2, 6) * 2 - 1
    with torch.no_grad():
        cell.gates_norm.shift.zero_()
        cell.gates_norm.shift[0] += 40.0  # z -> 1
        assert torch.allclose(cell.step(pre, h), h, atol=1e-6)
        cell.gates_norm.shift.zero_()
        cell.gates_norm.shift[1] += 40.0  # r -> 1 only: the state is not simply kept
        assert not torch.allclose(cell.step(pre, h), h, atol=1e-2)
        cell.gates_norm.shift.fill_(-40.0)  # z -> 0, r -> 0: h_t = tanh(data + LN(V_h 0)), whatever h was
        assert torch.allclose(cell.step(pre, h), cell.step(pre, other), atol=1e-6)
        assert torch.allclose(cell.step(pre, h), torch.tanh(pre[:, 12:] + cell.candidate_norm.bias), atol=1e-6)


def test_specials_are_the_first_rows() -> None:
    """The ids the sampler and the loss rely on: padding, start and unknown are never drawn."""
    assert SPECIALS == ("<pad>", "<s>", "</s>", "<unk>") and SPECIALS[EOS_ID] == "</s>"
    assert sorted(NEVER_SAMPLED) == NEVER
