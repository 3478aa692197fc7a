"""The loop every trained network of textveil runs: Adam over seeded mini-batches, gradient
clipping, and checkpoints that a resumed run continues from exactly.

Determinism: the order of the items in an epoch is drawn from a generator seeded by
(seed, epoch), not from one running stream, and whatever else a batch draws comes from
:func:`derived_generator` seeded by (seed, epoch, batch); so a run resumed from a checkpoint
draws what an uninterrupted one would, and with the optimizer's state in the checkpoint it ends
with the same weights.

A checkpoint is written atomically every ``checkpoint_every`` batches and at each epoch's end;
one whose settings, network or data differ from the run's is refused with one line, as is a
corrupt or truncated one, or one of another kind of network. The number of epochs is the one
setting a checkpoint need not share: nothing an epoch draws depends on how many follow it, so a
finished run's checkpoint trained on to more epochs ends with the weights of a run that had asked
for them from the start (how a model is trained longer without repeating its first epochs).
"""

from __future__ import annotations

import io
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from textveil.errors import InputError

TrainingProgress = Callable[[int, int, float], None]
"""Called after each batch with (batches done, batches in the whole run, the batch's loss)."""

BatchLoss = Callable[[list[int], int, int], tuple[torch.Tensor, int]]
"""(item indices of the batch, epoch, batch number) -> (the loss to minimise, tokens it covers)."""

EpochEnd = Callable[[int, float, float, int], tuple[dict[str, Any], str]]
"""(epoch, training loss per token, seconds, tokens) -> (the epoch's record, its log line);
it is where validation runs."""


class LoopSettings(Protocol):
    """What the loop reads of a network's training settings (a frozen dataclass)."""

    epochs: int
    batch_size: int
    learning_rate: float
    seed: int
    clip: float
    checkpoint_every: int


@dataclass
class _Position:
    epoch: int = 0
    batch: int = 0
    loss_sum: float = 0.0
    tokens: int = 0
    seconds: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)


def derived_generator(*numbers: int) -> torch.Generator:
    """A generator seeded by a tuple of integers (the run's seed, the epoch, the batch...).

    >>> a, b = derived_generator(1, 2), derived_generator(1, 2)
    >>> torch.equal(torch.rand(3, generator=a), torch.rand(3, generator=b))
    True
    """
    generator = torch.Generator()
    seed = 0
    for number in numbers:
        seed = (seed * 1_000_003 + int(number)) % (2**63 - 1)
    generator.manual_seed(seed)
    return generator


def epoch_batches(lengths: Sequence[int], batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """The batches of one epoch, as item indices: a seeded shuffle, then items of like length
    grouped (sorted within windows of 20 batches) so that little padding is computed.

    >>> epoch_batches([3, 1, 2, 5], 2, seed=0, epoch=0) == epoch_batches([3, 1, 2, 5], 2, seed=0, epoch=0)
    True
    """
    order = torch.randperm(len(lengths), generator=derived_generator(seed, epoch)).tolist()
    window = batch_size * 20
    batches: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda i: lengths[i])
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    mix = torch.randperm(len(batches), generator=derived_generator(seed, epoch, 1)).tolist()
    return [batches[i] for i in mix]


def training_seed(seed: int | None, checkpoint: Path | None) -> int:
    """The seed a training run draws from: the user's; else, when an unseeded run left a
    checkpoint, that run's (so that rerunning the same command resumes it); else a fresh one
    from OS entropy.

    >>> training_seed(7, None)
    7
    """
    if seed is not None:
        return seed
    if checkpoint is not None and checkpoint.is_file():
        try:
            saved = torch.load(checkpoint, map_location="cpu", weights_only=True)
            return int(saved["identity"]["settings"]["seed"])
        except Exception:  # noqa: BLE001 - a damaged checkpoint is reported by the loop, in one line
            pass
    return secrets.randbits(62)


def train_in_batches(
    model: torch.nn.Module,
    lengths: Sequence[int],
    batch_loss: BatchLoss,
    settings: LoopSettings,
    *,
    epoch_end: EpochEnd,
    checkpoint: Path | None,
    checkpoint_format: str,
    identity: dict[str, Any],
    progress: TrainingProgress | None = None,
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Train ``model`` (already on its device, in training mode) over items of ``lengths``;
    returns the epoch records (``epoch_end``'s), those of a resumed run's earlier epochs included.

    ``identity`` (settings, network shape, data digest) must equal the checkpoint's for it to be
    resumed; ``checkpoint_format`` names the kind of network, so that one network's checkpoint
    is never loaded into another.
    """
    say = log or (lambda message: None)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=settings.learning_rate)
    identity = {"settings": asdict(settings), **identity}  # type: ignore[call-overload]
    position = _Position()
    if checkpoint is not None and checkpoint.exists():
        position = _resume(checkpoint, checkpoint_format, model, optimizer, identity)
        if position.epoch > settings.epochs:
            raise InputError(f"checkpoint '{checkpoint}' has trained {position.epoch} epochs, more than the "
                             f"{settings.epochs} asked for; ask for at least {position.epoch} or train into another folder")
        say(f"resuming from {checkpoint}: epoch {position.epoch + 1}, batch {position.batch}")
    per_epoch = len(epoch_batches(lengths, settings.batch_size, settings.seed, 0))
    total_batches = per_epoch * settings.epochs
    while position.epoch < settings.epochs:
        epoch = position.epoch
        batches = epoch_batches(lengths, settings.batch_size, settings.seed, epoch)
        started = time.perf_counter()
        for number in range(position.batch, len(batches)):
            optimizer.zero_grad()
            total, tokens = batch_loss(batches[number], epoch, number)
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
                _save(checkpoint, checkpoint_format, model, optimizer, identity, position)
                say(f"checkpoint: epoch {epoch + 1}, batch {position.batch} of {len(batches)}, "
                    f"training loss {position.loss_sum / max(1, position.tokens):.4f}")
            if progress is not None:
                progress(epoch * per_epoch + position.batch, total_batches, loss)
        position.seconds += time.perf_counter() - started
        record, line = epoch_end(epoch, position.loss_sum / max(1, position.tokens), round(position.seconds, 3),
                                 position.tokens)
        model.train()
        position.history.append(record)
        say(line)
        position = _Position(epoch + 1, 0, 0.0, 0, 0.0, position.history)
        if checkpoint is not None:
            _save(checkpoint, checkpoint_format, model, optimizer, identity, position)
    return position.history


def _save(path: Path, checkpoint_format: str, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
          identity: dict[str, Any], position: _Position) -> None:
    from textveil.atomic_files import atomic_write_bytes

    buffer = io.BytesIO()
    torch.save({"format": checkpoint_format, "identity": identity, "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "position": asdict(position)}, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def _without_epochs(identity: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint's identity less the number of epochs asked for: a run may go on past it."""
    settings = identity.get("settings")
    if not isinstance(settings, dict):
        return identity
    return {**identity, "settings": {k: v for k, v in settings.items() if k != "epochs"}}


def _resume(path: Path, checkpoint_format: str, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
            identity: dict[str, Any]) -> _Position:
    device = next(model.parameters()).device
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
    except Exception:  # noqa: BLE001 - torch raises many kinds for a damaged file
        raise InputError(f"checkpoint '{path}' is corrupt or truncated; delete it to train from the start") from None
    if not isinstance(saved, dict) or saved.get("format") != checkpoint_format:
        raise InputError(f"'{path}' is not a checkpoint of this kind of network ({checkpoint_format}); delete it "
                         "or train into another folder")
    theirs = _without_epochs(saved.get("identity") if isinstance(saved.get("identity"), dict) else {})
    ours = _without_epochs(identity)
    if theirs != ours:
        changed = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        raise InputError(f"checkpoint '{path}' was made with other {', '.join(changed)}; train into another folder "
                         "or delete it to start again")
    try:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
    except (KeyError, RuntimeError, ValueError):
        raise InputError(f"checkpoint '{path}' does not fit this network; delete it to train from the start") from None
    return _Position(**saved["position"])
