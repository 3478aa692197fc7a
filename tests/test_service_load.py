"""The service under load, for real: `benchmarks/speed/load_service.py` (issue 13's load test) at a small
size against `textveil serve` processes on 127.0.0.1 with toy vectors. Every phase (steady, the
server SIGKILLed mid-run and restarted, two servers on one ledger) must end with no error and
the ledger's totals equal to the accepted spends, exactly; some requests are refused at a cap."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import run_guarded

pytest.importorskip("fastapi", reason="the service needs fastapi and uvicorn: pip install -e .")
pytest.importorskip("uvicorn", reason="the service needs fastapi and uvicorn: pip install -e .")

ROOT = Path(__file__).resolve().parent.parent


def test_books_stay_exact_through_kills_and_shared_ledgers(vectors):
    run = run_guarded([sys.executable, str(ROOT / "benchmarks" / "speed" / "load_service.py"), "--requests", "120",
                       "--clients", "6", "--words", "12", "--embeddings", str(vectors)], "the load test",
                      capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    phases = {p["phase"]: p for p in json.loads(run.stdout)["phases"]}
    assert set(phases) == {"steady", "killed", "shared"}
    for result in phases.values():
        assert result["errors"] == 0 and result["books_exact"], result
        assert result["accepted"] + result["refused_at_cap"] == result["requests"]
        assert result["refused_at_cap"] > 0  # the cap refused some, and they spent nothing
        assert result["ledger_total"] == result["accepted"] * 10.0
    assert phases["killed"]["killed_and_restarted"] and phases["killed"]["retries"] > 0
    assert phases["shared"]["servers"] == 2
