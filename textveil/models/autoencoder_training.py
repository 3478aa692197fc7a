"""Training ER-AE and AE-DP: Adam on the reconstruction loss, then (ER-AE) the embedding reward
added (eq. 10), in the shared loop of :mod:`textveil.models.training_loop` (seeded batches,
checkpoints that a resumed run continues from exactly). The reward's random candidates in a
batch come from a generator seeded by (seed, epoch, batch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
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
from textveil.models.training_loop import TrainingProgress, derived_generator, epoch_batches, train_in_batches

CHECKPOINT_FORMAT = "textveil.autoencoder-checkpoint/1"


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
            generator = derived_generator(settings.seed, -1, epoch, number)
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
    if not training:
        raise InputError("the training corpus holds no tokens: give it some texts")
    model.to(device)
    model.train()
    unit_embeddings = unit_embeddings.to(device)

    def batch_loss(indices: list[int], epoch: int, number: int) -> tuple[torch.Tensor, int]:
        reward = settings.embedding_reward and epoch >= settings.pretrain_epochs
        generator = derived_generator(settings.seed, epoch, number) if reward else None
        total, _, tokens = _losses(model, [training[i] for i in indices], device, unit_embeddings, settings, reward,
                                   generator)
        return total, tokens

    def epoch_end(epoch: int, train_loss: float, seconds: float, tokens: int) -> tuple[dict[str, Any], str]:
        reward = settings.embedding_reward and epoch >= settings.pretrain_epochs
        validation_loss = validation_recon = None
        if validation:
            validation_loss, validation_recon = evaluate_loss(model, validation, device, unit_embeddings, settings,
                                                              reward, epoch)
        record = EpochRecord(epoch + 1, train_loss, validation_loss, validation_recon, seconds, tokens, reward)
        line = (f"epoch {epoch + 1}/{settings.epochs}: training loss {record.train_loss:.4f}"
                + (f", validation loss {validation_loss:.4f} (reconstruction {validation_recon:.4f})"
                   if validation_loss is not None else "")
                + f", {record.tokens / max(record.seconds, 1e-9):,.0f} tokens/s")
        return record.to_dict(), line

    history = train_in_batches(model, [len(s) for s in training], batch_loss, settings, epoch_end=epoch_end,
                               checkpoint=checkpoint, checkpoint_format=CHECKPOINT_FORMAT, identity=identity or {},
                               progress=progress, log=log)
    return [EpochRecord(**record) for record in history]
