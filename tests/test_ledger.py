"""The privacy budget ledger (issue 13): caps refuse before any randomness, spends and releases
are recorded together or not at all, crashes and concurrent processes never break the books."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import HANG_GUARD_S, hung, run_cli, wait_guarded
from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.random_replacement import RandomReplacement
from textveil.mechanisms.syntf import SynTF
from textveil.privacy.ledger import BudgetExceeded, BudgetLedger, Spend
from textveil.release.budgeted import release_with_budget

UNIT = "metric epsilon per token"


def _spend(subject: str, amount: float, unit: str = UNIT) -> Spend:
    return Spend(subject, amount, unit, "emp")


# -- bookkeeping, one operation at a time -----------------------------------------------------


def test_caps_resolve_from_the_most_specific(tmp_path):
    ledger = BudgetLedger(tmp_path / "l.sqlite")
    assert ledger.cap("ann") is None and ledger.remaining("ann") is None
    ledger.set_cap(30)
    ledger.set_cap(20, dataset="blogs")
    ledger.set_cap(5, subject="ann", dataset="blogs")
    assert (ledger.cap("bob"), ledger.cap("bob", "blogs"), ledger.cap("ann", "blogs")) == (30, 20, 5)
    ledger.set_cap(None, subject="ann", dataset="blogs")
    assert ledger.cap("ann", "blogs") == 20


def test_a_refused_spend_spends_nothing_and_all_or_nothing(tmp_path):
    ledger = BudgetLedger(tmp_path / "l.sqlite")
    ledger.set_cap(10)
    ledger.record([_spend("ann", 6)])
    with pytest.raises(BudgetExceeded, match="'ann'.*spent 6.*cap of 10.*4 more|'ann'.*spent 6.*cap of 10"):
        ledger.record([_spend("bob", 3), _spend("ann", 2), _spend("ann", 3)])  # ann: 6 + 5 > 10
    assert ledger.spent("bob") == 0 and ledger.spent("ann") == 6  # bob's part was not spent either
    ledger.record([_spend("ann", 4)])  # exactly up to the cap is allowed
    assert ledger.remaining("ann") == 0


def test_units_that_do_not_add_up_are_refused(tmp_path):
    ledger = BudgetLedger(tmp_path / "l.sqlite")
    ledger.record([_spend("ann", 1)])
    with pytest.raises(InvalidParameterError, match="does not add up"):
        ledger.record([_spend("ann", 1, "dp epsilon per token")])


@pytest.mark.parametrize("bad", [dict(subject=""), dict(subject="*"), dict(amount=-1.0), dict(amount=float("nan")),
                                 dict(amount=float("inf")), dict(dataset="")])
def test_bad_spends_are_refused(bad):
    values = dict(subject="ann", amount=1.0, unit=UNIT, mechanism="emp", **{})
    values.update(bad)
    with pytest.raises(InvalidParameterError):
        Spend(**values)


def test_a_file_that_is_not_a_ledger_is_one_line(tmp_path):
    garbage = tmp_path / "notes.sqlite"
    garbage.write_text("these are not the books\n" * 200)
    with pytest.raises(InputError, match="not a textveil budget ledger"):
        BudgetLedger(garbage)
    with pytest.raises(InputError, match="is a folder"):
        BudgetLedger(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        BudgetLedger(tmp_path / "missing" / "l.sqlite")


def test_a_request_is_spent_once_and_replayed(tmp_path, toy_word_embeddings):
    ledger = BudgetLedger(tmp_path / "l.sqlite")
    emp = EarthMoversPrivacy(8, toy_word_embeddings)
    first = release_with_budget(emp, ["the market rallied"], ["ann"], ledger, request_id="r1")
    again = release_with_budget(emp, ["the market rallied"], ["ann"], ledger, request_id="r1")
    assert again.replayed and not first.replayed and again.records == first.records
    assert ledger.spent("ann") == 8 and len(ledger.spends()) == 1


def test_the_cap_is_checked_before_any_randomness(tmp_path, toy_word_embeddings, monkeypatch):
    ledger = BudgetLedger(tmp_path / "l.sqlite")
    ledger.set_cap(5)
    emp = EarthMoversPrivacy(8, toy_word_embeddings)
    touched = []
    monkeypatch.setattr(EarthMoversPrivacy, "sanitize_many", lambda self, *a, **k: touched.append(1))
    with pytest.raises(BudgetExceeded):
        release_with_budget(emp, ["the market"], ["ann"], ledger)
    assert touched == [] and ledger.spends() == []


@pytest.mark.parametrize("make", [
    lambda e: EarthMoversPrivacy(8, e), lambda e: EarthMoversPrivacy(8, e, layout="keep"),
    lambda e: EarthMoversPrivacy(8, e, output="bag"), lambda e: SynTF(3, e), lambda e: RandomReplacement(e),
])
def test_what_a_release_spends_is_what_its_guarantee_states(make, toy_word_embeddings):
    mechanism = make(toy_word_embeddings)
    guarantee = mechanism.sanitize("The market rallied, and the bank fell.").guarantee
    assert mechanism.spend_per_release() == (guarantee.epsilon, f"{guarantee.kind} epsilon per {guarantee.unit}")


def test_a_mechanism_without_epsilon_cannot_be_budgeted(tmp_path):
    from textveil.mechanisms.redaction import Redaction

    with pytest.raises(InvalidParameterError, match="states no epsilon"):
        release_with_budget(Redaction(), ["call 555 1234"], ["ann"], BudgetLedger(tmp_path / "l.sqlite"))


# -- any interleaving of spends, refusals and crashes --------------------------------------------


class _Crash(Exception):
    pass


class _Unwritable:
    """A response that cannot be stored: the transaction fails after its spends were inserted,
    as a crash between the insert and the commit would."""

    def __repr__(self) -> str:
        return "unwritable"


operations = st.lists(st.one_of(
    st.tuples(st.just("spend"), st.lists(st.tuples(st.sampled_from(["ann", "bob", "cy"]),
                                                   st.floats(0, 6, allow_nan=False)), min_size=1, max_size=3),
              st.booleans()),
    st.tuples(st.just("crash"), st.lists(st.tuples(st.sampled_from(["ann", "bob"]), st.floats(0, 6)), min_size=1,
                                         max_size=2), st.booleans()),
    st.tuples(st.just("cap"), st.sampled_from([None, "ann", "bob"]), st.one_of(st.none(), st.floats(0, 30))),
), max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=operations)
def test_any_interleaving_keeps_totals_equal_to_accepted_spends(tmp_path_factory, steps):
    ledger = BudgetLedger(tmp_path_factory.mktemp("ledger") / "l.sqlite")
    accepted: dict[str, float] = {}
    requests = 0
    for step in steps:
        if step[0] == "cap":
            _, subject, cap = step
            ledger.set_cap(cap, subject=subject)
            continue
        _, items, with_id = step
        spends = [_spend(subject, amount) for subject, amount in items]
        requests += 1
        request_id = f"r{requests}" if with_id else None
        try:
            if step[0] == "crash":
                ledger.record(spends, request_id=request_id or "crash", response=_Unwritable())
            else:
                ledger.record(spends, request_id=request_id, response={"n": requests})
        except (BudgetExceeded, TypeError):
            continue  # refused, or crashed mid-transaction: nothing may have been spent
        for spend in spends:
            accepted[spend.subject] = accepted.get(spend.subject, 0.0) + spend.amount
    for subject in ("ann", "bob", "cy"):
        assert ledger.spent(subject) == pytest.approx(accepted.get(subject, 0.0), abs=1e-9)
    assert sum(row["spent"] for row in ledger.totals()) == pytest.approx(sum(accepted.values()), abs=1e-9)


# -- processes: killed mid-run, and two sharing one file ---------------------------------------------

_WORKER = """
import sys, time
from textveil.privacy.ledger import BudgetLedger, BudgetExceeded, Spend
ledger = BudgetLedger(sys.argv[1])
name = sys.argv[2]
for i in range(int(sys.argv[3])):
    try:
        ledger.record([Spend("ann", 1.0, "metric epsilon per token", "emp"),
                       Spend(f"{name}-{i % 7}", 0.5, "metric epsilon per token", "emp")],
                      request_id=f"{name}-{i}", response={"i": i})
    except BudgetExceeded:
        pass
    print(i, flush=True)
"""


def _worker(ledger: Path, name: str, count: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _WORKER, str(ledger), name, str(count)], stdout=subprocess.PIPE,
                            text=True, cwd=Path(__file__).parent.parent)


def _books_balance(ledger: BudgetLedger) -> int:
    """Every recorded request has both its spends and nothing else; returns the requests."""
    spends = ledger.spends()
    by_request: dict[str, list[float]] = {}
    for spend in spends:
        by_request.setdefault(spend["request_id"], []).append(spend["amount"])
    assert all(sorted(amounts) == [0.5, 1.0] for amounts in by_request.values())
    assert all(ledger.replay(request) is not None for request in by_request)
    assert ledger.spent("ann") == pytest.approx(len(by_request))
    return len(by_request)


def test_a_process_killed_mid_run_leaves_whole_books(tmp_path):
    path = tmp_path / "l.sqlite"
    BudgetLedger(path)
    worker = _worker(path, "w", 100000)
    for _ in range(40):  # wait until it has recorded a few, then kill it without warning
        line = worker.stdout.readline()
        if not line:
            break
    os.kill(worker.pid, signal.SIGKILL)
    wait_guarded(worker, "the killed worker")
    recorded = _books_balance(BudgetLedger(path))
    assert recorded >= 40
    # After the crash the ledger takes spends again.
    BudgetLedger(path).record([_spend("ann", 1.0), _spend("z", 0.5)], request_id="after")
    assert _books_balance(BudgetLedger(path)) == recorded + 1


def test_two_processes_sharing_a_ledger_never_pass_the_cap(tmp_path):
    path = tmp_path / "l.sqlite"
    BudgetLedger(path).set_cap(60, subject="ann")
    workers = [_worker(path, name, 80) for name in ("a", "b")]
    for worker in workers:
        try:
            worker.communicate(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            worker.kill()
            pytest.fail(hung("a worker sharing the ledger"), pytrace=False)
    ledger = BudgetLedger(path)
    assert _books_balance(ledger) == 60  # 160 attempts, exactly 60 fit under ann's cap
    assert ledger.spent("ann") == 60


# -- the command line ---------------------------------------------------------------------------


def test_cli_budget_commands_and_a_refused_release(tmp_path, vectors, capsys, monkeypatch):
    ledger = tmp_path / "budget.sqlite"
    doc = tmp_path / "a.txt"
    doc.write_text("The market rallied today.", encoding="utf-8")
    out = tmp_path / "released.txt"
    code, _, err = run_cli(["budget", "set-cap", "15", "--ledger", str(ledger)], capsys, monkeypatch)
    assert code == 0, err
    args = ["sanitize", str(doc), "-e", "10", "--embeddings", str(vectors), "--ledger", str(ledger), "--subject", "d1"]
    code, _, err = run_cli(args + ["-o", str(out)], capsys, monkeypatch)
    assert code == 0 and "5 left" in err, err
    code, _, err = run_cli(args + ["-o", str(tmp_path / "again.txt")], capsys, monkeypatch)
    assert code == 2 and "cap of 15" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "again.txt").exists()
    code, shown, _ = run_cli(["budget", "show", "--ledger", str(ledger), "--format", "json"], capsys, monkeypatch)
    data = json.loads(shown)
    assert [(s["subject"], s["spent"], s["remaining"]) for s in data["subjects"]] == [("d1", 10.0, 5.0)]
    code, exported, _ = run_cli(["budget", "export", "--ledger", str(ledger)], capsys, monkeypatch)
    assert [json.loads(line)["amount"] for line in exported.splitlines()] == [10.0]
    target = tmp_path / "spends.csv"
    code, _, err = run_cli(["budget", "export", "--ledger", str(ledger), "--format", "csv", "-o", str(target)],
                           capsys, monkeypatch)
    assert code == 0 and target.read_text().startswith("id,dataset,subject,amount")
    code, _, err = run_cli(["budget", "export", "--ledger", str(ledger), "-o", str(target)], capsys, monkeypatch)
    assert code == 2 and "never overwrites" in err


def test_cli_subject_field_and_option_errors(tmp_path, vectors, capsys, monkeypatch):
    ledger = tmp_path / "budget.sqlite"
    records = tmp_path / "r.jsonl"
    records.write_text('{"text": "the bank fell", "author": "x"}\n{"text": "shares rallied"}\n', encoding="utf-8")
    base = ["sanitize", str(records), "-e", "5", "--embeddings", str(vectors)]
    for extra, words in (
        (["--ledger", str(ledger), "--subject-field", "author"], ("record 2", "author")),
        (["--subject", "x"], ("--ledger",)),
        (["--ledger", str(ledger)], ("--subject",)),
    ):
        code, _, err = run_cli(base + extra, capsys, monkeypatch)
        assert code == 2 and all(w in err for w in words) and len(err.strip().splitlines()) == 1, err
    assert not ledger.exists() or BudgetLedger(ledger).spends() == []
    code, _, err = run_cli(["budget", "show", "--ledger", str(tmp_path / "none.sqlite")], capsys, monkeypatch)
    assert code == 2 and "does not exist" in err


def test_a_request_id_reused_for_another_request_is_refused(tmp_path, toy_word_embeddings):
    from textveil.privacy.ledger import RequestConflict

    ledger = BudgetLedger(tmp_path / "l.sqlite")
    emp = EarthMoversPrivacy(8, toy_word_embeddings)
    release_with_budget(emp, ["the market rallied"], ["ann"], ledger, request_id="r1")
    for texts, subjects, mechanism in ((["the bank fell"], ["ann"], emp), (["the market rallied"], ["bob"], emp),
                                       (["the market rallied"], ["ann"], emp.with_params(epsilon=9))):
        with pytest.raises(RequestConflict, match="'r1' was used before"):
            release_with_budget(mechanism, texts, subjects, ledger, request_id="r1")
    assert ledger.spent("ann") == 8 and ledger.spent("bob") == 0


# -- a language model's paraphrase spends epsilon * L per text ----------------------------------


def test_a_paraphrase_release_spends_epsilon_times_its_length_bound_per_text(tmp_path, tiny_language_model):
    from textveil.mechanisms.paraphrase import Paraphrase

    ledger = BudgetLedger(tmp_path / "l.sqlite")
    ledger.set_cap(40)
    paraphrase = Paraphrase(2.0, max_new_tokens=6, language_model=tiny_language_model, seed=1)
    assert paraphrase.planned_spend("The market rallied.") == (12.0, "dp epsilon per document")  # one unit
    assert paraphrase.planned_spend("Shares rose.\n\nOil fell.") == (24.0, "dp epsilon per document")  # two
    done = release_with_budget(paraphrase, ["The market rallied.", "Oil fell.", "The bank said so."],
                               ["ann", "ann", "bob"], ledger)
    assert [s.amount for s in done.spends] == [12.0] * 3 and {s.unit for s in done.spends} == {"dp epsilon per document"}
    assert ledger.spent("ann") == 24 and ledger.spent("bob") == 12
    assert all(r["guarantee"]["document_epsilon"] == 12.0 for r in done.records)  # what the Guarantee states
    with pytest.raises(BudgetExceeded, match="'ann'.*spent 24.*cap of 40"):
        release_with_budget(paraphrase, ["Shares rose.", "Gold fell."], ["ann", "ann"], ledger)
    assert ledger.spent("ann") == 24


def test_cli_paraphrase_spends_epsilon_times_l_per_text_and_per_record(tmp_path, tiny_lm_folder, capsys, monkeypatch):
    """``sanitize --ledger`` and ``release --ledger`` with paraphrase: each text spends epsilon * L."""
    ledger = tmp_path / "budget.sqlite"
    posts = tmp_path / "posts.jsonl"
    posts.write_text("".join(json.dumps({"user": user, "text": text}) + "\n" for user, text in
                             [("ann", "The market rallied."), ("ann", "Oil fell."), ("bob", "The bank said so.")]))
    model = ["-m", "paraphrase", "-e", "2", "--set", "max_new_tokens=6", "--model", str(tiny_lm_folder), "--seed", "4",
             "--ledger", str(ledger), "--subject-field", "user"]
    code, _, err = run_cli(["sanitize", str(posts), *model], capsys, monkeypatch)
    assert code == 0, err
    assert "subject 'ann' has spent 24" in err and "subject 'bob' has spent 12" in err
    code, _, err = run_cli(["release", str(posts), "--out", str(tmp_path / "out"), "--workers", "0", *model],
                           capsys, monkeypatch)
    assert code == 0, err
    book = BudgetLedger(ledger)
    assert (book.spent("ann"), book.spent("bob")) == (48.0, 24.0)
    assert {s["unit"] for s in book.spends()} == {"dp epsilon per document"}
