"""The default embeddings' build runs torch on the cores other processes leave free (the CPU
engine's policy): with a core busy elsewhere, two threads waiting on each other at every layer
took several times as long as one. Checked on the tiny language model, whose forward passes are
what the build's distillation runs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the build's thread policy acts on torch")
transformers = pytest.importorskip("transformers", reason="the build distils a transformers model")

from textveil.embeddings.default_model import _torch_on_free_cores  # noqa: E402


class OneFreeCore:
    """What FreeCores says while another process keeps all but one core busy."""

    def threads(self, configured: int) -> int:
        return 1


def threads_during_a_forward_pass(folder) -> int:
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    seen = []
    model.register_forward_pre_hook(lambda module, args: seen.append(torch.get_num_threads()))
    with torch.no_grad():
        model(input_ids=torch.tensor([[1, 2, 3]]))
    return seen[0]


def test_a_forward_pass_runs_on_the_free_cores_and_the_threads_come_back(tiny_lm_folder, monkeypatch):
    monkeypatch.delenv("TEXTVEIL_THREAD_POLICY", raising=False)
    before = torch.get_num_threads()
    with _torch_on_free_cores(OneFreeCore()):
        assert threads_during_a_forward_pass(tiny_lm_folder) == 1
    assert torch.get_num_threads() == before


def test_the_fixed_policy_leaves_torchs_threads_alone(tiny_lm_folder, monkeypatch):
    monkeypatch.setenv("TEXTVEIL_THREAD_POLICY", "fixed")
    before = torch.get_num_threads()
    with _torch_on_free_cores(OneFreeCore()):
        assert threads_during_a_forward_pass(tiny_lm_folder) == before
