"""A release job: a corpus of any size released into shards, with a manifest, resumable.

The coordinator (this module, in the process that runs ``textveil release``) streams the input
(:mod:`textveil.release.records`), cuts it into shards of ``shard_size`` records (shard ``n``
holds the records at positions ``[n * S, (n + 1) * S)``), hands them to a runner
(:mod:`textveil.release.cluster`: in-process or Dask) and writes each released shard as it
comes back, atomically, in any order. Record ``i`` is released with the seed
``record_seed(run_seed, i)``, so the output is the same whatever the shard size, the number of
workers or where a run was interrupted.

What ``--out DIR`` holds:

- ``shard-00000.jsonl`` ... (or ``.csv`` / ``.parquet``): each written whole or not at all
  (temporary file, then rename);
- ``manifest.json``, written at the end: the mechanism, its public parameters and fingerprint,
  the summary of the releases (:mod:`textveil.release.summary`: the Guarantee in general words,
  what the release leaves unprotected, every total), the inputs, and per shard its record and
  word counts and sha256. Never the run seed: with it anyone could recompute the noise;
- while the job runs, its state: ``.textveil-job.json`` (mode 0600: the job's fingerprint and
  the run seed a resumed run needs) and ``.textveil-job.shards`` (one line per shard written,
  with its checksum). Both are deleted when the job completes.

A run that was killed resumes from the job state: a shard whose file exists with the checksum
the state recorded is done, anything else is released again (identically: same seeds). With a
budget ledger, the coordinator alone records each shard's spends, under the request id
``<job id>:shard:<n>``, before the shard is released and written: a crash between leaves a spend
without its shard, never a shard without its spend, and the resumed run replays the request
without spending twice.

>>> import tempfile, pathlib
>>> from textveil.release.shards import MechanismSpec
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "mail.jsonl").write_text('{"id": 1, "text": "write to a@b.org"}\\n{"id": 2, "text": "hi"}\\n')
>>> job = ReleaseJob([str(folder / "mail.jsonl")], folder / "out", MechanismSpec("redact", entities={"operator": "off"}),
...                  shard_size=1)
>>> outcome = run_release(job)
>>> [shard["file"] for shard in outcome.manifest["shards"]], outcome.manifest["totals"]["records"]
(['shard-00000.jsonl', 'shard-00001.jsonl'], 2)
>>> (folder / "out" / "shard-00000.jsonl").read_text()
'{"id": 1, "text": "write to [EMAIL]"}\\n'
>>> sorted(p.name for p in (folder / "out").iterdir())
['manifest.json', 'shard-00000.jsonl', 'shard-00001.jsonl']
>>> run_release(job).already_complete
True
"""

from __future__ import annotations

import dataclasses
import datetime
import fcntl
import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textveil.atomic_files import atomic_write_bytes
from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.base import Mechanism, ProgressCallback
from textveil.release.cluster import Runner, open_runner
from textveil.release.records import (
    Record,
    ShardFormat,
    check_records,
    choose_shard_format,
    iter_records,
    release_inputs,
)
from textveil.release.seeds import new_run_seed
from textveil.release.shards import MechanismSpec, ShardResult, mechanism_for, release_shard
from textveil.release.summary import ReleaseSummary

DEFAULT_SHARD_SIZE = 10_000
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "textveil.release/2"
"""Version 2: the releases' summary (``summary``) in place of ``guarantee``, ``released`` and ``warnings``."""
JOB_STATE = ".textveil-job.json"
JOB_JOURNAL = ".textveil-job.shards"
STATE_FORMAT = "textveil.release-job/1"
SEEDS_NOTE = ("record i is released with a seed derived from the run's seed and i (textveil.release.seeds); the run "
              "seed is stored nowhere here: with it, anyone could recompute the noise")
COPIED_NOTE = "copied from the input into the release unchanged: NOT protected by the guarantee"


@dataclass
class LedgerPlan:
    """What a job spends from: the budget ledger, the dataset, and each record's subject (one
    ``subject`` for every record, or the record's ``subject_field``)."""

    ledger: Any  # a textveil.privacy.ledger.BudgetLedger
    dataset: str
    subject: str | None = None
    subject_field: str | None = None

    def subject_of(self, record: Record) -> str:
        from textveil.release.budgeted import record_subject

        if self.subject is not None:
            return self.subject
        assert self.subject_field is not None
        return record_subject(record.fields, self.subject_field, record.display)

    def describe(self) -> dict[str, Any]:
        return {"ledger": str(Path(self.ledger.path).resolve()), "dataset": self.dataset, "subject": self.subject,
                "subject_field": self.subject_field}


@dataclass
class ReleaseJob:
    """What to release (``inputs``: files and folders), where (``out``), with what (``spec``),
    how the input is read, the shard size, the run's seed (None: drawn, or the interrupted
    run's) and the budget ledger to spend from."""

    inputs: list[str]
    out: Path
    spec: MechanismSpec
    text_field: str = "text"
    encoding: str = "utf-8"
    input_format: str = "auto"
    shard_size: int = DEFAULT_SHARD_SIZE
    seed: int | None = None
    budget: LedgerPlan | None = None

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.shard_size < 1:
            raise InvalidParameterError(f"--shard-size must be a positive number of records, got {self.shard_size}")
        if self.seed is not None and self.seed < 0:
            raise InvalidParameterError(f"--seed must be a non-negative integer, got {self.seed}")


@dataclass
class ReleaseOutcome:
    """What a run did: the job's manifest, whether the job was complete before this run, how
    many shards an interrupted run had written, where the shards ran, the subjects spent from."""

    manifest: dict[str, Any]
    already_complete: bool = False
    resumed_shards: int = 0
    ran: str = ""
    subjects: list[str] = field(default_factory=list)


def run_release(job: ReleaseJob, runner: Callable[[], AbstractContextManager[Runner]] = lambda: open_runner(0), *,
                progress: ProgressCallback | None = None, log: Callable[[str], None] | None = None,
                on_start: Callable[[str, int], None] | None = None) -> ReleaseOutcome:
    """Run (or resume, or find complete) ``job``. ``runner`` opens where the shards run (it is
    opened only when there is work); ``progress(n)`` is told as n more records are done;
    ``on_start(where, shards_done)`` once the job state is open."""
    files = release_inputs(job.inputs, job.input_format)
    if next(iter_records(files, job.text_field, job.encoding), None) is None:  # before loading anything
        raise InputError(f"the inputs ({', '.join(job.inputs)}) hold no record to release; give files that hold "
                         "some records or text")
    _shared_mode()
    check_out_folder(job.out, job.inputs)
    mechanism = mechanism_for(job.spec, log)  # built here once too: its fingerprint, its spends, an early error
    if mechanism.corpus_level:
        raise InvalidParameterError(f"{mechanism.name} releases a whole corpus at once, not record by record; use "
                                    f"'{mechanism.release_command or 'textveil ' + mechanism.name}'")
    if job.budget is not None:
        from textveil.release.budgeted import planned_spends

        planned_spends(mechanism, ["check"], job.budget.dataset, [""])  # a mechanism without epsilon: one line, now
    shard_format = choose_shard_format(files, job.text_field, job.encoding)
    check_records(files, job.text_field, job.encoding)  # a malformed record: refused before anything is written
    fingerprint = job_fingerprint(job, files, mechanism, shard_format)
    job.out.mkdir(parents=True, exist_ok=True)
    with _locked(job.out):
        _remove_partial_files(job.out)  # first: a run killed writing its state leaves only such a file
        state = open_job(job.out, fingerprint, job.seed)
        if state is None:
            return ReleaseOutcome(_read_json(job.out / MANIFEST) or {}, already_complete=True)
        done = state.verified_shards(shard_format.suffix)
        coordinator = _Coordinator(job, files, mechanism, shard_format, state, done, progress)
        subjects = coordinator.check_budget() if job.budget is not None else []
        with runner() as running:
            if on_start is not None:
                on_start(running.description, len(done))
            running.run(release_shard, (job.spec, shard_format, state.run_seed), coordinator.tasks(),
                        coordinator.write)
        manifest = coordinator.manifest()
        atomic_write_bytes(job.out / MANIFEST, (json.dumps(manifest, indent=2, default=str) + "\n").encode(),
                           mode=_shared_mode())
        state.remove()  # last: a crash before it leaves a job that resumes into "complete"
    return ReleaseOutcome(manifest, resumed_shards=len(done), ran=running.description, subjects=subjects)


# -- the coordinator ----------------------------------------------------------------------


class _Coordinator:
    """Streams the shards to the runner and writes what comes back; keeps the job's books."""

    def __init__(self, job: ReleaseJob, files: list, mechanism: Mechanism, shard_format: ShardFormat,
                 state: JobState, done: dict[int, dict[str, Any]], progress: ProgressCallback | None) -> None:
        self.job, self.files, self.mechanism, self.format, self.state = job, files, mechanism, shard_format, state
        self.done = dict(done)
        self.progress = progress
        self.copied: set[str] = set()
        self.shards = 0

    def _shards(self) -> Iterator[tuple[int, int, list[Record]]]:
        """``(index, first position, records)`` of every shard, read from the input as needed."""
        size = self.job.shard_size
        batch: list[Record] = []
        index = 0
        for record in iter_records(self.files, self.job.text_field, self.job.encoding):
            batch.append(record)
            if len(batch) == size:
                yield index, index * size, batch
                index, batch = index + 1, []
        if batch:
            yield index, index * size, batch

    def check_budget(self) -> list[str]:
        """Before any shard is released: every subject's spend for the shards not yet recorded
        (an interrupted run's are in the ledger already), checked against its cap; the subjects."""
        from textveil.release.budgeted import planned_spends

        budget = self.job.budget
        assert budget is not None
        everyone: set[str] = set()
        todo: dict[str, Any] = {}  # subject -> its spends summed over the shards not yet recorded
        for index, _, batch in self._shards():
            subjects = [budget.subject_of(record) for record in batch]
            everyone.update(subjects)
            if budget.ledger.replay(self.request_id(index)) is None:
                texts = [record.fields[self.job.text_field] for record in batch]
                for spend in planned_spends(self.mechanism, subjects, budget.dataset, texts):
                    known = todo.get(spend.subject)
                    todo[spend.subject] = spend if known is None else \
                        dataclasses.replace(known, amount=known.amount + spend.amount)
        budget.ledger.check(list(todo.values()))
        return sorted(everyone)

    def request_id(self, index: int) -> str:
        return f"{self.state.job_id}:shard:{index}"

    def tasks(self) -> Iterator[tuple[int, int, list[dict[str, Any]]]]:
        """The tasks of the shards still to release; done ones only advance the progress."""
        text_field = self.job.text_field
        for index, first, batch in self._shards():
            self.shards = index + 1
            for record in batch:
                self.copied.update(name for name in record.fields if name != text_field)
            if index in self.done:
                if self.progress is not None:
                    self.progress(len(batch))
                continue
            if self.job.budget is not None:
                self._spend(index, first, batch)
            yield index, first, [record.fields for record in batch]

    def _spend(self, index: int, first: int, batch: list[Record]) -> None:
        """Record the shard's spends in the ledger before it is released (a replay spends nothing)."""
        from textveil.release.budgeted import planned_spends, request_digest

        budget = self.job.budget
        assert budget is not None
        subjects = [budget.subject_of(record) for record in batch]
        texts = [record.fields[self.job.text_field] for record in batch]
        budget.ledger.record(
            planned_spends(self.mechanism, subjects, budget.dataset, texts), request_id=self.request_id(index),
            response={"job": self.state.job_id, "shard": index, "first": first, "records": len(batch)},
            digest=request_digest(self.mechanism, texts, subjects, budget.dataset))

    def write(self, result: ShardResult) -> None:
        """A released shard: written whole, then entered in the job state (its checksum)."""
        name = shard_name(result.index, self.format.suffix)
        atomic_write_bytes(self.job.out / name, result.data, mode=_shared_mode())
        entry = result.entry(name)
        self.state.append_shard(entry)
        self.done[result.index] = entry
        if self.progress is not None:
            self.progress(result.records)

    def manifest(self) -> dict[str, Any]:
        missing = [index for index in range(self.shards) if index not in self.done]
        if missing:  # pragma: no cover - every task's result is written before the runner returns
            raise RuntimeError(f"shards {missing[:5]} were not written")
        shards = [self.done[index] for index in range(self.shards)]
        totals: dict[str, Any] = {"records": 0, "words": 0, "shards": len(shards), "bytes": 0}
        summary = ReleaseSummary(entity_stage=self.job.spec.to_dict()["entities"])
        for shard in shards:
            for key in ("records", "words", "bytes"):
                totals[key] += shard[key]
            summary = summary.combine(ReleaseSummary.from_dict(shard["stats"]))
        job = self.job
        return {
            "format": MANIFEST_FORMAT, "state": "complete", "textveil_version": _version(),
            "job": self.state.job_id, "job_fingerprint": self.state.digest, "created": self.state.created,
            "completed": _now(), "mechanism": self.mechanism.name,
            "parameters": {k: v for k, v in self.mechanism.public_params().items() if k != "seed"},
            "fingerprint": self.mechanism.fingerprint(),
            **({"then": list(job.spec.then)} if job.spec.then else {}),  # what rewrote each release after it
            "seeds": SEEDS_NOTE,
            "inputs": [{"path": str(f.path), "format": f.fmt, "bytes": f.path.stat().st_size} for f in self.files],
            "output": self.format.describe(), "copied_fields": sorted(self.copied), "copied_fields_note": COPIED_NOTE,
            "shard_size": job.shard_size,
            "shards": [{k: v for k, v in shard.items() if k not in ("index", "stats")} for shard in shards],
            "totals": totals, "summary": summary.to_dict(),
            "ledger": None if job.budget is None else {
                "dataset": job.budget.dataset, "subject": job.budget.subject,
                "subject_field": job.budget.subject_field, "request_ids": f"{self.state.job_id}:shard:<n>"},
        }


def shard_name(index: int, suffix: str) -> str:
    """The file of shard ``index``.

    >>> shard_name(3, ".jsonl")
    'shard-00003.jsonl'
    """
    return f"shard-{index:05d}{suffix}"


# -- the job's identity and state ---------------------------------------------------------


def job_fingerprint(job: ReleaseJob, files: list, mechanism: Mechanism, shard_format: ShardFormat) -> dict[str, Any]:
    """Everything the job's output depends on besides the run seed, as shown data: the input
    files (resolved paths, sizes, modification times), how they are read, the mechanism (its
    public fingerprint and how it is built), the shard size and format, and the ledger. A
    resumed run must have the same."""
    inputs = []
    for source in files:
        stat = source.path.stat()
        inputs.append({"path": str(source.path.resolve()), "format": source.fmt, "bytes": stat.st_size,
                       "mtime_ns": stat.st_mtime_ns})
    fingerprint = {
        "format": STATE_FORMAT, "textveil_version": _version(), "inputs": inputs,
        "reading": {"text_field": job.text_field, "encoding": job.encoding, "input_format": job.input_format},
        "mechanism": mechanism.fingerprint(), "build": job.spec.to_dict(), "shard_size": job.shard_size,
        "output": shard_format.describe(), "ledger": None if job.budget is None else job.budget.describe(),
    }
    return json.loads(json.dumps(fingerprint, default=str))  # as it reads back from the state file


def fingerprint_digest(fingerprint: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()


@dataclass
class JobState:
    """A running job's state in its ``--out`` folder: its id, fingerprint and run seed (the
    state file, 0600) and the shards written so far (the journal, one line per shard)."""

    folder: Path
    job_id: str
    run_seed: int
    fingerprint: dict[str, Any]
    created: str

    @property
    def digest(self) -> str:
        return fingerprint_digest(self.fingerprint)

    def save(self) -> None:
        data = {"format": STATE_FORMAT, "job": self.job_id, "run_seed": str(self.run_seed), "created": self.created,
                "fingerprint": self.fingerprint}
        atomic_write_bytes(self.folder / JOB_STATE, json.dumps(data, indent=1).encode(), mode=0o600)

    @classmethod
    def load(cls, folder: Path) -> JobState:
        data = _read_json(folder / JOB_STATE)
        try:
            assert data is not None and data["format"] == STATE_FORMAT
            return cls(folder, str(data["job"]), int(data["run_seed"]), dict(data["fingerprint"]),
                       str(data["created"]))
        except (AssertionError, KeyError, TypeError, ValueError):
            raise InputError(f"--out '{folder}' holds a release job state ({JOB_STATE}) that cannot be read; delete "
                             "the folder to start the release again") from None

    def append_shard(self, entry: dict[str, Any]) -> None:
        """Enter a written shard. One short line appended and synced: a crash mid-append leaves a
        torn last line, which :meth:`shards` skips (that shard is then released again)."""
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        handle = os.open(self.folder / JOB_JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(handle, line)
            os.fsync(handle)
        finally:
            os.close(handle)

    def shards(self) -> dict[int, dict[str, Any]]:
        """The shards the journal says were written (the last entry of a shard written twice)."""
        entries: dict[int, dict[str, Any]] = {}
        try:
            lines = (self.folder / JOB_JOURNAL).read_bytes().splitlines()
        except FileNotFoundError:
            return entries
        for line in lines:
            try:
                entry = json.loads(line)
                entries[int(entry["index"])] = entry
            except (ValueError, KeyError, TypeError):
                continue  # a torn line
        return entries

    def verified_shards(self, suffix: str) -> dict[int, dict[str, Any]]:
        """The shards that are done: entered in the journal, their file there with that checksum,
        and their summary one this textveil reads (a shard an older one entered is released again:
        the same bytes, its summary anew)."""
        verified = {}
        for index, entry in self.shards().items():
            path = self.folder / shard_name(index, suffix)
            if entry.get("file") == path.name and path.is_file() and _sha256(path) == entry.get("sha256") \
                    and _readable_summary(entry.get("stats")):
                verified[index] = entry
        return verified

    def remove(self) -> None:
        (self.folder / JOB_JOURNAL).unlink(missing_ok=True)
        (self.folder / JOB_STATE).unlink(missing_ok=True)


def open_job(out: Path, fingerprint: dict[str, Any], seed: int | None) -> JobState | None:
    """The job state in ``out``: an interrupted run's (same fingerprint, same seed if one is
    given), or a new one in an empty folder; None when ``out`` holds this job complete. Another
    job's state or manifest, or other files, are refused with one line."""
    digest = fingerprint_digest(fingerprint)
    if (out / JOB_STATE).exists():
        state = JobState.load(out)
        if state.digest != digest:
            differ = sorted(k for k in set(state.fingerprint) | set(fingerprint)
                            if state.fingerprint.get(k) != fingerprint.get(k))
            raise InputError(f"--out '{out}' holds another release (its {', '.join(differ)} differ from this "
                             "command's); choose an empty folder, or rerun the command that started it to resume it")
        if seed is not None and seed != state.run_seed:
            raise InputError(f"--seed differs from the seed of the interrupted release in --out '{out}'; resume it with "
                             "the same --seed, or leave --seed out to resume with the one it stored")
        return state
    if (out / MANIFEST).exists():
        manifest = _read_json(out / MANIFEST) or {}
        if manifest.get("state") == "complete" and manifest.get("job_fingerprint") == digest:
            return None
        raise InputError(f"--out '{out}' holds another release (its {MANIFEST} is of other inputs or options); "
                         "choose an empty folder or move that release away")
    present = sorted(p.name for p in out.iterdir())
    if present:
        raise InputError(f"--out '{out}' is not empty (it holds {len(present)} entries, e.g. '{present[0]}'); choose "
                         "an empty or new folder for the release")
    state = JobState(out, os.urandom(8).hex(), new_run_seed() if seed is None else seed, fingerprint, _now())
    state.save()
    return state


def check_out_folder(out: Path, inputs: list[str]) -> None:
    """``--out`` must be a folder (or new) and outside every input folder: a job never writes
    into its input.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> check_out_folder(folder / "released", [str(folder)])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    textveil.errors.InputError: --out '...released' is inside the input folder '...'; write the release outside its input
    """
    if out.exists() and not out.is_dir():
        raise InputError(f"--out '{out}' is a file; give a folder for the shards and the manifest")
    target = out.resolve()
    for item in inputs:
        given = Path(item).resolve()
        if given.is_dir() and (target == given or given in target.parents):
            raise InputError(f"--out '{out}' is inside the input folder '{item}'; write the release outside its input")
        if target == given:
            raise InputError(f"--out '{out}' is an input file; give a new folder for the release")


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One run at a time in a folder (a lock on the folder itself, released if the process dies)."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"another textveil release is writing into --out '{folder}' now; wait for it to finish "
                             "or choose another folder") from None
        yield
    finally:
        os.close(handle)


def _remove_partial_files(folder: Path) -> None:
    """Temporary files a killed run left (``.shard-00003.jsonl.xxxx.part``): never whole, never used."""
    ours = ("shard-", JOB_STATE, MANIFEST)
    for path in folder.iterdir():
        name = path.name
        if name.startswith(".") and name.endswith(".part") and any(name[1:].startswith(o.lstrip(".")) for o in ours):
            path.unlink(missing_ok=True)


@functools.lru_cache(maxsize=1)
def _shared_mode() -> int:
    """The mode of a shard or the manifest: a release is meant to be shared, so the user's umask
    decides (0644 under the usual 022), not the temporary file's 0600. Read once, before any
    thread starts (reading the umask sets it for a moment)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _readable_summary(stats: Any) -> bool:
    try:
        ReleaseSummary.from_dict(stats)
    except (TypeError, ValueError):
        return False
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _version() -> str:
    from textveil.version import __version__

    return __version__
