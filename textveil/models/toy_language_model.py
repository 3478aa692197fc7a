"""A toy language model whose next-token logits are set by hand: for the audit's canaries and the
statistical tests of the language-model mechanisms, where the worst case of a guarantee must be
built on purpose (a real model's logits cannot be chosen).

Its tokenizer splits on whitespace over a small word list; its logits at every position are the
sum of the rows of ``table`` of the tokens read so far (a bag of tokens, so a prompt's logits
depend on every word of the input). It speaks the interface the decode loop uses: a forward
with a key-value cache (here the running sum) whose rows can be repeated and selected.

>>> toy = toy_language_model(["red", "blue", "green"], {"red": {"blue": -40.0}})
>>> toy.decode(toy.encode("red blue")), toy.vocabulary_size  # 3 control tokens, 3 role words, 3 words
('red blue', 9)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from textveil.models.language_model import LanguageModel

SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }} {{ message['content'] }}<|im_end|> "
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")


class _RunningSum:
    """The toy's key-value cache: each row's sum of the logit rows read so far."""

    def __init__(self, sums: Any) -> None:
        self.sums = sums

    def batch_repeat_interleave(self, repeats: int) -> None:
        self.sums = self.sums.repeat_interleave(repeats, dim=0)

    def batch_select_indices(self, indices: Any) -> None:
        self.sums = self.sums[indices]

    def batch_join(self, other: _RunningSum) -> None:
        """Rows of another cache added after these (a batch refilled): sums have no columns to pad."""
        import torch

        self.sums = torch.cat([self.sums, other.sums])


class _BagOfTokensNetwork:
    """logits(position t) = sum of table[token] over the unmasked tokens at positions <= t."""

    def __init__(self, table: np.ndarray, end_token: int) -> None:
        import torch

        self.table = torch.from_numpy(np.asarray(table, dtype=np.float32))
        self.config = SimpleNamespace(vocab_size=self.table.shape[1], eos_token_id=end_token,
                                      max_position_embeddings=4096, get_text_config=lambda: self.config)

    def __call__(self, input_ids: Any, attention_mask: Any = None, past_key_values: Any = None, **_: Any) -> Any:
        import torch

        rows = self.table[input_ids]  # (batch, positions, V)
        if attention_mask is not None:
            rows = rows * attention_mask[:, -input_ids.shape[1]:, None].to(rows.dtype)
        sums = torch.cumsum(rows, dim=1)
        if past_key_values is not None:
            sums = sums + past_key_values.sums[:, None, :]
        return SimpleNamespace(logits=sums, past_key_values=_RunningSum(sums[:, -1, :]))


def toy_language_model(words: Sequence[str], logits: Mapping[str, Mapping[str, float]] | None = None,
                       name: str = "toy-bag-of-tokens") -> LanguageModel:
    """A toy :class:`LanguageModel` over ``words`` (plus three control tokens and the template's
    role words). ``logits[a][b]`` is added to token b's logit wherever token a has been read;
    every other logit is 0. Token ``<|im_end|>`` ends a reply."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocabulary = list(SPECIALS) + [w for w in ("system", "user", "assistant") if w not in words] + list(words)
    index = {word: i for i, word in enumerate(vocabulary)}
    backend = Tokenizer(models.WordLevel(index, unk_token="<|endoftext|>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", unk_token="<|endoftext|>",
                                        bos_token="<|im_start|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = TEMPLATE
    from tokenizers import decoders

    backend.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with single spaces
    table = np.zeros((len(vocabulary), len(vocabulary)), dtype=np.float32)
    for source, targets in (logits or {}).items():
        for target, value in targets.items():
            table[index[source], index[target]] += value
    digest = str(abs(hash((tuple(vocabulary), table.tobytes()))))[:16]
    from textveil.models.engines.transformers_engine import TransformersEngine

    engine = TransformersEngine(_BagOfTokensNetwork(table, index["<|im_end|>"]), "cpu")
    return LanguageModel(engine, tokenizer, name, digest, end_token_ids=(index["<|im_end|>"],),
                         special_token_ids=tuple(index[s] for s in SPECIALS))
