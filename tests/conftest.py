"""Shared fixtures: where the real data lives, and small toy embeddings.

The real corpora live read-only in ``../shared/data`` beside the checkout. A user's machine
has no such folder, so every test that needs it goes through :func:`require_shared_data`,
which skips with a clear reason instead of failing.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest

from textveil.corpus.labelled import LabelledCorpus
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.evaluation.experiment_plan import EvaluationCorpora

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT / ".." / "shared" / "data"
MISSING_DATA_REASON = "../shared/data is absent: the real-data tests need the shared corpora beside the checkout"


def require_shared_data(*parts: str) -> Path:
    """The path ``../shared/data/<parts>``, or skip the calling test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(MISSING_DATA_REASON)
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/data/{'/'.join(parts)} is absent: the real-data tests need the shared corpora")
    return path


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` (skips the test when the folder is absent)."""
    return require_shared_data()


# -- hang guards ----------------------------------------------------------------------------
# No test is decided by a wall-clock bound (speed is measured in benchmarks/). A timeout here only
# stops what hangs, so it is many times what the work takes on an idle 2-core machine (the longest
# single wait of the suite, a 4,000-record release in a subprocess, takes about 45 s there; on a
# loaded one the issue saw six times that), and it fails saying it is a hang guard.
HANG_GUARD_S = 900
"""Seconds before a subprocess, a thread or a polled condition of a test is taken to hang."""
BROWSER_WAIT_MS = 120_000
"""Milliseconds a browser test waits for the page (the service answers it in a second or two)."""


try:
    from hypothesis import settings as hypothesis_settings
except ImportError:  # the property tests skip without it
    pass
else:  # hypothesis's default deadline (200 ms an example) would decide a property test by time
    hypothesis_settings.register_profile("no-deadline", deadline=None)
    hypothesis_settings.load_profile("no-deadline")


def hung(what: str, seconds: float = HANG_GUARD_S) -> str:
    """The failure message of a hang guard."""
    return (f"{what} did not finish within {seconds:.0f} s: a hang guard (many times its usual time, so that a "
            "loaded machine passes), not a speed check")


def run_guarded(args: list[str], what: str, **options) -> subprocess.CompletedProcess:
    """``subprocess.run(args, **options)`` under the hang guard."""
    try:
        return subprocess.run(args, timeout=HANG_GUARD_S, **options)
    except subprocess.TimeoutExpired:
        pytest.fail(hung(what), pytrace=False)


def wait_guarded(process: subprocess.Popen, what: str) -> int:
    """``process.wait()`` under the hang guard; its return code."""
    try:
        return process.wait(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(hung(what), pytrace=False)


def join_guarded(threads: list[threading.Thread], what: str) -> None:
    """Join every thread under one hang guard; fails if one still runs."""
    deadline = time.monotonic() + HANG_GUARD_S
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not any(thread.is_alive() for thread in threads), hung(what)


def wait_until(condition, what: str, poll_s: float = 0.05) -> None:
    """Poll ``condition()`` until it holds, under the hang guard."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, hung(what)
        time.sleep(poll_s)


# A small vocabulary of real English words, so stop words, casing and OOV policies have
# something to act on. Vectors are random: only the geometry the tests construct matters.
TOY_WORDS = (
    # stop words (all in scikit-learn's list)
    "the", "a", "of", "and", "in", "to", "is", "was", "it", "on",
    # content words
    "market", "stocks", "bank", "lender", "growth", "rallied", "rose", "fell", "price", "prices",
    "good", "fine", "bad", "shares", "trade", "profit", "loss", "year", "company", "investors",
    "oil", "gold", "bond", "rate", "rates", "dollar", "euro", "yen", "london", "tokyo",
    "reuters", "analyst", "said", "quarter", "sales", "economy", "inflation", "policy", "budget", "tax",
)


@pytest.fixture(scope="session")
def toy_word_embeddings() -> WordEmbeddings:
    """50 real English words (10 of them stop words) with random 8-d vectors."""
    rng = np.random.default_rng(20240601)
    return WordEmbeddings(list(TOY_WORDS), rng.standard_normal((len(TOY_WORDS), 8)), name="toy-words")


@pytest.fixture(scope="session")
def toy_embeddings() -> WordEmbeddings:
    """200 random 8-d vectors named ``w0`` .. ``w199``."""
    rng = np.random.default_rng(7)
    return WordEmbeddings([f"w{i}" for i in range(200)], rng.standard_normal((200, 8)), name="toy-200")


def skip_without_bundled_language_model() -> None:
    """Skip a test that loads the bundled SmolLM2 model where it is not installed, saying why and
    how to install it (``make test`` does)."""
    from textveil.models.language_model import language_model_unavailable

    reason = language_model_unavailable()
    if reason is not None:
        pytest.skip(f"this test loads the bundled language model, which cannot load here: {reason} "
                    "('make test' installs it)")


def run_cli(args: list[str], capsys, monkeypatch, stdin: bytes | None = None) -> tuple[int, str, str]:
    """Run ``textveil ARGS`` in-process through the real entry point; returns (code, out, err)."""
    from textveil.cli import main

    monkeypatch.setattr(sys, "argv", ["textveil", *args])
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = 0
    try:
        main()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- toy corpora and vectors files, for sweeps and the command line ----------------------


def style_corpus(words: list[str], rng: np.random.Generator, authors: int, per_author: int) -> LabelledCorpus:
    """Each author draws most words from a vocabulary slice of their own: identifiable on clean text."""
    content = words[10:]  # the first ten toy words are stop words
    texts, labels = [], []
    for author in range(authors):
        own = content[author * 8:(author + 1) * 8]
        for _ in range(per_author):
            drawn = [own[rng.integers(len(own))] if rng.random() < 0.8 else content[rng.integers(len(content))]
                     for _ in range(30)]
            texts.append("The " + " ".join(drawn) + ".")
            labels.append(f"author{author}")
    return LabelledCorpus(texts, labels, name="toy-style")


@pytest.fixture
def vectors(tmp_path, toy_word_embeddings) -> Path:
    path = tmp_path / "toy.vec"
    path.write_text(f"{len(toy_word_embeddings)} {toy_word_embeddings.dim}\n" + "".join(
        word + " " + " ".join(f"{x:.6f}" for x in vector) + "\n"
        for word, vector in zip(toy_word_embeddings.words, toy_word_embeddings.vectors)))
    return path


@pytest.fixture
def corpora(toy_word_embeddings) -> EvaluationCorpora:
    rng = np.random.default_rng(5)
    words = list(toy_word_embeddings.words)
    return EvaluationCorpora(style_corpus(words, rng, 4, 8), style_corpus(words, rng, 4, 3))


def write_folders(root: Path, corpus: LabelledCorpus) -> Path:
    for i, (text, label) in enumerate(zip(corpus.texts, corpus.labels)):
        (root / label).mkdir(parents=True, exist_ok=True)
        (root / label / f"{i:03d}.txt").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def folders(tmp_path, corpora, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    return (write_folders(tmp_path / "known", corpora.risk_known),
            write_folders(tmp_path / "unknown", corpora.risk_unknown))


class TrainingInterrupt:
    """A training progress callback that records the batches it is told of and raises
    KeyboardInterrupt at batch ``at`` (a run killed mid-training, for the resume tests)."""

    def __init__(self, at: int | None = None) -> None:
        self.at, self.done = at, []

    def __call__(self, done: int, total: int, loss: float) -> None:
        self.done.append(done)
        if done == self.at:
            raise KeyboardInterrupt


TINY_LM_TEXT = (
    "The market rallied on Friday and stocks rose. Oil prices fell in London; the bank said so. "
    "I went to the zoo with my sister and we saw an elephant. The report is due next week, sorry for the delay. "
    "Growth, growth and more growth: the economy is good. We knit a scarf with soft wool on bamboo needles."
)


def build_tiny_language_model(folder: Path) -> Path:
    """A tiny Hugging Face causal LM folder (Llama, 2 layers of 32 units, random weights, seeded) with
    a byte-level BPE tokenizer trained in-process and a chat template: what the language-model
    mechanisms load through ``model=FOLDER`` in tests, in about a second."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator([TINY_LM_TEXT] * 3, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                        unk_token="<|endoftext|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = (
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
        "'<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False)
    torch.manual_seed(0)
    network = LlamaForCausalLM(config)
    # logits spread over several nats (sd about 4), as a trained model's are. The output layer is
    # its own: tied to the input embeddings and scaled up, it would favour the token just read, and
    # the model would repeat the template's last token (a newline) for ever.
    with torch.no_grad():
        network.lm_head.weight.mul_(40.0)
    network.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_lm_folder(tmp_path_factory) -> Path:
    """A tiny causal LM folder: pass it as the ``model`` parameter (``--set model=FOLDER``)."""
    return build_tiny_language_model(tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="session")
def tiny_language_model(tiny_lm_folder):
    """The tiny LM, loaded (``language_model=`` of paraphrase and restyle)."""
    from textveil.models.language_model import load_language_model

    return load_language_model(str(tiny_lm_folder), "cpu")


def skip_without_entity_stage() -> None:
    """Skip a test that runs the entity stage where Presidio or the spaCy model is missing, saying
    what is skipped and how to install it (``make demo`` does)."""
    from textveil.pii.detector import unavailable

    reason = unavailable()
    if reason is not None:
        pytest.skip(f"this test runs the entity stage, which cannot load here: {reason}")


def find_chromium() -> str | None:
    """Debian's Chromium (or ``$TEXTVEIL_CHROMIUM``): the browser the page and site tests drive."""
    import os
    import shutil

    found = os.environ.get("TEXTVEIL_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and Path("/usr/bin/chromium").exists():
        found = "/usr/bin/chromium"
    return found


CHROMIUM_MISSING = ("the web page and documentation site browser tests need Chromium, which is not installed "
                    "(Debian: apt-get install chromium; 'make test' installs it where it runs as root)")


@pytest.fixture(scope="module")
def chromium_browser():
    """Headless Chromium under Playwright for the web page and documentation site tests, one per
    module: Playwright's sync API holds an event loop on this thread while it runs, so a session-long
    browser would break every later test that starts its own loop. The tests skip, with the reason,
    where Playwright or Chromium is missing or does not start."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the web page and documentation site browser tests need Playwright, which is "
        "not installed ('make test' installs it; or pip install -e '.[test]')")
    chromium = find_chromium()
    if chromium is None:
        pytest.skip(CHROMIUM_MISSING)
    with sync_api.sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        except sync_api.Error as error:
            pytest.skip(f"the web page and documentation site browser tests need Chromium to start under "
                        f"Playwright, and {chromium} does not ({str(error).splitlines()[0]}); set TEXTVEIL_CHROMIUM "
                        "to a working Chromium, or reinstall it (Debian: apt-get install --reinstall chromium)")
        yield GuardedBrowser(launched)
        launched.close()


class GuardedBrowser:
    """The launched browser, whose pages wait up to BROWSER_WAIT_MS (a hang guard) where
    Playwright's own default is 30 s."""

    def __init__(self, browser) -> None:
        self._browser = browser

    def new_context(self, **options):
        context = self._browser.new_context(**options)
        context.set_default_timeout(BROWSER_WAIT_MS)
        return context

    def new_page(self, **options):
        page = self._browser.new_page(**options)
        page.set_default_timeout(BROWSER_WAIT_MS)
        return page

    def __getattr__(self, name: str):
        return getattr(self._browser, name)


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The documentation site, built strictly from mkdocs.yml into a temporary folder, once per session
    (about 15 s): the site tests of every module share it."""
    import os

    folder = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about its successor
    built = run_guarded(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder), "-f", "mkdocs.yml"],
        "mkdocs build", cwd=REPO_ROOT, env=env, capture_output=True, text=True,
    )
    output = built.stdout + built.stderr
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{output[-4000:]}"
    warnings = [line for line in output.splitlines() if "WARNING" in line]
    assert not warnings, "mkdocs build printed warnings:\n" + "\n".join(warnings)
    return folder


@pytest.fixture(scope="session")
def served(site):
    """The built site on a free loopback port (Python's http.server, in a thread); yields its base URL."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(10)


# The documentation site tests' skip: one reason, in one place.
NEEDS_MKDOCS = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
    reason="MkDocs is not installed, so the documentation site cannot be built: pip install -e \".[docs]\"",
)


def load_docs_hook(name: str) -> types.ModuleType:
    """A build hook of docs/hooks/ as a module (they are files MkDocs loads, not a package), so a
    test checks the site with the hook's own rules instead of a copy of them."""
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", REPO_ROOT / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass in the hook looks its module up there
    spec.loader.exec_module(module)
    return module
