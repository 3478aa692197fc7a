"""ER-AE's network (paper 002): a bidirectional GRU encoder and a GRU generator over a token
vocabulary, with the two training losses (reconstruction, embedding reward).

* Encoder (eq. 1): a bidirectional GRU over the token embeddings; the latent vector is a linear
  map of the last layer's final forward and backward states.
* Generator (eq. 2, 3): a GRU whose input at step i is the embedding of the previous *original*
  token (``<bos>`` at step 1) joined to the latent vector, and whose first state is a map of
  the latent vector; a linear layer gives the logits z_i over the vocabulary and a softmax
  the probabilities. Because every step reads the original tokens, never the generated ones,
  all steps are computed in one pass, in training and in release alike.
* The embedding reward (the loss above eq. 9) credits, at every step, the k most probable
  candidates and k uniformly drawn ones with gamma = min(cosine(Em(x_i), Em(v)), 0.85), using
  fixed pre-trained embeddings (the semantics "learned from the other corpus"), never the
  trained ones.

This module holds no privacy logic: the exponential mechanism that draws the release lives in
:mod:`textveil.mechanisms.autoencoder`. torch is imported here, so import this module lazily.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

PAD, UNK, BOS = "<pad>", "<unk>", "<bos>"
SPECIALS: tuple[str, ...] = (PAD, UNK, BOS)
"""Rows 0, 1, 2 of every vocabulary. A release never contains them: the mechanism draws from
the other rows only (a fixed, public candidate set)."""
PAD_ID, UNK_ID, BOS_ID = 0, 1, 2

REWARD_CAP = 0.85
"""gamma = min(cosine, 0.85): no candidate, not even the original token, earns more."""


@dataclass(frozen=True)
class NetworkShape:
    """The sizes a network is built from (what a saved model must match)."""

    vocabulary: int
    embedding_dim: int
    hidden: int = 512
    layers: int = 2
    freeze_embeddings: bool = True

    def to_dict(self) -> dict[str, int | bool]:
        return asdict(self)


def build_vocabulary(token_lists: Iterable[Sequence[str]], size: int) -> list[str]:
    """The special rows, then the ``size - 3`` most frequent tokens (ties: first seen first).

    >>> build_vocabulary([["a", "b", "a"], ["c", "a", "b"]], 5)
    ['<pad>', '<unk>', '<bos>', 'a', 'b']
    """
    counts: Counter[str] = Counter()
    for tokens in token_lists:
        counts.update(tokens)
    for special in SPECIALS:
        counts.pop(special, None)
    return list(SPECIALS) + [token for token, _ in counts.most_common(max(0, size - len(SPECIALS)))]


def encode_tokens(tokens: Sequence[str], index: dict[str, int]) -> list[int]:
    """Token ids, ``<unk>`` for tokens outside the vocabulary.

    >>> encode_tokens(["a", "zebra"], {"a": 3})
    [3, 1]
    """
    return [index.get(token, UNK_ID) for token in tokens]


def segments(ids: Sequence[int], max_length: int) -> list[list[int]]:
    """A token sequence cut into consecutive segments of at most ``max_length`` tokens (the
    model reads at most that many at once); an empty sequence has none.

    >>> segments([1, 2, 3, 4, 5], 2)
    [[1, 2], [3, 4], [5]]
    """
    return [list(ids[start:start + max_length]) for start in range(0, len(ids), max_length)]


def pad_batch(batch: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids (batch x longest) and the lengths."""
    lengths = torch.tensor([len(s) for s in batch], dtype=torch.long)
    ids = torch.full((len(batch), int(lengths.max())), PAD_ID, dtype=torch.long)
    for row, sequence in enumerate(batch):
        ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    return ids, lengths


class AutoEncoder(nn.Module):
    """Encoder and generator sharing one embedding table (rows initialised from pre-trained
    vectors, frozen or trained as the shape says)."""

    def __init__(self, shape: NetworkShape, initial_embeddings: np.ndarray) -> None:
        super().__init__()
        self.shape = shape
        vectors = torch.as_tensor(np.asarray(initial_embeddings, dtype=np.float32))
        if tuple(vectors.shape) != (shape.vocabulary, shape.embedding_dim):
            raise ValueError(f"initial embeddings of shape {tuple(vectors.shape)} do not fit {shape}")
        self.embedding = nn.Embedding.from_pretrained(vectors.clone(), freeze=shape.freeze_embeddings,
                                                      padding_idx=PAD_ID)
        h, d, layers = shape.hidden, shape.embedding_dim, shape.layers
        self.encoder = nn.GRU(d, h, num_layers=layers, batch_first=True, bidirectional=True)
        self.to_latent = nn.Linear(2 * h, h)  # W_h of eq. 1 (latent size = hidden size)
        self.to_initial_state = nn.Linear(h, layers * h)
        self.generator = nn.GRU(d + h, h, num_layers=layers, batch_first=True)
        self.to_logits = nn.Linear(h, shape.vocabulary)  # w_v, b_v of eq. 2

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The latent vector E(x) of each sequence (batch x hidden), eq. 1."""
        packed = pack_padded_sequence(self.embedding(ids), lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, final = self.encoder(packed)  # (layers * 2) x batch x hidden
        forward, backward = final[-2], final[-1]  # the last layer's two directions
        return self.to_latent(torch.cat([forward, backward], dim=1))

    def generator_states(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The generator's output state at every step (batch x length x hidden), eq. 2: step i
        reads the original token i-1 (``<bos>`` first) and the latent vector."""
        latent = self.encode(ids, lengths)
        batch, length = ids.shape
        previous = torch.cat([torch.full((batch, 1), BOS_ID, dtype=ids.dtype, device=ids.device), ids[:, :-1]], dim=1)
        inputs = torch.cat([self.embedding(previous), latent.unsqueeze(1).expand(batch, length, -1)], dim=2)
        initial = torch.tanh(self.to_initial_state(latent)).view(batch, self.shape.layers, -1).transpose(0, 1)
        states, _ = self.generator(inputs, initial.contiguous())
        return states

    def step_logits(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The logits z_i (n x vocabulary) at the n real (non-padding) steps of the batch, in
        row-major order, and the mask that picks those steps."""
        states = self.generator_states(ids, lengths)
        mask = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0) < lengths.to(ids.device).unsqueeze(1)
        return self.to_logits(states[mask]), mask


def reconstruction_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Eq. 8: -log Pr[x~_i = x_i], averaged over the steps."""
    return nn.functional.cross_entropy(logits, targets)


def embedding_reward_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    unit_embeddings: torch.Tensor,
    k: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """The embedding reward (above eq. 9), averaged over the steps: at each step, minus the
    log-probability of each of the k most probable candidates and of k candidates drawn
    uniformly from the non-special rows, each weighted by gamma(x_i, v) = min(cosine, 0.85).

    ``unit_embeddings`` holds the fixed pre-trained vectors of the vocabulary at unit length
    (zero rows for the special tokens, so they earn nothing). ``generator`` draws the random
    candidates (seeded by the trainer per batch, so a resumed run draws what an uninterrupted
    one would).
    """
    log_probabilities = torch.log_softmax(logits, dim=1)
    steps, vocabulary = logits.shape
    top = torch.topk(logits.detach(), min(k, vocabulary), dim=1).indices
    drawn = torch.randint(len(SPECIALS), vocabulary, (steps, k), generator=generator).to(logits.device)
    candidates = torch.cat([top, drawn], dim=1)
    target_vectors = unit_embeddings[targets]  # steps x dim
    gamma = torch.einsum("sd,skd->sk", target_vectors, unit_embeddings[candidates]).clamp(max=REWARD_CAP)
    return -(log_probabilities.gather(1, candidates) * gamma).sum(dim=1).mean()


def unit_rows(vectors: np.ndarray) -> torch.Tensor:
    """Rows at unit length (zero rows stay zero), as float32."""
    matrix = torch.as_tensor(np.asarray(vectors, dtype=np.float32))
    norms = matrix.norm(dim=1, keepdim=True)
    return matrix / torch.where(norms > 0, norms, torch.ones_like(norms))


def flatten_parameters(model: nn.Module) -> np.ndarray:
    """Every parameter and buffer of ``model`` as one float32 vector (its state-dict order)."""
    return np.concatenate([t.detach().cpu().reshape(-1).numpy().astype(np.float32) for t in model.state_dict().values()])


def load_flat_parameters(model: nn.Module, flat: np.ndarray) -> None:
    """Set ``model``'s state from :func:`flatten_parameters`' vector; a size mismatch fails."""
    state = model.state_dict()
    expected = sum(t.numel() for t in state.values())
    if flat.size != expected:
        raise ValueError(f"the saved weights hold {flat.size} numbers, the network {expected}")
    offset, loaded = 0, {}
    for name, tensor in state.items():
        loaded[name] = torch.from_numpy(np.array(flat[offset:offset + tensor.numel()], dtype=np.float32)).view_as(tensor)
        offset += tensor.numel()
    model.load_state_dict(loaded)
