"""llama.cpp on this machine: whether it runs here, how it is built, which weights format it reads.

- **Build** (``python -m textveil.models.engines.native build``, run by ``make demo`` and ``make
  test``): ``llama-cpp-python`` built from source for this CPU, once. Its instruction sets are
  named from ``/proc/cpuinfo`` (AVX2, FMA, F16C, AVX-512 and its VNNI/BF16 parts where present),
  never AMX (a guest that lists AMX may not allow it: llama.cpp then dies with SIGILL at the
  first decode) and never ``-march=native``. The wheel is kept in textveil's cache folder under a
  name that holds the version and those flags, so a fresh clone, ``make test`` and reruns
  install it in seconds instead of building it again.
- **Check**: before llama.cpp is trusted on a CPU, a subprocess decodes a few tokens of a tiny
  model with it; a crash (an instruction the CPU refuses) or an error makes it unavailable, with
  one line naming the fix, and the language models run on transformers. The verdict is kept per
  library file and CPU.
- **Weights**: llama.cpp reads the model's own GGUF file, or a conversion of it that this CPU
  multiplies faster: float16 (every weight of a 4-bit file to within 2^-11 of itself) or bfloat16
  (where the CPU has bfloat16 dot products). A short calibration at first use times each on this
  machine and keeps the fastest (one choice per model, library and CPU, whatever the process);
  ``TEXTVEIL_LLAMA_CPP_WEIGHTS`` (``file``, ``f16``, ``bf16``) fixes it instead, for releases
  that must be byte-identical across machines. Conversions are kept in the cache folder.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from textveil.paths import cache_root

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
"""The version textveil builds and has been checked against (its low-level batch API)."""
WEIGHTS_VARIABLE = "TEXTVEIL_LLAMA_CPP_WEIGHTS"
WEIGHTS_FORMATS = {"file": None, "f16": 1, "bf16": 32}
"""A weights format and llama.cpp's file type for it (None: the model's own file)."""
BUILD_HINT = "make demo builds it (make llama-cpp builds it again)"
_CHECK_TIMEOUT_S = 180
_CALIBRATION_VERSION = 1


# -- this CPU ------------------------------------------------------------------------------


def cpu_flags() -> set[str]:
    """The instruction-set flags ``/proc/cpuinfo`` lists for this CPU (empty where it cannot be read)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_model() -> str:
    """The CPU's model name, as ``/proc/cpuinfo`` gives it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


_FLAG_OPTIONS = (  # (llama.cpp's CMake option, the cpuinfo flags it needs)
    ("GGML_AVX", {"avx"}),
    ("GGML_AVX2", {"avx2"}),
    ("GGML_FMA", {"fma"}),
    ("GGML_F16C", {"f16c"}),
    ("GGML_BMI2", {"bmi2"}),
    ("GGML_AVX_VNNI", {"avx_vnni"}),
    ("GGML_AVX512", {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}),
    ("GGML_AVX512_VBMI", {"avx512vbmi", "avx512f"}),
    ("GGML_AVX512_VNNI", {"avx512_vnni", "avx512f"}),
    ("GGML_AVX512_BF16", {"avx512_bf16", "avx512f"}),
)


def cmake_args(flags: set[str] | None = None) -> str:
    """llama.cpp's CMake options for a CPU with ``flags`` (this one by default): each instruction
    set it lists, never AMX or -march=native, and only the library (no tools, tests, server or
    multimodal part).

    >>> cmake_args({"avx", "avx2", "fma", "f16c"}).split()[:4]
    ['-DGGML_NATIVE=OFF', '-DGGML_AVX=ON', '-DGGML_AVX2=ON', '-DGGML_FMA=ON']
    >>> "AMX" in cmake_args({"avx2", "amx_tile", "amx_int8", "amx_bf16"})
    False
    """
    flags = cpu_flags() if flags is None else flags
    options = ["-DGGML_NATIVE=OFF"]
    options += [f"-D{option}={'ON' if needed <= flags else 'OFF'}" for option, needed in _FLAG_OPTIONS
                if needed <= flags or option in ("GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2")]
    options += ["-DLLAVA_BUILD=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_TOOLS=OFF",
                "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF",
                "-DLLAMA_OPENSSL=OFF"]
    return " ".join(options)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]


def machine_key() -> str:
    """This CPU (model and flags) as a short digest: what a calibration or a check holds for."""
    return _digest(cpu_model(), " ".join(sorted(cpu_flags())))


# -- the library -----------------------------------------------------------------------------


def installed_version() -> str | None:
    """The installed llama-cpp-python's version, or None (looked up without importing it)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _library_key() -> str:
    """The installed library's files (path, size and time), so a rebuild is checked anew."""
    spec = importlib.util.find_spec("llama_cpp")
    folder = Path(spec.origin).parent if spec and spec.origin else Path(".")
    files = sorted((folder / "lib").glob("*.so*")) or sorted(folder.glob("*.so*"))
    stamp = ";".join(f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files if f.is_file())
    return _digest(str(folder), stamp, machine_key())


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    from textveil.atomic_files import atomic_write_text

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True))
    except OSError:  # a read-only cache only costs the next process the same check
        pass


_VERDICT: dict[str, str | None] = {}


def llama_cpp_unavailable() -> str | None:
    """Why llama.cpp cannot run here (one line naming the fix), or None: installed and checked in
    a subprocess on this CPU (once per library build and CPU, remembered in the cache folder)."""
    if installed_version() is None:
        return f"llama.cpp (llama-cpp-python) is not installed: {BUILD_HINT}"
    key = _library_key()
    if key in _VERDICT:
        return _VERDICT[key]
    memo = cache_root() / "engines" / "llama-cpp-check.json"
    with _locked(memo):  # processes that start together run the check once
        known = _read_json(memo)
        if key in known:
            _VERDICT[key] = known[key] or None
            return _VERDICT[key]
        verdict, about_the_cpu = _check_in_subprocess()
        _VERDICT[key] = verdict
        # Only what the CPU decides is remembered: a missing Python package or a timeout on a busy
        # machine is fixed by the next install or run, and a kept verdict would outlive the fix.
        if about_the_cpu:
            known[key] = verdict or ""
            _write_json(memo, known)
    return verdict


def _check_in_subprocess() -> tuple[str | None, bool]:
    """Decode a few tokens of a tiny model with llama.cpp in a child process: (None if it worked, else
    why not; whether the verdict belongs to this CPU and library build rather than to this moment)."""
    code = "from textveil.models.engines.native import smoke_test; smoke_test()"
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=_CHECK_TIMEOUT_S,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        return f"llama.cpp did not finish its check on this CPU in {_CHECK_TIMEOUT_S} s; {BUILD_HINT} anew", False
    if done.returncode == 0:
        return None, True
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        return (f"llama.cpp was killed by {name} in its check on this CPU (built for instructions it refuses); "
                f"rebuild it here: {BUILD_HINT}"), True
    last = (done.stderr.strip().splitlines() or ["no message"])[-1]
    return f"llama.cpp failed its check on this CPU ({last}); {BUILD_HINT}", False


def smoke_test() -> None:
    """What the subprocess check runs: a tiny model written as GGUF, two rows decoded together."""
    from textveil.models.engines.llama_cpp_engine import LlamaCppEngine
    from textveil.models.gguf_writing import write_tiny_gguf

    with tempfile.TemporaryDirectory() as folder:
        engine = LlamaCppEngine(write_tiny_gguf(Path(folder) / "tiny.gguf"), "f32", threads=1)
        scores = engine.token_log_likelihoods([[5, 6, 7, 8], [9, 10, 11]])
        if not all(len(s) for s in scores):
            raise SystemExit("no logits came back")
        engine.close()


# -- weights ---------------------------------------------------------------------------------


def converted_weights(gguf: Path, digest: str, weights: str) -> Path:
    """``gguf`` in the weights format ``weights`` (the file itself for ``file``), converted once by
    llama.cpp into the cache folder (atomically: written beside it, then renamed)."""
    file_type = WEIGHTS_FORMATS[weights]
    if file_type is None:
        return gguf
    from textveil.models.engines.llama_cpp_engine import _llama

    target = cache_root() / "language-models" / f"{gguf.stem}-{digest}-{weights}-llama{installed_version()}.gguf"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, building = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(handle)
    try:
        llama_cpp = _llama()
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = file_type
        params.allow_requantize = True
        params.nthread = max(1, len(os.sched_getaffinity(0)))
        import ctypes

        if llama_cpp.llama_model_quantize(str(gguf).encode(), building.encode(), ctypes.byref(params)) != 0:
            raise ValueError(f"llama.cpp could not convert '{gguf.name}' to {weights}")
        os.replace(building, target)
    finally:
        Path(building).unlink(missing_ok=True)
    return target


def candidate_weights(flags: set[str] | None = None) -> list[str]:
    """The weights formats worth timing on a CPU with ``flags``: the file's own and float16 always,
    bfloat16 where the CPU multiplies it natively (elsewhere it is emulated, and slow).

    >>> candidate_weights({"avx2", "f16c"}), candidate_weights({"avx2", "avx512_bf16"})
    (['file', 'f16'], ['file', 'f16', 'bf16'])
    """
    flags = cpu_flags() if flags is None else flags
    found = ["file", "f16"]
    if {"avx512_bf16"} <= flags or {"amx_bf16"} <= flags:
        found.append("bf16")
    return found


def chosen_weights(gguf: Path, digest: str) -> str:
    """The weights format llama.cpp reads ``gguf`` in here: ``$TEXTVEIL_LLAMA_CPP_WEIGHTS`` when set,
    else the fastest of :func:`candidate_weights` on this machine, timed once and remembered.

    The choice is one per model, library and CPU, whatever the process: it is timed on every CPU
    the process may run on (not on a Dask worker's one thread), under a lock, so that processes
    that start together (a release's workers) wait for one timing and read the same choice; a
    release is then the same bytes whatever the number of workers."""
    forced = os.environ.get(WEIGHTS_VARIABLE, "").strip().lower()
    if forced:
        if forced not in WEIGHTS_FORMATS:
            from textveil.errors import InputError

            raise InputError(f"{WEIGHTS_VARIABLE}={forced!r} is not a weights format; use one of: "
                             f"{', '.join(WEIGHTS_FORMATS)}")
        return forced
    key = _digest(digest, installed_version() or "", machine_key(), str(_CALIBRATION_VERSION))
    memo = cache_root() / "engines" / "llama-cpp-weights.json"
    with _locked(memo):
        known = _read_json(memo)
        if key in known:
            return str(known[key]["weights"])
        threads = max(1, len(os.sched_getaffinity(0)))
        timings = {weights: _time_weights(converted_weights(gguf, digest, weights), weights, threads)
                   for weights in candidate_weights()}
        best = min(timings, key=timings.get)
        known[key] = {"weights": best, "seconds": timings, "model": gguf.name, "cpu": cpu_model(), "threads": threads}
        _write_json(memo, known)
    return best


class _locked:
    """An exclusive lock on ``path`` + ``.lock`` across processes (for a one-time piece of work
    that several processes may start together); a cache folder that cannot be written goes unlocked."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(path.name + ".lock")
        self.handle: Any = None

    def __enter__(self) -> None:
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = self.path.open("a")
            fcntl.flock(self.handle, fcntl.LOCK_EX)
        except OSError:
            self.handle = None

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            import fcntl

            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()


def _time_weights(path: Path, weights: str, threads: int) -> float:
    """Seconds for a fixed piece of work (one 128-token prompt, then 24 steps of 16 rows) with the
    weights at ``path``: the best of two runs."""
    import numpy as np

    from textveil.models.engines.batching import DecodeJob, DecodeQueue
    from textveil.models.engines.llama_cpp_engine import LlamaCppEngine

    engine = LlamaCppEngine(path, weights, threads)
    queue = DecodeQueue(engine, join_window=0.0)
    vocabulary = engine.vocabulary_size
    prompts = [[int(t) for t in np.random.default_rng(row).integers(vocabulary // 4, vocabulary // 2,
                                                                       64 if row else 128)] for row in range(16)]

    def first_token(logits: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.full(len(rows), vocabulary // 3, dtype=np.int64)  # never an end token: every row runs 24 steps

    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        queue.decode(DecodeJob(prompts, 0, 24, first_token, frozenset({-1}), batch_size=16))
        best = min(best, time.perf_counter() - started)
    engine.close()
    return round(best, 4)


# -- building ------------------------------------------------------------------------------


def wheel_folder(args: str | None = None) -> Path:
    """Where the wheel built with ``args`` (this CPU's by default) is kept."""
    args = cmake_args() if args is None else args
    return cache_root() / "wheels" / f"{LLAMA_CPP_PYTHON.replace('==', '-')}-{_digest(args)}"


def build(python: str = sys.executable, note: str = "") -> int:
    """Install llama-cpp-python for this CPU into ``python``'s environment: the kept wheel when
    there is one, else built from source (a few minutes) and kept. Prints one line before a build
    (what, why, about how long, and ``note``: ``make demo`` says the demo did not need it) and one
    after; 0 on success, 1 when it could not be built (textveil then runs its language models on
    transformers)."""
    args = cmake_args()
    folder = wheel_folder(args)
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        if not _compiler():  # CMake itself comes from PyPI when the machine has none
            print("note: llama.cpp needs a C++ compiler (Debian: apt-get install build-essential, then "
                  "make llama-cpp); textveil runs its language models on transformers (slower)")
            return 1
        cores = len(os.sched_getaffinity(0))
        print(f"building llama.cpp ({LLAMA_CPP_PYTHON}) for the language-model mechanisms (paraphrase, restyle), "
              f"once for this CPU: about 3 to 7 minutes on 2 cores ({cores} here){'; ' + note if note else ''}; "
              f"kept in {folder}", flush=True)
        building = Path(tempfile.mkdtemp(prefix="llama-cpp-build-"))
        started = time.perf_counter()
        done = subprocess.run([python, "-m", "pip", "wheel", "-qq", "--no-deps", "--no-binary", "llama-cpp-python",
                               "-w", str(building), LLAMA_CPP_PYTHON], capture_output=True, text=True,
                              env={**os.environ, "CMAKE_ARGS": args,
                                   "CMAKE_BUILD_PARALLEL_LEVEL": str(max(1, len(os.sched_getaffinity(0))))})
        built = sorted(building.glob("*.whl"))
        if done.returncode != 0 or not built:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1][:200]
            print(f"note: llama.cpp could not be built ({last}); textveil runs its language models on transformers "
                  "(slower); install a C++ compiler and CMake, then run make llama-cpp")
            shutil.rmtree(building, ignore_errors=True)
            return 1
        folder.mkdir(parents=True, exist_ok=True)
        for wheel in built:
            shutil.move(str(wheel), folder / wheel.name)
        shutil.rmtree(building, ignore_errors=True)
        print(f"built llama.cpp in {time.perf_counter() - started:.0f} s")
        wheels = sorted(folder.glob("*.whl"))
    # The wheel itself replaces any other build (--force-reinstall without its dependencies, which would
    # reinstall numpy); the second call installs only the requirements still missing (diskcache, ...).
    done = subprocess.run([python, "-m", "pip", "install", "-qq", "--no-deps", "--force-reinstall", str(wheels[-1])],
                          capture_output=True, text=True)
    if done.returncode == 0:
        done = subprocess.run([python, "-m", "pip", "install", "-qq", str(wheels[-1])], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"note: llama.cpp's wheel would not install ({(done.stderr.strip().splitlines() or [''])[-1][:200]}); "
              "textveil runs its language models on transformers (slower)")
        return 1
    return 0


def _compiler() -> bool:
    return any(shutil.which(name) for name in ("c++", "g++", "clang++"))


if __name__ == "__main__":  # pragma: no cover - run by the Makefile
    if sys.argv[1:2] == ["build"] and len(sys.argv) <= 3:  # build [NOTE]
        raise SystemExit(build(note=" ".join(sys.argv[2:])))
    if sys.argv[1:] == ["cmake-args"]:
        print(cmake_args())
        raise SystemExit(0)
    raise SystemExit("usage: python -m textveil.models.engines.native build [NOTE] | cmake-args")
