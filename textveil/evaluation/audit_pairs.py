"""Neighbouring inputs that stress a mechanism's Guarantee.

Each :class:`AuditCase` is a pair of texts and the mechanism that releases them. Most run the
mechanism as configured; a *canary* case runs the same class, with the same parameters, over a
small one-dimensional vocabulary built so that the Guarantee is nearly tight there, so that a
sampler that gives less privacy than it claims (noise at half scale, an exponential mechanism
without its factor 2, an unbounded rating) shows up in a few thousand releases. In the many
dimensions of real word vectors the loss that any output event reaches stays far below the
claim (the noise's direction is nearly orthogonal to the difference of two words), so only
the canary gives the audit power against a weak sampler; the real vocabulary's pairs check the
pipeline around it: casing, spacing, punctuation, decoding, word order.

Pair kinds:

* ``canary``: texts over a canary vocabulary: for metric privacy two words 1/epsilon apart; for
  the exponential mechanism (at epsilon at most 2) "alpha alpha" against "bravo charlie" over
  three words, and two opposite words with eight more beside one; for ER-AE and AE-DP "alpha"
  against "bravo" from a generator set by hand (:func:`generator_canary`); for ``paraphrase`` (at epsilon
  at most 4, one output token) "alpha" against "beta" over a toy language model whose logits are
  set by hand (:func:`paraphrase_canary`), and the same over documents of two units
  (:func:`paraphrase_units_canary`);
* ``token-near`` / ``token-far``: one-token texts, the closest and the farthest two words of the
  vocabulary's commonest (by the metric's vectors; for a trained model, by frequency rank);
* ``token-in-sentence``: the far pair inside a sentence of common words;
* ``casing``, ``spacing``, ``punctuation``: a sentence against itself with other casing, other
  spacing and line breaks, or one punctuation mark changed;
* ``emd-reordered``, ``emd-one-word``: four-word documents at Earth Mover's distance 0 (the same
  words in another order) and at a known distance (one word replaced);
* ``name``, ``sentence``: for a language-model rewriter (``paraphrase``), two short real texts
  differing in a person's name, and in one sentence, released by the configured mechanism on its
  own model at its own L, with at most :data:`LANGUAGE_MODEL_TRIALS` releases per input and stage
  (a real model writes about a text a second on a CPU). Their claim, epsilon * L, is far above
  any loss so few releases can show: they check the pipeline, the canary checks the sampler;
* ``user``: pairs from a JSONL file (``{"first": ..., "second": ..., "kind": ...}``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textveil.errors import InputError

CANARY_EXPONENTIAL_EPSILON = 2.0
"""The epsilon the exponential-mechanism canary runs at (at most the configured one): at a large
epsilon the events that would show a violation have probabilities of 1e-9 and less."""

LAPLACE_CANARY = ("alpha", "bravo", "charlie", "delta")
RATING_CANARY = ("alpha", "bravo", "charlie")
CLUSTER_CANARY = ("alpha", "bravo", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima")
CANARY_PARAPHRASE_EPSILON = 4.0
"""The epsilon the ``paraphrase`` canary runs at (at most the configured one): its sampler is the
same at every epsilon, and at the epsilons paraphrase is used at (15 to 40) the event that shows
the loss would have probability about e^-epsilon / 7 under the second input (4e-8 at 15)."""
CANARY_PARAPHRASE_CROWD = 7.0
"""r in the paraphrase canary: the tokens at the floor weigh r times the one on top under the first
input, so that the lone top token is likely (1 / (1 + r)) and the loss it shows is within
ln(1 + 1/r) = 0.13 of the claim."""
LANGUAGE_MODEL_TRIALS = 50
"""The most releases of each input per stage of a real language model's pairs (``name``,
``sentence``): 300 releases a pair, minutes on a CPU."""
NAME_PAIR = ("Maria Lopez called the bank on Monday about her loan.",
             "Ahmed Khan called the bank on Monday about her loan.")
SENTENCE_PAIR = ("The meeting moved to Thursday. I will bring the slides and the budget.",
                 "The meeting moved to Thursday. My doctor says the tumour has grown again.")
COMMON_WORDS = 2000
"""How many of the vocabulary's first (commonest) words the near and far pairs are chosen among."""


@dataclass(frozen=True)
class AuditPair:
    """Two neighbouring inputs and why they were chosen."""

    kind: str
    first: str
    second: str
    note: str = ""


@dataclass
class AuditCase:
    """A pair and the mechanism that releases it (the configured one, or its canary)."""

    pair: AuditPair
    mechanism: Any
    setting: str = "configured"
    trials: int | None = None
    """At most this many releases of each input per stage (a slow model's pairs); ``None``: the
    audit's number."""

    def trials_of(self, trials: int) -> int:
        """The releases of each input per stage this case runs in an audit of ``trials``."""
        return trials if self.trials is None else min(trials, self.trials)


def audit_cases(mechanism: Any, user_pairs: list[AuditPair] | None = None) -> list[AuditCase]:
    """The cases an audit of ``mechanism`` runs: the canary (for substitution mechanisms and
    ``paraphrase``), the token, layout and Earth Mover's pairs over its vocabulary (for a
    language-model rewriter: two pairs of real texts), and the user's own pairs."""
    if _rewrites_with_a_language_model(mechanism):
        cases = canary_cases(mechanism) + language_model_cases(mechanism)
        cap = LANGUAGE_MODEL_TRIALS
    else:
        cases = canary_cases(mechanism) + [AuditCase(pair, mechanism) for pair in vocabulary_pairs(mechanism)]
        cap = None
    cases += [AuditCase(pair, mechanism, "your pair", cap) for pair in user_pairs or ()]
    return cases


def _rewrites_with_a_language_model(mechanism: Any) -> bool:
    from textveil.mechanisms.paraphrase import LanguageModelRewriter

    return isinstance(mechanism, LanguageModelRewriter)


def language_model_cases(mechanism: Any) -> list[AuditCase]:
    """A language-model rewriter's real pairs (``name``, ``sentence``), released by the configured
    mechanism itself (its model, its L), at most :data:`LANGUAGE_MODEL_TRIALS` releases per input
    and stage."""
    return [
        AuditCase(AuditPair("name", *NAME_PAIR, "a person's name changed"), mechanism, "configured (its model)",
                  LANGUAGE_MODEL_TRIALS),
        AuditCase(AuditPair("sentence", *SENTENCE_PAIR, "one sentence of two replaced by a sensitive one"), mechanism,
                  "configured (its model)", LANGUAGE_MODEL_TRIALS),
    ]


# -- the real vocabulary's pairs --------------------------------------------------------


def common_words(mechanism: Any, count: int = COMMON_WORDS) -> list[str]:
    """The first ``count`` alphabetic content words (no stop words) of what the mechanism may
    release: its vocabulary, commonest first; for a trained model, the model's own vocabulary."""
    if hasattr(mechanism, "vocabulary_"):  # a trained generator releases its own vocabulary
        from textveil.models.autoencoder import SPECIALS

        entries = [str(word) for word in mechanism.vocabulary_[len(SPECIALS):]]
    else:
        entries = list(mechanism.vocabulary.words)
    from textveil.text.stopwords import is_stop_word

    # Content words: what every mode privatises (a bag of words drops stop words).
    words = [word for word in entries if word.isalpha() and not is_stop_word(word)][:count]
    if len(words) < 6:
        raise InputError(f"the vocabulary of {mechanism.name} holds {len(words)} alphabetic word(s); an audit needs at "
                         "least 6 to build its pairs")
    return words


def token_extremes(mechanism: Any, words: list[str]) -> tuple[tuple[str, str], tuple[str, str]]:
    """The closest and the farthest two of ``words`` under the mechanism's metric (its units'
    vectors); for a mechanism without one, the two commonest and the commonest against the rarest."""
    if not hasattr(mechanism, "unit_vectors"):
        return (words[0], words[1]), (words[0], words[-1])
    from scipy.spatial.distance import cdist

    vectors = np.asarray(mechanism.unit_vectors(words), dtype=np.float64)
    distances = cdist(vectors, vectors)
    np.fill_diagonal(distances, np.inf)
    distances[distances == 0] = np.inf  # two spellings of one vector are not neighbours
    near = np.unravel_index(np.argmin(distances), distances.shape)
    distances[np.isinf(distances)] = -np.inf
    far = np.unravel_index(np.argmax(distances), distances.shape)
    return (words[near[0]], words[near[1]]), (words[far[0]], words[far[1]])


def vocabulary_pairs(mechanism: Any) -> list[AuditPair]:
    """The token, layout and Earth Mover's pairs over the mechanism's own vocabulary."""
    words = common_words(mechanism)
    (near_a, near_b), (far_a, far_b) = token_extremes(mechanism, words)
    base = words[:5]
    sentence = " ".join(base) + "."
    shouted = " ".join(word.upper() if i % 2 else word.capitalize() for i, word in enumerate(base)) + "."
    spaced = "  ".join(base[:3]) + "\n\n" + "\t".join(base[3:]) + " ."
    other_mark = " ".join(base) + "!"
    document = base[:4]
    reordered = document[::-1]
    replaced = document[:3] + [far_b if far_b not in document else far_a]
    return [
        AuditPair("token-near", near_a, near_b, "the closest two common words"),
        AuditPair("token-far", far_a, far_b, "the farthest two common words"),
        AuditPair("token-in-sentence", " ".join([*base[:3], far_a]) + ".", " ".join([*base[:3], far_b]) + ".",
                  "the far pair at the end of a sentence"),
        AuditPair("casing", sentence, shouted, "casing only"),
        AuditPair("spacing", sentence, spaced, "spacing and line breaks only"),
        AuditPair("punctuation", sentence, other_mark, "one punctuation mark"),
        AuditPair("emd-reordered", " ".join(document), " ".join(reordered), "the same words reversed: Earth Mover's "
                  "distance 0"),
        AuditPair("emd-one-word", " ".join(document), " ".join(replaced), "one word of four replaced"),
    ]


# -- canaries -----------------------------------------------------------------------------


def canary_cases(mechanism: Any) -> list[AuditCase]:
    """The mechanism's class, with its parameters, over canary vocabularies; none for mechanisms
    that do not decode to a vocabulary of embeddings they are given (a trained model, PIVOT)."""
    from textveil.mechanisms.autoencoder import AutoEncoderMechanism
    from textveil.mechanisms.paraphrase import Paraphrase
    from textveil.mechanisms.substitution import TokenSubstitution

    from textveil.mechanisms.select_write import SelectWrite

    if isinstance(mechanism, Paraphrase):
        canary = public_base_canary(mechanism) if mechanism.public_base else paraphrase_canary(mechanism)
        return [canary, paraphrase_units_canary(canary)]
    if isinstance(mechanism, SelectWrite):
        return [select_write_canary(mechanism)]
    if isinstance(mechanism, AutoEncoderMechanism):
        return [generator_canary(mechanism)]
    if not isinstance(mechanism, TokenSubstitution):
        return []
    params = {**mechanism.get_params(), "seed": None}
    if mechanism.spec().guarantee == "metric":
        step = 1.0 / float(params["epsilon"])  # a claim of exactly 1 nat, whatever epsilon
        # The third and fourth words sit just beyond the pair, so the events "beyond" are likely
        # (about 0.3 each) and their likelihood ratio is still exactly exp(1).
        table = _canary_table(LAPLACE_CANARY, [0.0, step, 1.2 * step, -0.2 * step])
        return [AuditCase(AuditPair("canary", "alpha", "bravo", "two words 1/epsilon apart on a line, a third just "
                                    "beyond each: the events 'beyond' reach the claim exactly"),
                          type(mechanism)(**params, embeddings=table), "canary (1-d)")]
    setting = "canary (1-d)"
    if "epsilon" in params:
        params["epsilon"] = min(float(params["epsilon"]), CANARY_EXPONENTIAL_EPSILON)
        setting += f", epsilon {params['epsilon']:g}"
    rating = type(mechanism)(**params, embeddings=_canary_table(RATING_CANARY, [1.0, -1.0, -1.25]))
    if rating.learns:  # equal document frequencies: the second input rates both its words 1
        rating.fit([" ".join(RATING_CANARY)])
    cluster = type(mechanism)(**params, embeddings=_canary_table(
        CLUSTER_CANARY, [1.0, -1.0, *np.linspace(1.05, 1.4, len(CLUSTER_CANARY) - 2)]))
    return [
        AuditCase(AuditPair("canary", "alpha alpha", "bravo charlie", "one rates a word of three, the other the two "
                            "others: the normaliser moves as far as a rating in [0, 1] lets it"), rating, setting),
        AuditCase(AuditPair("canary", "alpha", "bravo", "opposite words, eight more beside the first: a similarity "
                            "rating moves the normaliser with one token"), cluster, setting),
    ]


def generator_canary(mechanism: Any) -> AuditCase:
    """ER-AE's and AE-DP's canary: the mechanism's class, parameters and sampler, at epsilon at
    most :data:`CANARY_EXPONENTIAL_EPSILON`, over a generator set by hand
    (:meth:`~textveil.mechanisms.autoencoder.AutoEncoderMechanism.rated_by`) that is sure of
    "alpha" under "alpha" and of "bravo" under "bravo", among N = 10 words.

    These are the ratings that come nearest each sampler's claim. The two-set sampler's event
    "the release is alpha" has loss epsilon/2 + ln(N - 1), within ln(1 + e^(-epsilon/2)) +
    ln(N / (N - 1)) + token_epsilon/2 (0.47 at epsilon 2) of what its Guarantee states, and far
    above the paper's epsilon. Algorithm 1 rates with probabilities that sum to 1, so no rating
    moves its normaliser far: its loss here is epsilon/2, and no softmax generator can show it
    much above that (a sampler that dropped the factor 2 would reach the claim, not exceed it;
    raw logits instead of probabilities would exceed it)."""
    from textveil.models.autoencoder import SPECIALS

    params = {**mechanism.get_params(), "seed": None}
    params["epsilon"] = min(float(params["epsilon"]), CANARY_EXPONENTIAL_EPSILON)
    table = _canary_table(CLUSTER_CANARY, np.linspace(-1.0, 1.0, len(CLUSTER_CANARY)))
    entries = len(SPECIALS) + len(CLUSTER_CANARY)

    def sure_of_the_first_token(segments: Sequence[Sequence[int]]) -> np.ndarray:
        rows = []
        for segment in segments:
            row = np.zeros(entries)
            row[segment[0] if len(SPECIALS) <= segment[0] < entries else len(SPECIALS)] = 1.0
            rows += [row] * len(segment)
        return np.array(rows).reshape(-1, entries)

    canary = type(mechanism)(**params, embeddings=table, device="cpu").rated_by(sure_of_the_first_token,
                                                                                  CLUSTER_CANARY)
    sampler = params.get("sampler", "algorithm-1")
    return AuditCase(AuditPair("canary", "alpha", "bravo", "a generator set by hand, sure of the input's word among "
                               f"{len(CLUSTER_CANARY)}: the ratings nearest the claim"), canary,
                     f"canary (hand-set generator, {sampler}), epsilon {params['epsilon']:g}")


def paraphrase_canary(mechanism: Any) -> AuditCase:
    """``paraphrase``'s canary: the mechanism's class, with its score, width and clip, at epsilon
    at most :data:`CANARY_PARAPHRASE_EPSILON` and L = 1, over a toy language model whose logits
    are set by hand (:func:`~textveil.models.toy_language_model.toy_language_model`).

    Under "alpha" one token (w0) sits on top and every other token of the output vocabulary at
    least 3 w below; under "beta" the reverse. Each score then puts w0 at the top of its range
    under one input and at its floor under the other, and every other token the other way round,
    so the normaliser moves as far as a score of width w lets it: the event "the release is w0"
    has likelihood ratio e^epsilon / (1 + e^(epsilon / 2) / N), N the tokens at the floor, chosen
    so that N e^(-epsilon / 2) = :data:`CANARY_PARAPHRASE_CROWD` (the loss is within 0.13 of the
    claim and w0 has probability 1/8 under "alpha"). At epsilon 4 (claim 4) a draw without the
    factor 2 has loss 7.3 on this event, and raw logits used as scores (no clip) 9.8."""
    import math

    from textveil.models.toy_language_model import toy_language_model

    # The toy's words are the canary's whole output vocabulary: a public vocabulary of English
    # (``vocabulary=N``) is a fixed choice independent of the input and would hold none of them.
    params = {**mechanism.get_params(), "seed": None, "max_new_tokens": 1, "vocabulary": "all"}
    epsilon = min(float(params["epsilon"]), CANARY_PARAPHRASE_EPSILON)
    params["epsilon"] = epsilon
    top = float(params["clip_high"])  # the top of the clipped score's range (any value does for the relative one)
    floor = top - 3 * float(params["width"])
    # N: the end token, the template's three role words, "alpha", "beta" and the fillers.
    crowd = math.ceil(CANARY_PARAPHRASE_CROWD * math.exp(epsilon / 2))
    words = ["w0", *(f"w{i}" for i in range(1, max(2, crowd - 5))), "alpha", "beta"]
    every = ["<|im_end|>", "system", "user", "assistant", *words]
    logits = {"alpha": {token: (top if token == "w0" else floor) for token in every},
              "beta": {token: (floor if token == "w0" else top) for token in every}}
    language_model = _remembering(toy_language_model(words, logits, name="toy-canary"))
    params["model"] = language_model.name
    canary = type(mechanism)(**params, language_model=language_model, batch_size=4096, device="cpu")
    return AuditCase(AuditPair("canary", "alpha", "beta", f"a toy language model: under the first, w0 alone on top "
                               f"and the other {len(every) - 1} tokens 3 w below; under the second, the reverse"),
                     canary, f"canary (toy LM, L = 1), epsilon {epsilon:g}")


CANARY_PUBLIC_SHARE = 0.03
"""p_pub(w0) in the public-base canary: the public model gives w0 this share of its mass."""


def public_base_canary(mechanism: Any) -> AuditCase:
    """``paraphrase``'s canary on a public base (``score="public-base"``): the mechanism's class,
    with its C, top k and public prompt, at epsilon at most :data:`CANARY_PARAPHRASE_EPSILON` and
    L = 1, over a toy language model whose logits are set by hand.

    The public prompt gives w0 the share q = :data:`CANARY_PUBLIC_SHARE` and spreads the rest over
    the other tokens; "alpha" lifts w0 to nearly all the mass (its clipped difference at +C, every
    other token's at -C) and "beta" sinks it (w0 at -C). No pair of inputs can put every token at
    the opposite end of its range here (a token's share cannot rise by e^C under both inputs), so
    the claim epsilon is not reached: at epsilon 4 and C = 1 the event "the release is w0" has a
    loss of 2.84 (the most any q gives is about 3), with probability 0.19 under "alpha"; a draw
    without the factor 2 (sensitivity C) has loss 5.08 on it, a difference left unclipped more."""
    import math

    from textveil.models.toy_language_model import toy_language_model

    params = {**mechanism.get_params(), "seed": None, "max_new_tokens": 1, "vocabulary": "all"}
    epsilon = min(float(params["epsilon"]), CANARY_PARAPHRASE_EPSILON)
    params["epsilon"] = epsilon
    words = ["w0", *(f"w{i}" for i in range(1, 30)), "alpha", "beta"]
    every = ["<|im_end|>", "user", "assistant", *words]  # the candidates but "system" (read in every prompt)
    lift = 40.0
    # the system role word is read in both prompts: it sets the public distribution
    share = math.log(CANARY_PUBLIC_SHARE * len(every) / (1.0 - CANARY_PUBLIC_SHARE))
    logits = {"system": {"w0": share}, "alpha": {"w0": lift}, "beta": {"w0": -lift}}
    language_model = _remembering(toy_language_model(words, logits, name="toy-canary-public-base"))
    params["model"] = language_model.name
    canary = type(mechanism)(**params, language_model=language_model, batch_size=4096, device="cpu")
    return AuditCase(AuditPair("canary", "alpha", "beta", "a toy language model: the public prompt gives w0 a share "
                               f"of {CANARY_PUBLIC_SHARE:g}; the first input lifts it to nearly all the mass, the "
                               "second sinks it"),
                     canary, f"canary (toy LM, public base, L = 1), epsilon {epsilon:g}")


CANARY_SELECTION_EPSILON = 4.0
"""The most epsilon the selection canary is audited at: its events stay likely enough to count."""
CANARY_SELECTION_RIVALS = 6
"""The selection canary's other clusters, and w0's cluster mates."""


class _PlanEcho:
    """The selection canary's writer: each plan released as it is (the real writer is
    post-processing of the plan, so it can only hide what the plan shows)."""

    model = "none (the audit's canary releases each plan as it is)"
    greedy = True
    language_model = None

    def sanitize_records(self, texts: Any, seeds: Any, progress: Any = None) -> list[Any]:
        from textveil.mechanisms.base import Release

        return [Release(text, None) for text in texts]  # type: ignore[arg-type]

    def fingerprint(self) -> dict[str, str]:
        return {"engine": "echo", "output_vocabulary": "plan"}


def select_write_canary(mechanism: Any) -> AuditCase:
    """``select-write``'s canary: the mechanism's class with its cluster share, k = 1 and epsilon
    at most :data:`CANARY_SELECTION_EPSILON`, over a toy bank read by a toy embedder, each plan
    released as it is.

    "alpha" scores one sentence, w0, 1 and every other 0; "beta" scores w0 and its
    :data:`CANARY_SELECTION_RIVALS` cluster mates 0 and the sentences of as many other clusters 1.
    Both stages then move the event "the plan is w0" the same way: the cluster stage by nearly its
    whole epsilon, the item stage by about half of its own. At epsilon 4 (2 and 2) the loss is 2.46,
    below the claim; a draw that forgot the factor 2 reaches 4.57, past it."""
    from textveil.mechanisms.plan_selection import SelectionBank

    rivals = CANARY_SELECTION_RIVALS
    items = ["w0", *(f"w{i}" for i in range(1, 2 * rivals + 1))]
    # w0 reads as "alpha", its cluster mates as neither input, the other clusters' sentences as "beta"
    vectors = np.array([[1.0, 0.0, 0.0], *([[0.0, 0.0, 1.0]] * rivals), *([[0.0, 1.0, 0.0]] * rivals)])
    clusters = np.array([0] * (rivals + 1) + list(range(1, rivals + 1)))
    bank = SelectionBank.from_vectors(items, vectors, clusters, lo=0.0, hi=1.0)

    def embed(texts: Any) -> np.ndarray:
        return np.array([[1.0, 0.0, 0.0] if "alpha" in text else [0.0, 1.0, 0.0] for text in texts])

    params = {**mechanism.get_params(), "seed": None, "items": 1}
    params["epsilon"] = min(float(params["epsilon"]), CANARY_SELECTION_EPSILON)
    canary = type(mechanism)(**params, bank=bank, embed=embed, writer=_PlanEcho())
    return AuditCase(AuditPair("canary", "alpha", "beta", "a toy bank: the first input scores one sentence 1 and "
                               "the rest 0; the second scores it and its cluster mates 0 and the other clusters 1"),
                     canary, f"canary (toy bank, k = 1), epsilon {params['epsilon']:g}")


def paraphrase_units_canary(canary: AuditCase) -> AuditCase:
    """The paraphrase canary over documents of two units: "alpha" twice against "beta" twice,
    one paragraph each, released by the same canary mechanism (its unit and context rule as
    configured). The second unit's prompt holds the first unit and its reply (the toy reads every
    token of it, so its logits are as extreme as the first's), so the event "w0 for both units"
    has a loss of twice the one-unit canary's, within 0.26 of the claim epsilon * L * n = 2
    epsilon: a claim per document that forgot the number of units, or a context that leaked
    more than a unit's draws, shows here."""
    return AuditCase(AuditPair("canary", "alpha\n\nalpha", "beta\n\nbeta", "the toy canary's inputs as documents "
                               "of two units (paragraphs): the claim composes over units"),
                     canary.mechanism, canary.setting.replace("L = 1", "L = 1, two units"))


def _remembering(language_model: Any) -> Any:
    """The toy model, its tokenizer's answers kept: the canary releases its two texts thousands of
    times, and the tokenizer (not the model) was two thirds of the time. The same answers, from
    the same model."""
    from dataclasses import fields

    from textveil.models.language_model import LanguageModel

    class RememberingLanguageModel(LanguageModel):
        def chat_prompt(self, system: str, user: str) -> list[int]:
            return list(_kept(self, "prompts", (system, user), lambda: LanguageModel.chat_prompt(self, system, user)))

        def encode(self, text: str) -> list[int]:
            return list(_kept(self, "encoded", text, lambda: LanguageModel.encode(self, text)))

        def decode(self, ids: list[int]) -> str:
            return str(_kept(self, "decoded", tuple(ids), lambda: LanguageModel.decode(self, ids)))

    given = {f.name: getattr(language_model, f.name) for f in fields(language_model) if f.init}
    return RememberingLanguageModel(**given)


def _kept(owner: Any, table: str, key: Any, compute: Any) -> Any:
    kept = owner.__dict__.setdefault("_kept_" + table, {})
    if key not in kept:
        kept[key] = tuple(compute()) if table != "decoded" else compute()
    return kept[key]


def _canary_table(words: Sequence[str], positions: Sequence[float]) -> Any:
    from textveil.embeddings.word_embeddings import WordEmbeddings

    return WordEmbeddings(list(words), [[float(p)] for p in positions], name="canary-1d")


# -- the user's pairs ---------------------------------------------------------------------


def read_pairs(path: str | Path) -> list[AuditPair]:
    """Pairs from a JSONL file, one object per line with ``first`` and ``second`` (texts) and an
    optional ``kind``; a malformed line is one error naming the file and the line."""
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the pairs file '{source}': {error}; give a UTF-8 JSONL file") from None
    pairs = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ("first", "second")):
            raise InputError(f"'{source}' line {number}: each line must be a JSON object with the texts \"first\" and "
                             "\"second\", e.g. {\"first\": \"the cat\", \"second\": \"the dog\"}")
        pairs.append(AuditPair(str(record.get("kind", "user")), record["first"], record["second"], "from " + source.name))
    if not pairs:
        raise InputError(f"'{source}' holds no pair; write one JSON object per line with \"first\" and \"second\"")
    return pairs
