"""Training ER-AE and AE-DP: Adam on the reconstruction loss, then (ER-AE) the embedding reward
added (eq. 10), with checkpoints that a resumed run continues from exactly.

Determinism: the order of the segments in an epoch and the reward's random candidates in a
batch are drawn from generators seeded by (seed, epoch) and (seed, epoch, batch), not from one
running stream, so a run resumed from a checkpoint draws what an uninterrupted one would, and
with the optimizer's state in the checkpoint it ends with the same weights.

A checkpoint is written atomically every ``checkpoint_every`` batches and at each epoch's end;
one whose settings, network or data differ from the run's is refused with one line, as is a
corrupt or truncated one.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from textveil.errors import InputError
from textveil.models.autoencoder import (
    AutoEncoder,
    embedding_reward_loss,
    pad_batch,
    reconstruction_loss,
)

CHECKPOINT_FORMAT = "textveil.autoencoder-checkpoint/1"

TrainingProgress = Callable[[int, int, float], None]
"""Called after each batch with (batches done, batches in the whole run, the batch's loss)."""


@dataclass(frozen=True)
class TrainingSettings:
    """How to train. ``pretrain_epochs`` of reconstruction come first; with ``embedding_reward``
    the remaining epochs add ``lambda_embed`` times the reward loss."""

    epochs: int
    batch_size: int = 128
    learning_rate: float = 0.001
    embedding_reward: bool = False
    pretrain_epochs: int = 0
    k: int = 5
    lambda_recon: float = 1.0
    lambda_embed: float = 0.5
    seed: int = 0
    clip: float = 5.0
    """Gradients are clipped to this norm (recurrent networks' exploding gradients)."""
    checkpoint_every: int = 200


@dataclass
class EpochRecord:
    epoch: int
    train_loss: float
    validation_loss: float | None
    validation_reconstruction: float | None
    seconds: float
    tokens: int
    reward: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Position:
    epoch: int = 0
    batch: int = 0
    loss_sum: float = 0.0
    tokens: int = 0
    seconds: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)


def _derived_generator(*numbers: int) -> torch.Generator:
    generator = torch.Generator()
    seed = 0
    for number in numbers:
        seed = (seed * 1_000_003 + int(number)) % (2**63 - 1)
    generator.manual_seed(seed)
    return generator


def epoch_batches(lengths: Sequence[int], batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """The batches of one epoch, as segment indices: a seeded shuffle, then segments of like
    length grouped (sorted within windows of 20 batches) so that little padding is computed.

    >>> epoch_batches([3, 1, 2, 5], 2, seed=0, epoch=0) == epoch_batches([3, 1, 2, 5], 2, seed=0, epoch=0)
    True
    """
    order = torch.randperm(len(lengths), generator=_derived_generator(seed, epoch)).tolist()
    window = batch_size * 20
    batches: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda i: lengths[i])
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    mix = torch.randperm(len(batches), generator=_derived_generator(seed, epoch, 1)).tolist()
    return [batches[i] for i in mix]


def _losses(model: AutoEncoder, batch: Sequence[Sequence[int]], device: torch.device, unit_embeddings: torch.Tensor,
            settings: TrainingSettings, reward: bool, generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor, int]:
    ids, lengths = pad_batch(batch)
    ids = ids.to(device)
    logits, mask = model.step_logits(ids, lengths)
    targets = ids[mask]
    recon = reconstruction_loss(logits, targets)
    total = settings.lambda_recon * recon if reward else recon
    if reward:
        assert generator is not None
        total = total + settings.lambda_embed * embedding_reward_loss(logits, targets, unit_embeddings, settings.k, generator)
    return total, recon, int(targets.numel())


def evaluate_loss(model: AutoEncoder, segments: Sequence[Sequence[int]], device: torch.device,
                  unit_embeddings: torch.Tensor, settings: TrainingSettings, reward: bool, epoch: int) -> tuple[float, float]:
    """(total loss, reconstruction loss) per token over ``segments``, without training."""
    model.eval()
    total_sum = recon_sum = 0.0
    count = 0
    with torch.no_grad():
        for number, batch in enumerate(epoch_batches([len(s) for s in segments], settings.batch_size, settings.seed, -1)):
            chosen = [segments[i] for i in batch]
            generator = _derived_generator(settings.seed, -1, epoch, number)
            total, recon, tokens = _losses(model, chosen, device, unit_embeddings, settings, reward, generator)
            total_sum += total.item() * tokens
            recon_sum += recon.item() * tokens
            count += tokens
    model.train()
    return (total_sum / count, recon_sum / count) if count else (float("nan"), float("nan"))


def train_autoencoder(
    model: AutoEncoder,
    training: Sequence[Sequence[int]],
    validation: Sequence[Sequence[int]],
    unit_embeddings: torch.Tensor,
    settings: TrainingSettings,
    *,
    device: torch.device,
    checkpoint: Path | None = None,
    identity: dict[str, Any] | None = None,
    progress: TrainingProgress | None = None,
    log: Callable[[str], None] | None = None,
) -> list[EpochRecord]:
    """Train ``model`` in place on token-id segments; returns one record per epoch.

    ``checkpoint``: a file to resume from (when it exists) and to write to. ``identity`` (the
    network's shape and the data's digest) must match the checkpoint's for it to be resumed.
    """
    say = log or (lambda message: None)
    if not training:
        raise InputError("the training corpus holds no tokens: give it some texts")
    model.to(device)
    model.train()
    unit_embeddings = unit_embeddings.to(device)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=settings.learning_rate)
    identity = {"settings": asdict(settings), **(identity or {})}
    position = _Position()
    if checkpoint is not None and checkpoint.exists():
        position = _resume(checkpoint, model, optimizer, identity, device)
        say(f"resuming from {checkpoint}: epoch {position.epoch + 1}, batch {position.batch}")
    lengths = [len(s) for s in training]
    per_epoch = len(epoch_batches(lengths, settings.batch_size, settings.seed, 0))
    total_batches = per_epoch * settings.epochs
    while position.epoch < settings.epochs:
        epoch = position.epoch
        reward = settings.embedding_reward and epoch >= settings.pretrain_epochs
        batches = epoch_batches(lengths, settings.batch_size, settings.seed, epoch)
        started = time.perf_counter()
        for number in range(position.batch, len(batches)):
            chosen = [training[i] for i in batches[number]]
            generator = _derived_generator(settings.seed, epoch, number) if reward else None
            optimizer.zero_grad()
            total, _, tokens = _losses(model, chosen, device, unit_embeddings, settings, reward, generator)
            total.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), settings.clip)
            optimizer.step()
            loss = total.item()
            position.loss_sum += loss * tokens
            position.tokens += tokens
            position.batch = number + 1
            if checkpoint is not None and position.batch % settings.checkpoint_every == 0:
                position.seconds += time.perf_counter() - started
                started = time.perf_counter()
                _save(checkpoint, model, optimizer, identity, position)
                say(f"checkpoint: epoch {epoch + 1}, batch {position.batch} of {len(batches)}, "
                    f"training loss {position.loss_sum / max(1, position.tokens):.4f}")
            if progress is not None:
                progress(epoch * per_epoch + position.batch, total_batches, loss)
        position.seconds += time.perf_counter() - started
        validation_loss = validation_recon = None
        if validation:
            validation_loss, validation_recon = evaluate_loss(model, validation, device, unit_embeddings, settings,
                                                              reward, epoch)
        record = EpochRecord(epoch + 1, position.loss_sum / max(1, position.tokens), validation_loss, validation_recon,
                             round(position.seconds, 3), position.tokens, reward)
        position.history.append(record.to_dict())
        say(f"epoch {epoch + 1}/{settings.epochs}: training loss {record.train_loss:.4f}"
            + (f", validation loss {validation_loss:.4f} (reconstruction {validation_recon:.4f})"
               if validation_loss is not None else "")
            + f", {record.tokens / max(record.seconds, 1e-9):,.0f} tokens/s")
        position = _Position(epoch + 1, 0, 0.0, 0, 0.0, position.history)
        if checkpoint is not None:
            _save(checkpoint, model, optimizer, identity, position)
    return [EpochRecord(**record) for record in position.history]


def _save(path: Path, model: AutoEncoder, optimizer: torch.optim.Optimizer, identity: dict[str, Any],
          position: _Position) -> None:
    from textveil.corpus.writing import atomic_write_bytes

    buffer = io.BytesIO()
    torch.save({"format": CHECKPOINT_FORMAT, "identity": identity, "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "position": asdict(position)}, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def _resume(path: Path, model: AutoEncoder, optimizer: torch.optim.Optimizer, identity: dict[str, Any],
            device: torch.device) -> _Position:
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
    except Exception:  # noqa: BLE001 - torch raises many kinds for a damaged file
        raise InputError(f"checkpoint '{path}' is corrupt or truncated; delete it to train from the start") from None
    if not isinstance(saved, dict) or saved.get("format") != CHECKPOINT_FORMAT:
        raise InputError(f"'{path}' is not a textveil auto-encoder checkpoint; delete it or train into another folder")
    if saved.get("identity") != identity:
        changed = sorted(k for k in set(identity) | set(saved.get("identity", {}))
                         if identity.get(k) != saved.get("identity", {}).get(k))
        raise InputError(f"checkpoint '{path}' was made with other {', '.join(changed)}; train into another folder "
                         "or delete it to start again")
    try:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
    except (KeyError, RuntimeError, ValueError):
        raise InputError(f"checkpoint '{path}' does not fit this network; delete it to train from the start") from None
    return _Position(**saved["position"])
