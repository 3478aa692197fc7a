"""A Hugging Face Llama causal LM (network and byte-level BPE tokenizer) written as a GGUF file,
in-process, with the ``gguf`` package: the file both engines read (:mod:`textveil.models.engines`).

What it is for: the tests run one tiny random Llama through llama.cpp and transformers and compare
their logits, and the native engine's first-use check (:mod:`textveil.models.engines.native_check`)
decodes a few tokens of such a model in a subprocess before llama.cpp is trusted on a CPU.

The layout is llama.cpp's ``llama`` architecture, as its own converter writes it: tensors named
``token_embd``, ``blk.N.attn_q`` ..., float32, the query and key projections permuted to the
interleaved rotary layout llama.cpp expects (transformers' GGUF reader permutes them back), and
the tokenizer as ``tokenizer.ggml.*`` (vocabulary, merges, token types, special ids, chat template).

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> path = write_tiny_gguf(folder / "tiny.gguf")
>>> path.name, path.stat().st_size > 10_000
('tiny.gguf', True)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

TINY_TEXT = (
    "The market rallied on Friday and stocks rose. Oil prices fell in London; the bank said so. "
    "I went to the zoo with my sister and we saw an elephant. The report is due next week, sorry for the delay. "
    "Growth, growth and more growth: the economy is good. We knit a scarf with soft wool on bamboo needles."
)
"""What the tiny model's tokenizer is trained on (its merges), public and fixed."""
TINY_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
TINY_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
_CONTROL, _NORMAL = 3, 1  # GGUF token types


def tiny_llama(seed: int = 0, vocab_size: int = 400) -> tuple[Any, Any]:
    """A tiny Llama (2 layers of 32 units, random weights, ``seed``) and a byte-level BPE tokenizer
    trained here, with a chat template: a causal LM in about a second, for tests and checks.

    Its logits spread over several nats (the output layer is scaled up), as a trained model's do;
    the output layer is its own (tied to the input embeddings and scaled, it would favour the
    token just read, and the model would repeat the template's last token for ever)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(TINY_SPECIALS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator([TINY_TEXT] * 3, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                        unk_token="<|endoftext|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = TINY_TEMPLATE
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False)
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
    network = LlamaForCausalLM(config)
    with torch.no_grad():
        network.lm_head.weight.mul_(40.0)
    return network.eval(), tokenizer


def _rotary_permuted(weight: np.ndarray, heads: int) -> np.ndarray:
    """A query or key projection in llama.cpp's rotary layout: each head's two halves interleaved
    (what llama.cpp's converter does; transformers' GGUF reader undoes it)."""
    rows = weight.shape[0]
    return weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def _tokenizer_fields(tokenizer: Any) -> tuple[list[str], list[int], list[str]]:
    """The tokens (in id order), their GGUF types and the BPE merges of a fast byte-level tokenizer."""
    state = json.loads(tokenizer.backend_tokenizer.to_str())
    model = state["model"]
    if model.get("type") != "BPE":
        raise ValueError("only byte-level BPE tokenizers can be written as GGUF here")
    vocabulary = dict(model["vocab"])
    for added in state.get("added_tokens", []):
        vocabulary[added["content"]] = added["id"]
    tokens = [""] * (max(vocabulary.values()) + 1)
    for token, index in vocabulary.items():
        tokens[index] = token
    special = set(tokenizer.all_special_tokens)
    types = [_CONTROL if token in special else _NORMAL for token in tokens]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return tokens, types, merges


def write_llama_gguf(network: Any, tokenizer: Any, path: str | Path, name: str = "llama") -> Path:
    """Write a Hugging Face ``LlamaForCausalLM`` and its byte-level BPE tokenizer to ``path`` as a
    float32 GGUF file (llama.cpp's ``llama`` architecture); returns the path."""
    from gguf import GGUFWriter

    config = network.config
    heads, kv_heads = int(config.num_attention_heads), int(config.num_key_value_heads)
    head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    path = Path(path)
    writer = GGUFWriter(str(path), arch="llama")
    writer.add_name(name)
    writer.add_context_length(int(config.max_position_embeddings))
    writer.add_embedding_length(int(config.hidden_size))
    writer.add_block_count(int(config.num_hidden_layers))
    writer.add_feed_forward_length(int(config.intermediate_size))
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(float(config.rms_norm_eps))
    theta = getattr(config, "rope_theta", None) or (getattr(config, "rope_parameters", None) or {}).get("rope_theta")
    writer.add_rope_freq_base(float(theta or 10000.0))
    writer.add_vocab_size(int(config.vocab_size))
    writer.add_file_type(0)  # all float32
    tokens, types, merges = _tokenizer_fields(tokenizer)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    for setter, token in ((writer.add_bos_token_id, tokenizer.bos_token_id), (writer.add_eos_token_id,
                          tokenizer.eos_token_id), (writer.add_pad_token_id, tokenizer.pad_token_id),
                          (writer.add_unk_token_id, tokenizer.unk_token_id)):
        if token is not None:
            setter(int(token))
    if getattr(tokenizer, "chat_template", None):
        writer.add_chat_template(tokenizer.chat_template)
    state = {key: value.detach().float().numpy() for key, value in network.state_dict().items()}
    writer.add_tensor("token_embd.weight", state["model.embed_tokens.weight"])
    for layer in range(int(config.num_hidden_layers)):
        prefix = f"model.layers.{layer}."
        blk = f"blk.{layer}."
        writer.add_tensor(blk + "attn_norm.weight", state[prefix + "input_layernorm.weight"])
        writer.add_tensor(blk + "attn_q.weight", _rotary_permuted(state[prefix + "self_attn.q_proj.weight"], heads))
        writer.add_tensor(blk + "attn_k.weight", _rotary_permuted(state[prefix + "self_attn.k_proj.weight"], kv_heads))
        writer.add_tensor(blk + "attn_v.weight", state[prefix + "self_attn.v_proj.weight"])
        writer.add_tensor(blk + "attn_output.weight", state[prefix + "self_attn.o_proj.weight"])
        writer.add_tensor(blk + "ffn_norm.weight", state[prefix + "post_attention_layernorm.weight"])
        writer.add_tensor(blk + "ffn_gate.weight", state[prefix + "mlp.gate_proj.weight"])
        writer.add_tensor(blk + "ffn_up.weight", state[prefix + "mlp.up_proj.weight"])
        writer.add_tensor(blk + "ffn_down.weight", state[prefix + "mlp.down_proj.weight"])
    writer.add_tensor("output_norm.weight", state["model.norm.weight"])
    writer.add_tensor("output.weight", state.get("lm_head.weight", state["model.embed_tokens.weight"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_tiny_gguf(path: str | Path, seed: int = 0) -> Path:
    """The tiny random Llama of :func:`tiny_llama` written as a GGUF file at ``path``."""
    network, tokenizer = tiny_llama(seed)
    return write_llama_gguf(network, tokenizer, path, name="tiny-llama")
