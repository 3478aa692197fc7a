"""Neural synthetic corpora (paper 004): a character language model conditioned on each user
writes new texts for that user; the sampling temperature is the risk-utility dial.

The release is a new corpus (``corpus_level``): for every user, as many texts as the user has
in the set to be released, each sampled from the start symbol to the end symbol or the length
cap. The released texts themselves are never read: only their users and how many each has.
The model (:mod:`textveil.models.char_rnn`: ``elman``, ``gru`` or ``delta``) is trained on other
texts of the same users.

There is no formal guarantee. A synthetic text is drawn from a model of the user's writing, so
what the model learned of a user's style and topics is what the release keeps; the model may
also repeat training texts verbatim. The risk is measured by attacks (the harness; a
release-aware attacker trains the same model on the texts it knows and attacks with its own
synthetic texts), and memorisation by :func:`textveil.utility.memorisation.memorisation`.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.base import CHECKPOINT, CorpusRelease, Mechanism, ProgressCallback, Release, texts_hash
from textveil.mechanisms.redaction import no_guarantee
from textveil.mechanisms.trained_network import TrainedNetwork
from textveil.models.device import check_device, resolve_device
from textveil.privacy.guarantee import Guarantee

CHECKPOINT_FORMAT = "textveil.char-rnn-checkpoint/1"
ONE_USER = ""
"""The user of every text of a corpus fitted without users: the model of a whole corpus."""

UNPROTECTED = (
    "the number of texts per user and the pseudonymous user label linking each user's texts",
    "each user's vocabulary, topics and style as far as the model learned them (that is the utility)",
    "any training text or long passage the model memorised and repeats verbatim",
)


def validation_split(users: Sequence[str]) -> list[bool]:
    """Which texts ``fit`` holds out for the validation loss: each user's 10th, 20th, ... text,
    so every user keeps at least nine training texts for each one held out.

    >>> validation_split(["a"] * 10 + ["b"] * 3)
    [False, False, False, False, False, False, False, False, False, True, False, False, False]
    """
    seen: dict[str, int] = {}
    held = []
    for user in users:
        seen[user] = seen.get(user, 0) + 1
        held.append(seen[user] % 10 == 0)
    return held


def _digest(values: Iterable[str]) -> str:
    return hashlib.sha256("\x00".join(values).encode("utf-8")).hexdigest()[:16]


class NeuralSynthesis(TrainedNetwork, Mechanism):
    """The ``synth`` mechanism: per-user synthetic texts from a user-conditioned character RNN.

    >>> texts, users = ["aaaa aaaa", "aaa aa"] * 8, ["A", "A"] * 8
    >>> model = NeuralSynthesis(0.5, hidden=16, epochs=30, batch_size=4, seed=0).fit(texts, users)
    >>> release = model.release_corpus(["?", "?"], ["A", "A"])
    >>> release.labels, release.aligned, all(set(t) <= set("a ") for t in release.texts)
    (['A', 'A'], False, True)
    """

    name = "synth"
    placeholder_rule = ("placeholders are characters like any others to the character model, learned from the "
                        "training texts after the stage; it may write them in a new text")
    corpus_level: ClassVar[bool] = True
    needs_fit: ClassVar[bool] = True
    fit_uses_seed: ClassVar[bool] = True
    fit_uses_labels: ClassVar[bool] = True
    release_command: ClassVar[str] = "textveil synthesize --model DIR"
    writes_synthetic_corpus: ClassVar[bool] = True

    def __init__(self, temperature: float = 1.0, *, architecture: str = "delta", hidden: int = 256, epochs: int = 10,
                 batch_size: int = 32, learning_rate: float = 0.002, max_length: int = 280, min_char_count: int = 2,
                 seed: int | None = None, device: str = "auto", sample_batch: int = 256) -> None:
        self._check_parameters(temperature=temperature, architecture=architecture, hidden=hidden, epochs=epochs,
                               batch_size=batch_size, learning_rate=learning_rate, max_length=max_length,
                               min_char_count=min_char_count, seed=seed)
        check_device(device)
        if sample_batch < 1:
            raise InvalidParameterError("sample_batch must be at least 1")
        self.device, self.sample_batch = device, sample_batch
        self._generator_seed = seed if seed is not None else secrets.randbits(63)
        self._generator: Any = None
        self._network_cache: tuple[int, Any] | None = None

    def _resources(self) -> dict[str, Any]:
        return {**super()._resources(), "device": self.device, "sample_batch": self.sample_batch}

    @property
    def users(self) -> list[str]:
        """The users the model was trained on (and can write for)."""
        return [str(u) for u in getattr(self, "users_", [])]

    # -- training ------------------------------------------------------------------------

    def _fit(self, texts: list[str], labels: list[str] | None = None) -> None:
        """Train on ``texts`` of ``labels`` (one user for all when None), holding every tenth
        text of each user out for validation (:func:`validation_split`)."""
        users = list(labels) if labels is not None else [ONE_USER] * len(texts)
        held = validation_split(users)
        self.train([t for t, h in zip(texts, held) if not h], [u for u, h in zip(users, held) if not h],
                   [t for t, h in zip(texts, held) if h], [u for u, h in zip(users, held) if h])

    def train(
        self,
        texts: Sequence[str],
        users: Sequence[str],
        validation: Sequence[str] = (),
        validation_users: Sequence[str] = (),
        *,
        folder: str | Path | None = None,
        progress: Callable[[int, int, float], None] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> NeuralSynthesis:
        """Train the model on ``texts`` written by ``users`` (validation loss per epoch on
        ``validation``). With ``folder``, a checkpoint is kept there and an interrupted run
        resumes from it; ``progress(done, total, loss)`` is told after each batch."""
        import torch

        from textveil.models.autoencoder import flatten_parameters
        from textveil.models.char_rnn import CharModelShape, CharTrainingSettings, UserCharRNN, build_characters, \
            encode_text, sequence_loss
        from textveil.models.training_loop import train_in_batches, training_seed

        texts, users = list(texts), [str(u) for u in users]
        validation, validation_users = list(validation), [str(u) for u in validation_users]
        if any(not isinstance(t, str) for t in texts + validation):
            raise InvalidParameterError("train expects sequences of texts (str)")
        if len(users) != len(texts) or len(validation_users) != len(validation):
            raise InvalidParameterError(f"give one user per text: {len(texts)} texts, {len(users)} users")
        if not any(texts):
            raise InputError("the training corpus holds no text: give it some texts")
        checkpoint = Path(folder) / CHECKPOINT if folder is not None else None
        seed = training_seed(self.seed, checkpoint)  # an unseeded run resumes with its own seed
        characters = build_characters(texts, self.min_char_count)
        char_index = {c: i for i, c in enumerate(characters)}
        user_list = sorted(set(users))
        user_index = {u: i for i, u in enumerate(user_list)}
        unseen = sorted(set(validation_users) - set(user_index))
        if unseen:
            raise InputError(f"validation user '{unseen[0]}' has no training text; validate on the training users")

        def encode(items: list[str], owners: list[str]) -> tuple[list[list[int]], list[int]]:
            return [encode_text(t, char_index, self.max_length) for t in items], [user_index[u] for u in owners]

        (training, training_users), (held, held_users) = encode(texts, users), encode(validation, validation_users)
        shape = CharModelShape(self.architecture, len(characters), len(user_list), self.hidden)
        device = torch.device(resolve_device(self.device))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            network = UserCharRNN(shape)
        network.to(device).train()
        settings = CharTrainingSettings(self.epochs, self.batch_size, self.learning_rate, seed)

        def batch_loss(indices: list[int], epoch: int, number: int) -> tuple[Any, int]:
            return sequence_loss(network, [training[i] for i in indices], [training_users[i] for i in indices], device)

        def epoch_end(epoch: int, train_loss: float, seconds: float, tokens: int) -> tuple[dict[str, Any], str]:
            held_loss = _mean_loss(network, held, held_users, device, self.batch_size) if held else None
            record = {"epoch": epoch + 1, "train_loss": train_loss, "validation_loss": held_loss,
                      "seconds": seconds, "characters": tokens}
            line = (f"epoch {epoch + 1}/{self.epochs}: training loss {train_loss:.4f} nats/char"
                    + (f", validation {held_loss:.4f}" if held_loss is not None else "")
                    + f", {tokens / max(seconds, 1e-9):,.0f} characters/s")
            return record, line

        identity = {"shape": shape.to_dict(), "max_length": self.max_length, "characters": _digest(characters),
                    "users": _digest(user_list), "data": texts_hash([f"{u}\x00{t}" for u, t in zip(users, texts)]
                                                                     + ["\x00validation"] + validation)}
        history = train_in_batches(
            network, [len(s) for s in training], batch_loss, settings, epoch_end=epoch_end,
            checkpoint=checkpoint,
            checkpoint_format=CHECKPOINT_FORMAT, identity=identity, progress=progress, log=log)
        network.eval()
        self.characters_ = np.array(characters)
        self.users_ = np.array(user_list)
        self.weights_ = flatten_parameters(network)
        self.history_ = history
        self.training_data_hash_ = identity["data"]
        self._network_cache = (id(self.weights_), network)
        return self

    # -- the network ---------------------------------------------------------------------

    def _build_network(self) -> Any:
        from textveil.models.char_rnn import CharModelShape, UserCharRNN

        return UserCharRNN(CharModelShape(self.architecture, len(self.characters_), len(self.users_), self.hidden))

    # -- releasing -----------------------------------------------------------------------

    def synthesize(self, users: Sequence[str], progress: ProgressCallback | None = None) -> list[str]:
        """One synthetic text for each entry of ``users`` (users the model was trained on), in
        order, from this mechanism's random stream (seeded: the same texts for the same users)."""
        import torch

        from textveil.models.char_rnn import sample_texts

        network = self._network()
        index = {u: i for i, u in enumerate(self.users)}
        missing = sorted({str(u) for u in users} - set(index))
        if missing:
            raise InputError(f"user '{missing[0]}' is not one the model was trained on ({len(index)} users, e.g. "
                             f"'{self.users[0] if self.users else ''}'); synthesise only for users in its training corpus")
        if self._generator is None:
            self._generator = torch.Generator(device=next(network.parameters()).device)
            self._generator.manual_seed(self._generator_seed)
        return sample_texts(network, [index[str(u)] for u in users], [str(c) for c in self.characters_],
                            temperature=self.temperature, max_length=self.max_length, generator=self._generator,
                            batch_size=self.sample_batch, progress=progress)

    def release_corpus(self, texts: Sequence[str], labels: Sequence[str] | None = None,
                       progress: ProgressCallback | None = None) -> CorpusRelease:
        """For each text's user (its label), a synthetic text: the users' counts are kept, the
        texts themselves are never read."""
        users = [str(u) for u in labels] if labels is not None else [ONE_USER] * len(texts)
        if len(users) != len(texts):
            raise InvalidParameterError(f"release_corpus was given {len(users)} users for {len(texts)} texts: one per text")
        synthetic = self.synthesize(users, progress)
        return CorpusRelease(synthetic, users, False, {"texts_synthesised": len(synthetic),
                                                       "characters_synthesised": sum(map(len, synthetic))})

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        """A model of one corpus (fitted without users): one synthetic text per non-empty input
        text (an empty one stays empty). A model of several users needs them: use
        :meth:`release_corpus` or ``textveil synthesize``."""
        texts = list(texts)
        if any(not isinstance(t, str) for t in texts):
            raise InvalidParameterError("sanitize expects texts (str)")
        self._network()
        if self.users != [ONE_USER]:
            raise InvalidParameterError(
                f"synth was trained on {len(self.users)} users: it writes texts per user, not per input text; "
                "use release_corpus(texts, users) or 'textveil synthesize --model DIR'")
        wanted = [i for i, t in enumerate(texts) if t.strip()]
        written = dict(zip(wanted, self.synthesize([ONE_USER] * len(wanted), progress)))
        guarantee = self.guarantee(("which input texts were empty (they are released empty)",))
        return [Release(written.get(i, ""), guarantee, (), words_unchanged=0) for i in range(len(texts))]

    def guarantee(self, also_unprotected: tuple[str, ...] = ()) -> Guarantee:
        """What a release of this mechanism claims: nothing formal (see the statement)."""
        return no_guarantee(
            self.name,
            f"Synthetic text sampled at temperature {self.temperature:g} from a {self.architecture} character model "
            "trained on the users' own texts: the risk is measured by attacks, not bounded.",
            UNPROTECTED + also_unprotected)


def _mean_loss(network: Any, sequences: list[list[int]], users: list[int], device: Any, batch_size: int) -> float:
    """The validation loss: negative log-likelihood per character over ``sequences``."""
    import torch

    from textveil.models.char_rnn import sequence_loss

    network.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(sequences), batch_size):
            loss, tokens = sequence_loss(network, sequences[start:start + batch_size], users[start:start + batch_size],
                                         device)
            total += loss.item() * tokens
            count += tokens
    return total / max(1, count)
