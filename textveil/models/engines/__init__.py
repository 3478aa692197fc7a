"""The engines that run a language model, behind one small face: prompt batches in, logits rows
out, continuous batching inside. ``paraphrase``, ``restyle`` and the fluency measure never know
which engine runs; the mechanism's code (prompt, score, exponential mechanism, Guarantee) only
receives logits rows and draws the tokens itself.

Every engine has the face :class:`~textveil.models.engines.batching.Engine` declares:

- ``name`` (``llama-cpp`` or ``transformers``), ``description`` (what a Guarantee names) and
  ``identity`` (what a release's fingerprint holds);
- ``device``, ``vocabulary_size``, ``context_length``, ``default_batch_rows``;
- ``run(queue)``: decode the rows of every job in a
  :class:`~textveil.models.engines.batching.DecodeQueue` (one per engine, shared by every thread
  of the process: concurrent callers share batches), each step's logits handed to the job that
  owns the row, each drawn token to the job's one stop rule
  (:meth:`~textveil.models.engines.batching.DecodeJob.add_token`);
- ``token_log_likelihoods(sequences)``: log p(token | the tokens before it), for fluency;
- ``reset()`` after a failed run, ``close()`` at the interpreter's exit.

Modules: :mod:`~textveil.models.engines.batching` (jobs, the queue and its worker),
:mod:`~textveil.models.engines.llama_cpp_engine` (llama.cpp, continuous batching, a text's logits
independent of its neighbours), :mod:`~textveil.models.engines.transformers_engine` (PyTorch),
:mod:`~textveil.models.engines.native` (building, checking and calibrating llama.cpp on this
machine), :mod:`~textveil.models.engines.choice` (``auto``).
"""

from textveil.models.engines.choice import ENGINES, check_engine, resolve_engine

__all__ = ["ENGINES", "check_engine", "resolve_engine"]
