"""Paper 004's user-conditioned character language models, with layer normalisation
(appendix 6, eqs. 10-11), and their batched sampler.

Every model reads, at step t, the previous character c (a row of ``W``: W c for a one-hot c)
and the user's vector W_user e_j (a row of ``U``: the same at every step), and predicts the next
character through o_t = W_out h_t with a softmax at temperature tau (eq. 8):

* ``elman`` (eqs. 1-2): h_t = tanh(LN(W c + W_user e_j + W_rec h_{t-1})), one normalisation
  of the whole pre-activation, as the appendix prescribes for a simple RNN.
* ``gru`` (eqs. 18-21): update gate z, reset gate r and candidate h^ each sum three separately
  normalised terms, LN(W x) + LN(U e_j) + LN(V h) (V applied to r * h for the candidate);
  h_t = z * h_{t-1} + (1 - z) * h^.
* ``delta`` (eqs. 3-7 with 12-17): d_rec = LN(V_d h_{t-1}), d_dat = LN(W x) + LN(W_user e_j),
  z = phi(d_rec * d_dat + d_rec + d_dat) with phi LeCun's scaled tanh 1.7159 tanh(2v/3),
  r = sigmoid(d_dat + b_r), h_t = (1 - r) * z + r * h_{t-1} (Phi the identity).

What does not depend on h (the data and user terms, and the Delta-RNN's gate) is computed for
all steps at once; only the recurrence runs step by step. A text is read from the start symbol
and ends with the end symbol, or at the length cap (a text cut there has no end symbol to learn).

torch is imported here: import this module lazily.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

ARCHITECTURES = ("elman", "gru", "delta")

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS: tuple[str, ...] = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
NEVER_SAMPLED = (PAD_ID, BOS_ID, UNK_ID)
"""A sample never draws padding, the start symbol or the unknown character (it has no text)."""

LECUN_SCALE, LECUN_SLOPE = 1.7159, 2.0 / 3.0


@dataclass(frozen=True)
class CharTrainingSettings:
    """How a character model trains (paper 004: Adam, step size 0.002, mini-batches of 32)."""

    epochs: int
    batch_size: int = 32
    learning_rate: float = 0.002
    seed: int = 0
    clip: float = 5.0
    """Gradients are clipped to this norm (recurrent networks' exploding gradients)."""
    checkpoint_every: int = 200


@dataclass(frozen=True)
class CharModelShape:
    """What a network is built from (what saved weights must match)."""

    architecture: str
    characters: int
    users: int
    hidden: int = 256

    def to_dict(self) -> dict[str, int | str]:
        return asdict(self)


def build_characters(texts: Iterable[str], min_count: int = 2, max_characters: int = 500) -> list[str]:
    """The special rows, then the characters seen at least ``min_count`` times, most frequent
    first (ties: first seen first), at most ``max_characters`` of them. Rarer ones read as
    ``<unk>``: a character one writer alone uses is a fingerprint the model need not learn.

    >>> build_characters(["abca", "ab!"], min_count=2)
    ['<pad>', '<s>', '</s>', '<unk>', 'a', 'b']
    """
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(text)
    kept = [c for c, n in counts.most_common() if n >= min_count]
    return list(SPECIALS) + kept[:max_characters]


def encode_text(text: str, index: dict[str, int], max_length: int) -> list[int]:
    """The ids a text is trained on: start symbol, its first ``max_length`` characters, and the
    end symbol when the text ended within the cap.

    >>> encode_text("ab", {"a": 4, "b": 5}, 280), encode_text("abz", {"a": 4, "b": 5}, 2)
    ([1, 4, 5, 2], [1, 4, 5])
    """
    ids = [BOS_ID] + [index.get(c, UNK_ID) for c in text[:max_length]]
    return ids + [EOS_ID] if len(text) <= max_length else ids


def decode_ids(ids: Iterable[int], characters: Sequence[str]) -> str:
    """Characters of sampled ids, up to the end symbol.

    >>> decode_ids([4, 5, 2, 4], ["<pad>", "<s>", "</s>", "<unk>", "a", "b"])
    'ab'
    """
    out = []
    for i in ids:
        if i == EOS_ID:
            break
        if i >= len(SPECIALS):
            out.append(characters[i])
    return "".join(out)


class ChunkedLayerNorm(nn.Module):
    """Layer normalisation (eqs. 10-11) of ``chunks`` pre-activations of size ``hidden`` laid
    side by side, each with its own scale s and shift b."""

    def __init__(self, chunks: int, hidden: int) -> None:
        super().__init__()
        self.chunks, self.hidden = chunks, hidden
        self.scale = nn.Parameter(torch.ones(chunks, hidden))
        self.shift = nn.Parameter(torch.zeros(chunks, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shaped = x.reshape(*x.shape[:-1], self.chunks, self.hidden)
        normal = F.layer_norm(shaped, (self.hidden,)) * self.scale + self.shift
        return normal.reshape(x.shape)


class _Cell(nn.Module):
    """A recurrence split in two: ``inputs`` (everything that does not read h, for all steps
    at once) and ``step`` (the recurrence proper). The user's term is the same at every step:
    a sampler computes it once (:meth:`user_term`) and passes it to each step's ``inputs``."""

    def __init__(self, shape: CharModelShape, chunks: int) -> None:
        super().__init__()
        self.hidden = shape.hidden
        self.char_in = nn.Embedding(shape.characters, chunks * shape.hidden)  # W x (one-hot x)
        self.user_in = nn.Embedding(shape.users, chunks * shape.hidden)  # W_user e_j

    def char_term(self, ids: torch.Tensor) -> torch.Tensor:
        return self.char_in(ids)

    def user_term(self, users: torch.Tensor) -> torch.Tensor:
        return self.user_in(users)

    def with_data(self, data: torch.Tensor) -> torch.Tensor:
        """What the step reads beside the data term (the Delta-RNN adds its gate)."""
        return data

    def inputs(self, ids: torch.Tensor, users: torch.Tensor | None = None, *,
               user_term: torch.Tensor | None = None) -> torch.Tensor:
        """The step inputs for ``ids`` (batch x steps) of ``users`` (or their ``user_term``)."""
        if user_term is None:
            assert users is not None
            user_term = self.user_term(users)
        return self.with_data(self.char_term(ids) + user_term.unsqueeze(1))

    def step(self, pre: torch.Tensor, h: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


class ElmanCell(_Cell):
    """Eqs. 1-2 with one layer normalisation of the pre-activation."""

    def __init__(self, shape: CharModelShape) -> None:
        super().__init__(shape, 1)
        self.recurrent = nn.Linear(shape.hidden, shape.hidden, bias=False)
        self.norm = nn.LayerNorm(shape.hidden)

    def step(self, pre: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.norm(pre + self.recurrent(h)))


class _NormalisedTermsCell(_Cell):
    """The data and user terms each layer-normalised apart (the GRU's and the Delta-RNN's);
    subclasses set ``char_norm`` and ``user_norm``."""

    char_norm: nn.Module
    user_norm: nn.Module

    def char_term(self, ids: torch.Tensor) -> torch.Tensor:
        return self.char_norm(self.char_in(ids))

    def user_term(self, users: torch.Tensor) -> torch.Tensor:
        return self.user_norm(self.user_in(users))


class GRUCell(_NormalisedTermsCell):
    """Eqs. 18-21: nine normalised terms, three per gate."""

    def __init__(self, shape: CharModelShape) -> None:
        super().__init__(shape, 3)
        self.char_norm, self.user_norm = ChunkedLayerNorm(3, shape.hidden), ChunkedLayerNorm(3, shape.hidden)
        self.gates_rec = nn.Linear(shape.hidden, 2 * shape.hidden, bias=False)  # V_z, V_r
        self.gates_norm = ChunkedLayerNorm(2, shape.hidden)
        self.candidate_rec = nn.Linear(shape.hidden, shape.hidden, bias=False)  # V_h
        self.candidate_norm = nn.LayerNorm(shape.hidden)

    def step(self, pre: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        size = self.hidden
        gates = torch.sigmoid(pre[:, :2 * size] + self.gates_norm(self.gates_rec(h)))
        z, r = gates[:, :size], gates[:, size:]
        candidate = torch.tanh(pre[:, 2 * size:] + self.candidate_norm(self.candidate_rec(r * h)))
        return z * h + (1 - z) * candidate


class DeltaCell(_NormalisedTermsCell):
    """Eqs. 12-17: the data term d_dat and the gate r are computed for all steps at once."""

    def __init__(self, shape: CharModelShape) -> None:
        super().__init__(shape, 1)
        self.char_norm, self.user_norm = nn.LayerNorm(shape.hidden), nn.LayerNorm(shape.hidden)
        self.recurrent = nn.Linear(shape.hidden, shape.hidden, bias=False)  # V_d
        self.recurrent_norm = nn.LayerNorm(shape.hidden)
        self.gate_bias = nn.Parameter(torch.zeros(shape.hidden))  # b_r

    def with_data(self, data: torch.Tensor) -> torch.Tensor:
        return torch.cat([data, torch.sigmoid(data + self.gate_bias)], dim=-1)  # d_dat | r

    def step(self, pre: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        data, r = pre[:, :self.hidden], pre[:, self.hidden:]
        rec = self.recurrent_norm(self.recurrent(h))
        z = LECUN_SCALE * torch.tanh(LECUN_SLOPE * (rec * data + rec + data))
        return (1 - r) * z + r * h


CELLS: dict[str, type[_Cell]] = {"elman": ElmanCell, "gru": GRUCell, "delta": DeltaCell}


class UserCharRNN(nn.Module):
    """One of the three cells with the output layer W_out; see the module's docstring.

    >>> model = UserCharRNN(CharModelShape("delta", characters=6, users=2, hidden=8))
    >>> model(torch.tensor([[1, 4, 5]]), torch.tensor([1])).shape
    torch.Size([1, 3, 6])
    """

    def __init__(self, shape: CharModelShape) -> None:
        super().__init__()
        if shape.architecture not in CELLS:
            raise ValueError(f"unknown architecture '{shape.architecture}'; use one of {', '.join(ARCHITECTURES)}")
        self.shape = shape
        self.cell = CELLS[shape.architecture](shape)
        self.out = nn.Linear(shape.hidden, shape.characters)  # W_out

    def initial_state(self, batch: int, device: torch.device) -> torch.Tensor:
        return torch.zeros(batch, self.shape.hidden, device=device)

    def forward(self, ids: torch.Tensor, users: torch.Tensor) -> torch.Tensor:
        """Logits of the next character after each of ``ids`` (batch x steps), for ``users``."""
        pre = self.cell.inputs(ids, users)
        h = self.initial_state(ids.shape[0], ids.device)
        states = []
        for step_input in pre.unbind(1):  # unbind, not pre[:, t]: its gradient is one stack, not T full-size ones
            h = self.cell.step(step_input, h)
            states.append(h)
        return self.out(torch.stack(states, dim=1))


def sequence_loss(model: UserCharRNN, sequences: Sequence[Sequence[int]], users: Sequence[int],
                  device: torch.device) -> tuple[torch.Tensor, int]:
    """Eq. 9: the negative log-likelihood of every character after the first (the start
    symbol), per predicted character; and how many characters that is."""
    longest = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), longest), PAD_ID, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    ids = ids.to(device)
    logits = model(ids[:, :-1], torch.tensor(list(users), dtype=torch.long, device=device))
    targets = ids[:, 1:]
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=PAD_ID)
    return loss, int((targets != PAD_ID).sum())


def next_characters(logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> torch.Tensor:
    """One character per row: drawn from softmax(logits / temperature) (eq. 8), or the most
    probable one at temperature 0 (the limit tau -> 0+); specials never but the end symbol.

    >>> logits = torch.tensor([[0.0, 0.0, 0.0, 0.0, 1.0, 3.0]])
    >>> next_characters(logits, 0.0, None).tolist()
    [5]
    """
    masked = logits.clone()
    masked[:, list(NEVER_SAMPLED)] = -math.inf
    if temperature == 0:
        return masked.argmax(dim=1)
    probabilities = torch.softmax(masked.double() / temperature, dim=1)
    return torch.multinomial(probabilities, 1, generator=generator).squeeze(1)


@torch.no_grad()
def sample_texts(model: UserCharRNN, users: Sequence[int], characters: Sequence[str], *, temperature: float,
                 max_length: int, generator: torch.Generator | None, batch_size: int = 256,
                 progress: Callable[[int], None] | None = None) -> list[str]:
    """One text per entry of ``users``: from the start symbol until the end symbol or
    ``max_length`` characters. Batches of ``batch_size`` texts are sampled together, in order,
    from ``generator`` (on the model's device), so a seed gives the same texts for the same
    users, batch size and device. ``progress(n)`` is told after each batch."""
    device = next(model.parameters()).device
    model.eval()
    texts: list[str] = []
    for start in range(0, len(users), batch_size):
        chunk = torch.tensor(list(users[start:start + batch_size]), dtype=torch.long, device=device)
        rows = chunk.shape[0]
        h = model.initial_state(rows, device)
        previous = torch.full((rows,), BOS_ID, dtype=torch.long, device=device)
        user_term = model.cell.user_term(chunk)  # the same at every step: computed once
        drawn = torch.full((rows, max_length), EOS_ID, dtype=torch.long, device=device)
        finished = torch.zeros(rows, dtype=torch.bool, device=device)
        for t in range(max_length):
            pre = model.cell.inputs(previous.unsqueeze(1), user_term=user_term)[:, 0]
            h = model.cell.step(pre, h)
            previous = next_characters(model.out(h), temperature, generator)
            previous = torch.where(finished, torch.full_like(previous, EOS_ID), previous)
            drawn[:, t] = previous
            finished |= previous == EOS_ID
            if bool(finished.all()):
                break
        texts += [decode_ids(row, characters) for row in drawn.cpu().tolist()]
        if progress is not None:
            progress(rows)
    return texts
