"""How the entity stage hands texts to spaCy (issue 38): batches bounded in characters, both
cores for a corpus; what it finds must not depend on either."""

from __future__ import annotations

import pytest

from conftest import require_shared_data, run_guarded, skip_without_entity_stage


def _articles(count: int) -> list[str]:
    folder = require_shared_data("reuters_c50", "C50train")
    return [path.read_text(encoding="utf-8", errors="replace") for path in sorted(folder.glob("*/*.txt"))[:count]]


@pytest.mark.data
def test_two_processes_and_any_batch_find_what_one_finds(monkeypatch) -> None:
    skip_without_entity_stage()
    from textveil.pii import detector
    from textveil.pii.stage import DEFAULT_TYPES

    texts = _articles(30) + ["\n\n".join(_articles(8))]  # separate articles, and one long file in pieces

    def found(processes: str, chars: int) -> list[list[detector.Found]]:
        monkeypatch.setenv("TEXTVEIL_ENTITY_PROCESSES", processes)
        monkeypatch.setattr(detector, "BATCH_CHARS", chars)
        return detector.detect_many(texts, DEFAULT_TYPES, threshold=0.3)

    one = found("1", 50_000)
    assert sum(len(spans) for spans in one) > 150
    assert found("2", 50_000) == one
    assert found("1", 5_000) == one


def test_a_corpus_gets_both_cores_and_a_worker_one(monkeypatch) -> None:
    import multiprocessing

    from textveil.pii import detector

    monkeypatch.delenv("TEXTVEIL_ENTITY_PROCESSES", raising=False)
    monkeypatch.setattr("textveil.machine.usable_cpus", lambda: 2)
    big = ["x" * 1000] * (detector.PARALLEL_CHARS // 1000)
    assert detector.processes(big) == 2 and detector.processes(big[:10]) == 1
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True, raising=False)
    assert detector.processes(big) == 1  # a Dask worker may not start children
    assert detector.batch_size(["a" * 50_000]) == 1 and detector.batch_size(["ab"] * 10) == detector.BATCH_SIZE


def test_the_stage_loads_without_transformers_and_leaves_it_importable() -> None:
    """Presidio would import transformers (3.6 s, 240 MB) for an engine the stage never uses: in a
    fresh process the stage loads and detects without it, and a language model can import it after."""
    import sys

    skip_without_entity_stage()
    script = ("import sys\n"
              "from textveil.pii.stage import EntityOptions, EntityStage\n"
              "found = EntityStage(EntityOptions()).apply('Margaret Okafor flew to Chicago.').entities\n"
              "assert found and 'transformers' not in sys.modules, sorted(sys.modules)\n"
              "from transformers import AutoTokenizer\n"
              "print('ok', len(found))\n")
    done = run_guarded([sys.executable, "-c", script], "the entity stage in a fresh process", capture_output=True,
                       text=True)
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stderr[-2000:]
