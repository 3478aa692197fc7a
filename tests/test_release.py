"""``textveil release`` (issue 14): a corpus released into shards in the input's format with a
manifest, the same whatever the sharding or the workers, resumable after SIGKILL with every
record released exactly once, spending from a ledger once per record."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO_ROOT, TOY_WORDS, run_cli, run_guarded, wait_guarded, wait_until
from textveil.privacy.ledger import BudgetLedger
from textveil.release.job import JOB_JOURNAL, JOB_STATE, MANIFEST, ReleaseJob, run_release
from textveil.release.records import read_shard
from textveil.release.seeds import record_seeds
from textveil.release.shards import MechanismSpec

SEED = 987654321987654321  # long enough that finding it in a file is no accident
EPSILON = 10.0


def write_jsonl(path: Path, count: int, seed: int = 1) -> list[dict]:
    """``count`` records of about ten toy words each, with an id and a user besides the text."""
    rng = np.random.default_rng(seed)
    records = [{"id": i, "user": f"u{i % 5}", "text": " ".join(rng.choice(TOY_WORDS, 10)) + "."}
               for i in range(count)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return records


def release_args(inputs: list[Path], out: Path, vectors: Path, *extra: str, workers: str = "0",
                 seed: int = SEED) -> list[str]:
    return ["release", *map(str, inputs), "--out", str(out), "-m", "emp", "-e", str(EPSILON), "--embeddings",
            str(vectors), "--seed", str(seed), "--workers", workers, *extra]


def shard_files(out: Path) -> list[Path]:
    return sorted(out.glob("shard-*"))


def released_records(out: Path) -> list[dict]:
    return [row for path in shard_files(out) for row in read_shard(path)]


def concatenated(out: Path) -> bytes:
    return b"".join(path.read_bytes() for path in shard_files(out))


def expected_texts(vectors: Path, texts: list[str]) -> list[str]:
    """What the release must be: the library's sanitize_records with the run's per-record seeds."""
    mechanism = MechanismSpec("emp", {"epsilon": EPSILON}, str(vectors)).build()
    return [r.text for r in mechanism.sanitize_records(texts, record_seeds(SEED, 0, len(texts)))]


def check_manifest(out: Path) -> dict:
    """The manifest's shards are the files there (counts, sizes, checksums); no seed, no job state."""
    manifest = json.loads((out / MANIFEST).read_text())
    assert [s["file"] for s in manifest["shards"]] == [p.name for p in shard_files(out)]
    first = 0
    for shard in manifest["shards"]:
        data = (out / shard["file"]).read_bytes()
        assert shard["sha256"] == hashlib.sha256(data).hexdigest() and shard["bytes"] == len(data)
        assert shard["records"] == len(read_shard(out / shard["file"])) and shard["first"] == first
        first += shard["records"]
    assert manifest["totals"]["records"] == first
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST, *(s["file"] for s in manifest["shards"])])
    for path in out.iterdir():  # the run seed is nowhere in the release
        assert str(SEED).encode() not in path.read_bytes() and hex(SEED)[2:].encode() not in path.read_bytes()
    assert "seed" not in manifest["parameters"] and "seed" not in manifest["fingerprint"]["parameters"]
    return manifest


# -- formats ------------------------------------------------------------------------------


def test_jsonl_is_released_in_shards_with_its_other_fields_and_a_manifest(tmp_path, vectors, capsys, monkeypatch):
    records = write_jsonl(tmp_path / "posts.jsonl", 23)
    code, _, err = run_cli(release_args([tmp_path / "posts.jsonl"], tmp_path / "out", vectors, "--shard-size", "5"),
                           capsys, monkeypatch)
    assert code == 0, err
    out = tmp_path / "out"
    manifest = check_manifest(out)
    assert [p.name for p in shard_files(out)] == [f"shard-0000{i}.jsonl" for i in range(5)]
    assert [s["records"] for s in manifest["shards"]] == [5, 5, 5, 5, 3]
    released = released_records(out)
    assert [(r["id"], r["user"]) for r in released] == [(r["id"], r["user"]) for r in records]
    assert [r["text"] for r in released] == expected_texts(vectors, [r["text"] for r in records])
    assert manifest["mechanism"] == "emp" and manifest["parameters"]["epsilon"] == EPSILON
    assert manifest["summary"]["kind"] == "metric" and manifest["summary"]["unprotected"]
    assert manifest["summary"]["documents"] == 23 and manifest["summary"]["totals"]["words_protected"] > 0
    assert manifest["copied_fields"] == ["id", "user"] and manifest["totals"]["words"] == 23 * 10
    assert manifest["inputs"][0]["bytes"] == (tmp_path / "posts.jsonl").stat().st_size
    assert "NOT protected" in err and "released 23 records" in err


def test_csv_is_released_as_csv_shards_with_its_header(tmp_path, vectors, capsys, monkeypatch):
    records = write_jsonl(tmp_path / "posts.jsonl", 12)
    with (tmp_path / "posts.csv").open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=["user", "text", "id"])
        writer.writeheader()
        writer.writerows(records)
    code, _, err = run_cli(release_args([tmp_path / "posts.csv"], tmp_path / "out", vectors, "--shard-size", "5"),
                           capsys, monkeypatch)
    assert code == 0, err
    check_manifest(tmp_path / "out")
    shards = shard_files(tmp_path / "out")
    assert [p.suffix for p in shards] == [".csv"] * 3
    assert all(p.read_text().splitlines()[0] == "user,text,id" for p in shards)
    released = released_records(tmp_path / "out")
    assert [(r["user"], r["id"]) for r in released] == [(r["user"], str(r["id"])) for r in records]
    assert [r["text"] for r in released] == expected_texts(vectors, [r["text"] for r in records])


def test_parquet_is_released_as_parquet_shards_with_its_schema(tmp_path, vectors, capsys, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = write_jsonl(tmp_path / "posts.jsonl", 11)
    table = pa.table({"id": pa.array([r["id"] for r in records], pa.int32()), "text": [r["text"] for r in records],
                      "score": [float(i) / 2 for i in range(11)]})
    pq.write_table(table, tmp_path / "posts.parquet", row_group_size=4)
    code, _, err = run_cli(release_args([tmp_path / "posts.parquet"], tmp_path / "out", vectors, "--shard-size", "4"),
                           capsys, monkeypatch)
    assert code == 0, err
    check_manifest(tmp_path / "out")
    shards = shard_files(tmp_path / "out")
    assert [p.suffix for p in shards] == [".parquet"] * 3
    assert all(pq.read_schema(p).equals(table.schema) for p in shards)
    released = released_records(tmp_path / "out")
    assert [(r["id"], r["score"]) for r in released] == [(i, i / 2) for i in range(11)]
    assert [r["text"] for r in released] == expected_texts(vectors, [r["text"] for r in records])


def test_a_folder_of_text_files_gives_jsonl_records_with_their_paths(tmp_path, vectors, capsys, monkeypatch):
    corpus = tmp_path / "corpus"
    (corpus / "b").mkdir(parents=True)
    texts = {"a.txt": "the market rallied.\r\n", "b/c.txt": "stocks fell in tokyo", "b/d.txt": "gold rose"}
    for name, text in texts.items():
        (corpus / name).write_bytes(text.encode())
    code, _, err = run_cli(release_args([corpus], tmp_path / "out", vectors, "--shard-size", "2"), capsys, monkeypatch)
    assert code == 0, err
    manifest = check_manifest(tmp_path / "out")
    assert manifest["output"]["format"] == "jsonl" and manifest["copied_fields"] == ["path"]
    released = released_records(tmp_path / "out")
    assert [r["path"] for r in released] == list(texts)
    assert [r["text"] for r in released] == expected_texts(vectors, list(texts.values()))


def test_mixed_formats_give_jsonl(tmp_path, vectors, capsys, monkeypatch):
    write_jsonl(tmp_path / "a.jsonl", 3)
    (tmp_path / "b.csv").write_text("text,who\ngold rose,ann\n", encoding="utf-8")
    code, _, err = run_cli(release_args([tmp_path / "a.jsonl", tmp_path / "b.csv"], tmp_path / "out", vectors),
                           capsys, monkeypatch)
    assert code == 0, err
    released = released_records(tmp_path / "out")
    assert [set(r) for r in released] == [{"id", "user", "text"}] * 3 + [{"text", "who"}]


# -- the same release whatever the sharding -----------------------------------------------


def test_the_release_is_the_same_for_any_shard_size(tmp_path, vectors):
    records = write_jsonl(tmp_path / "posts.jsonl", 40)
    spec = MechanismSpec("emp", {"epsilon": EPSILON}, str(vectors))
    outputs = []
    for size in (1, 7, 40, 1000):
        run_release(ReleaseJob([str(tmp_path / "posts.jsonl")], tmp_path / f"out{size}", spec, shard_size=size,
                               seed=SEED))
        outputs.append(released_records(tmp_path / f"out{size}"))
        assert len(shard_files(tmp_path / f"out{size}")) == -(-40 // size)
    assert all(output == outputs[0] for output in outputs)
    assert [r["text"] for r in outputs[0]] == expected_texts(vectors, [r["text"] for r in records])


def test_a_worker_builds_the_mechanism_once_per_job(tmp_path, vectors, monkeypatch):
    from textveil.release import shards

    builds = []
    build = shards.MechanismSpec.build
    monkeypatch.setattr(shards.MechanismSpec, "build", lambda self, log=None: builds.append(1) or build(self, log))
    write_jsonl(tmp_path / "posts.jsonl", 30)
    spec = MechanismSpec("emp", {"epsilon": 11.0}, str(vectors))  # not built by another test in this process
    outcome = run_release(ReleaseJob([str(tmp_path / "posts.jsonl")], tmp_path / "out", spec, shard_size=3))
    assert outcome.manifest["totals"]["shards"] == 10 and len(builds) == 1


def test_a_local_dask_cluster_releases_what_one_process_does(tmp_path, vectors, capsys, monkeypatch):
    """The one test with real LocalClusters: 2 worker processes (small shards finishing in any
    order), then 1; the release is the one a single process makes."""
    write_jsonl(tmp_path / "posts.jsonl", 300)
    code, _, err = run_cli(release_args([tmp_path / "posts.jsonl"], tmp_path / "alone", vectors, "--shard-size",
                                        "1000"), capsys, monkeypatch)
    assert code == 0, err
    for workers, size in (("2", "13"), ("1", "100")):
        out = tmp_path / f"dask{workers}"
        code, _, err = run_cli(release_args([tmp_path / "posts.jsonl"], out, vectors, "--shard-size", size,
                                            workers=workers), capsys, monkeypatch)
        assert code == 0, err
        assert f"local Dask cluster of {workers} worker" in err
        check_manifest(out)
        assert len(shard_files(out)) == -(-300 // int(size))
        assert concatenated(out) == concatenated(tmp_path / "alone")


# -- state, resume, refusals --------------------------------------------------------------


class Interrupt:
    """A progress callback that stops the run (as a crash would) after ``after`` records, and
    looks at the job state while it runs."""

    def __init__(self, out: Path, after: int) -> None:
        self.out, self.after, self.done, self.modes = out, after, 0, set()

    def __call__(self, done: int) -> None:
        self.done += done
        for name in (JOB_STATE, JOB_JOURNAL):
            self.modes.add(stat.S_IMODE((self.out / name).stat().st_mode))
        if self.done >= self.after:
            raise KeyboardInterrupt


def test_job_state_is_private_while_running_and_a_tampered_shard_is_released_again(tmp_path, vectors):
    write_jsonl(tmp_path / "posts.jsonl", 20)
    spec = MechanismSpec("emp", {"epsilon": EPSILON}, str(vectors))
    run_release(ReleaseJob([str(tmp_path / "posts.jsonl")], tmp_path / "whole", spec, shard_size=4, seed=SEED))
    job = ReleaseJob([str(tmp_path / "posts.jsonl")], tmp_path / "out", spec, shard_size=4, seed=SEED)
    interrupt = Interrupt(tmp_path / "out", after=12)
    with pytest.raises(KeyboardInterrupt):
        run_release(job, progress=interrupt)
    assert interrupt.modes == {0o600}
    state = json.loads((tmp_path / "out" / JOB_STATE).read_text())
    assert int(state["run_seed"]) == SEED and not (tmp_path / "out" / MANIFEST).exists()
    assert len(shard_files(tmp_path / "out")) == 3
    tampered = tmp_path / "out" / "shard-00001.jsonl"
    tampered.write_bytes(tampered.read_bytes().replace(b'"id": 5', b'"id": 55'))
    outcome = run_release(ReleaseJob([str(tmp_path / "posts.jsonl")], tmp_path / "out", spec, shard_size=4))
    assert outcome.resumed_shards == 2  # shards 0 and 2; the tampered one was released again
    assert concatenated(tmp_path / "out") == concatenated(tmp_path / "whole")
    assert not (tmp_path / "out" / JOB_STATE).exists() and not (tmp_path / "out" / JOB_JOURNAL).exists()
    check_manifest(tmp_path / "out")


def test_resuming_refuses_another_seed_and_another_job(tmp_path, vectors, capsys, monkeypatch):
    write_jsonl(tmp_path / "posts.jsonl", 10)
    spec = MechanismSpec("emp", {"epsilon": EPSILON}, str(vectors))
    with pytest.raises(KeyboardInterrupt):
        run_release(ReleaseJob([str(tmp_path / "posts.jsonl")], tmp_path / "out", spec, shard_size=2, seed=SEED),
                    progress=Interrupt(tmp_path / "out", after=2))
    args = release_args([tmp_path / "posts.jsonl"], tmp_path / "out", vectors, "--shard-size", "2")
    code, _, err = run_cli(release_args([tmp_path / "posts.jsonl"], tmp_path / "out", vectors, "--shard-size", "2",
                                        seed=5), capsys, monkeypatch)
    assert code == 2 and "--seed differs" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(release_args([tmp_path / "posts.jsonl"], tmp_path / "out", vectors, "--shard-size", "3"),
                           capsys, monkeypatch)
    assert code == 2 and "holds another release (its shard_size differ" in err
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0 and "resuming: 1 shard(s) already written" in err
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0 and "already holds this release, complete (10 records" in err
    code, _, err = run_cli([*args, "--set", "decode=approx"], capsys, monkeypatch)
    assert code == 2 and "holds another release" in err


def test_kill_and_resume_releases_every_record_exactly_once(tmp_path, vectors):
    """SIGKILL at a random moment after the first shard is written, then the same command again:
    byte-identical to an uninterrupted run, every record once, the ledger spent once per record."""
    records = write_jsonl(tmp_path / "posts.jsonl", 4000)
    command = [sys.executable, "-m", "textveil.cli"]
    ledger = ["--ledger", str(tmp_path / "budget.sqlite"), "--subject-field", "user"]

    def args(out: Path) -> list[str]:
        return [*command, *release_args([tmp_path / "posts.jsonl"], out, vectors, "--shard-size", "50"), *ledger]

    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    whole = run_guarded(args(tmp_path / "whole"), "the uninterrupted release", cwd=REPO_ROOT, env=environment,
                        capture_output=True)
    assert whole.returncode == 0, whole.stderr.decode()
    killed = subprocess.Popen(args(tmp_path / "out"), cwd=REPO_ROOT, env=environment, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    wait_until(lambda: list((tmp_path / "out").glob("shard-*")) or killed.poll() is not None,
               "the release's first shard", poll_s=0.01)
    time.sleep(random.uniform(0.0, 0.4))  # a random moment, well before the last of its 80 shards
    killed.send_signal(signal.SIGKILL)
    wait_guarded(killed, "the killed release")
    written = len(shard_files(tmp_path / "out"))
    assert killed.returncode == -signal.SIGKILL and 1 <= written < 80, written
    resumed = run_guarded(args(tmp_path / "out"), "the resumed release", cwd=REPO_ROOT, env=environment,
                          capture_output=True)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert b"resuming" in resumed.stderr
    assert concatenated(tmp_path / "out") == concatenated(tmp_path / "whole")
    assert [r["id"] for r in released_records(tmp_path / "out")] == list(range(len(records)))
    check_manifest(tmp_path / "out")
    # Two jobs (whole, killed + resumed) spent from one ledger: each exactly once per record.
    book = BudgetLedger(tmp_path / "budget.sqlite")
    per_user = {f"u{i}": sum(1 for r in records if r["user"] == f"u{i}") for i in range(5)}
    assert {user: book.spent(user) for user in per_user} == {u: 2 * n * EPSILON for u, n in per_user.items()}
    assert len({s["request_id"] for s in book.spends()}) == 2 * 80


def test_a_cap_refuses_before_any_shard_is_written(tmp_path, vectors, capsys, monkeypatch):
    write_jsonl(tmp_path / "posts.jsonl", 30)
    ledger = BudgetLedger(tmp_path / "budget.sqlite")
    ledger.set_cap(5 * EPSILON)  # each of the five users has six records
    code, _, err = run_cli([*release_args([tmp_path / "posts.jsonl"], tmp_path / "out", vectors, "--shard-size", "2"),
                            "--ledger", str(tmp_path / "budget.sqlite"), "--subject-field", "user"], capsys, monkeypatch)
    assert code == 2 and "cap of 50" in err and len(err.strip().splitlines()) == 1
    assert shard_files(tmp_path / "out") == [] and ledger.spends() == []


# -- bad input: one line each -------------------------------------------------------------


@pytest.mark.parametrize("case, expected", [
    ("missing", "does not exist"),
    ("bad_json", "line 2 is not valid JSON"),
    ("no_text", "record at line 1 has no field 'text'"),
    ("mechanism", "unknown mechanism"),
    ("corpus_level", "textveil pivot encode"),
    ("inside", "is inside the input folder"),
    ("not_empty", "is not empty"),
    ("stdin", "not standard input"),
    ("workers", "--workers must be 0"),
    ("scheduler", "cannot reach the Dask scheduler"),
    ("ledger_subject", "--ledger needs exactly one of"),
    ("no_epsilon", "states no epsilon"),
    ("no_record", "hold no record to release"),
    ("pseudonyms_without_key", "needs --pseudonym-key FILE"),
])
def test_bad_input_is_one_line(tmp_path, vectors, capsys, monkeypatch, case, expected):
    from textveil.release import cluster

    monkeypatch.setattr(cluster, "SCHEDULER_TIMEOUT_S", 0.5)
    posts = tmp_path / "posts.jsonl"
    write_jsonl(posts, 3)
    out = tmp_path / "out"
    args = release_args([posts], out, vectors)
    if case == "missing":
        args[1] = str(tmp_path / "nothing.jsonl")
    elif case == "bad_json":
        posts.write_text('{"text": "gold"}\n{"text": \n')
    elif case == "no_text":
        posts.write_text('{"body": "gold"}\n')
    elif case == "mechanism":
        args[args.index("emp")] = "nonesuch"
    elif case == "corpus_level":
        args[args.index("emp")] = "pivot"
    elif case == "inside":
        args[1], args[args.index(str(out))] = str(tmp_path), str(tmp_path / "released")
    elif case == "not_empty":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    elif case == "stdin":
        args[1] = "-"
    elif case == "workers":
        args = release_args([posts], out, vectors, workers="-1")
    elif case == "scheduler":
        args = [*args[:args.index("--workers")], "--scheduler", "tcp://127.0.0.1:9"]
    elif case == "ledger_subject":
        args += ["--ledger", str(tmp_path / "budget.sqlite")]
    elif case == "no_record":
        posts.write_text("")
    elif case == "pseudonyms_without_key":
        args += ["--entities", "pseudonym"]
    elif case == "no_epsilon":
        args = ["release", str(posts), "--out", str(out), "-m", "redact", "--workers", "0", "--ledger",
                str(tmp_path / "budget.sqlite"), "--subject", "ann"]
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and expected in err, err
    # One error line, the last (a record found bad mid-stream follows the line saying the job started).
    lines = err.strip().splitlines()
    assert lines[-1].startswith("textveil: error: ") and sum("error" in line for line in lines) == 1, err
    assert "Traceback" not in err
    assert not list(out.glob("shard-*")) if out.is_dir() else True


def test_the_library_refuses_a_job_with_pseudonyms_but_no_key_file(tmp_path):
    """A job's shards run on many workers, and a resumed run in another process: each drawing a key
    of its own would give one entity several pseudonyms. The release spec refuses it, so a job
    started from the library is refused as the command line is."""
    from textveil.errors import InvalidParameterError

    write_jsonl(tmp_path / "posts.jsonl", 3)
    with pytest.raises(InvalidParameterError, match="--pseudonym-key FILE"):
        run_release(ReleaseJob([str(tmp_path / "posts.jsonl")], tmp_path / "out",
                               MechanismSpec("redact", entities={"operator": "pseudonym"})))
    assert not (tmp_path / "out").exists()
    key = tmp_path / "key"
    key.write_text("a key the workers share")
    keyed = MechanismSpec("redact", entities={"operator": "pseudonym", "key_file": str(key)})
    assert keyed.entity_options().key is not None  # every worker reads the one key from its file


# -- a language model's paraphrase (the tiny random model) ---------------------------------


LM_TEXTS = ["The market rallied on Friday.", "I went to the zoo with my sister.", "Oil prices fell in London.",
            "The report is due next week.", "We knit a scarf with soft wool.", "Growth and more growth.",
            "The bank said so.", "Sorry for the delay, the zoo was shut."]


def write_lm_posts(path: Path) -> list[dict]:
    records = [{"id": i, "user": f"u{i % 3}", "text": text} for i, text in enumerate(LM_TEXTS)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return records


def lm_spec(folder: Path) -> MechanismSpec:
    return MechanismSpec("paraphrase", {"epsilon": 2.0, "max_new_tokens": 6, "model": str(folder)})


def test_a_paraphrase_release_is_the_same_whatever_the_shards(tmp_path, tiny_lm_folder):
    """Each record decoded with its own seed, in batches that differ with the shard size (1, 3 or
    all 8 at once): the same bytes, and the library's sanitize_records."""
    from textveil.mechanisms.paraphrase import Paraphrase

    records = write_lm_posts(tmp_path / "posts.jsonl")
    outputs = []
    for size in (1, 3, 8):
        run_release(ReleaseJob([str(tmp_path / "posts.jsonl")], tmp_path / f"out{size}", lm_spec(tiny_lm_folder),
                               shard_size=size, seed=SEED))
        outputs.append(concatenated(tmp_path / f"out{size}"))
    assert outputs[0] == outputs[1] == outputs[2]
    library = Paraphrase(2.0, max_new_tokens=6, model=str(tiny_lm_folder)).sanitize_records(
        LM_TEXTS, record_seeds(SEED, 0, len(LM_TEXTS)))
    released = released_records(tmp_path / "out3")
    assert [r["text"] for r in released] == [r.text for r in library]
    assert [(r["id"], r["user"]) for r in released] == [(r["id"], r["user"]) for r in records]
    manifest = check_manifest(tmp_path / "out3")
    summary = manifest["summary"]
    assert manifest["mechanism"] == "paraphrase" and summary["kind"] == "dp" and summary["tokens_per_unit"] == 6
    assert summary["unprotected"][0].startswith("nothing copied from the input")
    assert summary["exceptions"] == {} and summary["totals"]["words_protected"] == 6 * summary["totals"]["units_rewritten"]
    assert summary["documents"] == len(LM_TEXTS)


def test_a_paraphrase_release_on_two_dask_workers_is_the_one_process_release(tmp_path, tiny_lm_folder, capsys,
                                                                                monkeypatch):
    """``--model FOLDER`` (a language model, not a trained mechanism) on a local Dask cluster of 2
    workers, each loading the model itself: the release of one process, byte for byte."""
    write_lm_posts(tmp_path / "posts.jsonl")
    args = ["release", str(tmp_path / "posts.jsonl"), "-m", "paraphrase", "-e", "2", "--model", str(tiny_lm_folder),
            "--set", "max_new_tokens=6", "--seed", str(SEED), "--shard-size", "3"]
    code, _, err = run_cli([*args, "--out", str(tmp_path / "alone"), "--workers", "0"], capsys, monkeypatch)
    assert code == 0, err
    assert "nothing copied from the input" in err and "the number of tokens" not in err
    code, _, err = run_cli([*args, "--out", str(tmp_path / "dask"), "--workers", "2"], capsys, monkeypatch)
    assert code == 0, err
    assert "local Dask cluster of 2 worker" in err
    manifest = check_manifest(tmp_path / "dask")
    assert manifest["parameters"]["model"] == str(tiny_lm_folder.resolve())
    assert concatenated(tmp_path / "dask") == concatenated(tmp_path / "alone")
