"""The privacy budget ledger: what every release spent, per subject and dataset,
durable in SQLite (write-ahead log), with caps.

Sequential composition: two releases of one subject at epsilon 10 are a release at epsilon 20,
so each release *spends* its Guarantee's epsilon (per unit, in the unit the Guarantee states:
``"metric epsilon per token"``, ``"dp epsilon per token"``) from the subject's budget. A
subject is what the user chooses to protect: a document id, or an author id (then every text
of the author spends from one budget, which is conservative for texts that differ).

How a release keeps its books (:func:`textveil.release.budgeted.release_with_budget`):

1. :meth:`BudgetLedger.check` refuses a spend past the cap *before* any randomness touches
   the text;
2. the mechanism releases;
3. :meth:`BudgetLedger.record` writes the spends and the release in **one transaction**, after
   checking the cap again (another process may have spent meanwhile; then the release is
   discarded, never shown). A crash before the commit leaves neither; after it, both. A
   ``request_id`` makes a request idempotent: recorded once, its release is returned again to
   a client that retries after a crash, and nothing is spent twice.

Several processes may share one ledger file: each transaction takes SQLite's write lock
(``BEGIN IMMEDIATE``) before it reads the totals it checks.

>>> import tempfile, pathlib
>>> ledger = BudgetLedger(pathlib.Path(tempfile.mkdtemp()) / "budget.sqlite")
>>> ledger.set_cap(15.0)
>>> ledger.record([Spend("doc-1", 10.0, "metric epsilon per token", "emp")]).replayed
False
>>> ledger.check([Spend("doc-1", 10.0, "metric epsilon per token", "emp")])
Traceback (most recent call last):
...
textveil.privacy.ledger.BudgetExceeded: subject 'doc-1' (dataset 'default') has spent 10 metric epsilon per token of its cap of 15; this release would spend 10 more: raise the cap with 'textveil budget set-cap' or release less
>>> ledger.remaining("doc-1")
5.0
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textveil.errors import InputError, InvalidParameterError

SCHEMA_VERSION = 1
DEFAULT_DATASET = "default"
EVERY = "*"
"""The subject (or dataset) of a cap that applies to every subject (or dataset) without one of its own."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS caps (
    dataset TEXT NOT NULL, subject TEXT NOT NULL, cap REAL NOT NULL, PRIMARY KEY (dataset, subject));
CREATE TABLE IF NOT EXISTS requests (
    request_id TEXT PRIMARY KEY, created REAL NOT NULL, response TEXT NOT NULL, digest TEXT);
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT, dataset TEXT NOT NULL, subject TEXT NOT NULL, amount REAL NOT NULL,
    unit TEXT NOT NULL, mechanism TEXT NOT NULL, request_id TEXT, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS spends_by_subject ON spends (dataset, subject);
"""


class BudgetExceeded(InputError):
    """A spend that would take a subject past its cap; nothing was spent."""


class RequestConflict(InputError):
    """A request id recorded before with another request: nothing was released or spent."""


@dataclass(frozen=True)
class Spend:
    """What one release spends from one subject's budget."""

    subject: str
    amount: float
    unit: str
    mechanism: str
    dataset: str = DEFAULT_DATASET

    def __post_init__(self) -> None:
        if not isinstance(self.subject, str) or not self.subject.strip() or self.subject == EVERY:
            raise InvalidParameterError(f"a subject must be a non-empty id other than '{EVERY}', got {self.subject!r}")
        if not isinstance(self.dataset, str) or not self.dataset.strip() or self.dataset == EVERY:
            raise InvalidParameterError(f"a dataset must be a non-empty name other than '{EVERY}', got {self.dataset!r}")
        if not isinstance(self.amount, (int, float)) or not math.isfinite(self.amount) or self.amount < 0:
            raise InvalidParameterError(f"a spend must be a finite epsilon >= 0, got {self.amount!r}")


@dataclass(frozen=True)
class Recorded:
    """What :meth:`BudgetLedger.record` did: spent now, or found the request already recorded
    (``replayed``: then ``response`` is what was stored with it, and nothing was spent again)."""

    replayed: bool
    response: Any = None


class BudgetLedger:
    """A ledger file (SQLite, WAL). Opening creates it; a file that is not a ledger is refused."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        if self.path.exists() and self.path.is_dir():
            raise InputError(f"ledger '{self.path}' is a folder; give a file path for the ledger (e.g. budget.sqlite)")
        if not self.path.parent.is_dir():
            raise InputError(f"ledger '{self.path}': the folder {self.path.parent} does not exist; create it first")
        self._timeout = timeout
        try:
            with self._connection() as connection:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.executescript(_SCHEMA)
                connection.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
                version = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0]
        except sqlite3.DatabaseError as error:
            raise InputError(f"'{self.path}' is not a textveil budget ledger ({error}); give another --ledger path") \
                from None
        if version != str(SCHEMA_VERSION):
            raise InputError(f"ledger '{self.path}' has schema {version}; this textveil reads schema {SCHEMA_VERSION}")

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        # One connection per operation: safe across threads and processes, and a crash loses at
        # most the transaction in flight. FULL synchronous: a committed spend survives power loss.
        connection = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        try:
            connection.execute("PRAGMA synchronous=FULL")
            yield connection
        finally:
            connection.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connection() as connection:
            connection.execute("BEGIN IMMEDIATE")  # the write lock first: the totals read below cannot move
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    # -- caps ---------------------------------------------------------------------------

    def set_cap(self, cap: float | None, subject: str | None = None, dataset: str | None = None) -> None:
        """Cap a subject's spend (``subject=None``: every subject without a cap of its own);
        ``cap=None`` removes the cap."""
        if cap is not None and (not isinstance(cap, (int, float)) or not math.isfinite(cap) or cap < 0):
            raise InvalidParameterError(f"a cap must be a finite epsilon >= 0, got {cap!r}")
        key = (dataset or EVERY, subject or EVERY)
        with self._transaction() as connection:
            if cap is None:
                connection.execute("DELETE FROM caps WHERE dataset = ? AND subject = ?", key)
            else:
                connection.execute("INSERT OR REPLACE INTO caps VALUES (?, ?, ?)", (*key, float(cap)))

    def cap(self, subject: str, dataset: str = DEFAULT_DATASET) -> float | None:
        """The cap that applies to a subject: its own, else its dataset's default, else the default."""
        with self._connection() as connection:
            return _cap(connection, dataset, subject)

    # -- spending -----------------------------------------------------------------------

    def spent(self, subject: str, dataset: str = DEFAULT_DATASET) -> float:
        with self._connection() as connection:
            return _spent(connection, dataset, subject)

    def remaining(self, subject: str, dataset: str = DEFAULT_DATASET) -> float | None:
        """What is left under the subject's cap (None: no cap)."""
        with self._connection() as connection:
            cap = _cap(connection, dataset, subject)
            return None if cap is None else max(0.0, cap - _spent(connection, dataset, subject))

    def check(self, spends: Sequence[Spend]) -> None:
        """Raise :class:`BudgetExceeded` if any subject would go past its cap (spends of one
        subject are summed). Call it before releasing; :meth:`record` checks again."""
        with self._connection() as connection:
            _check(connection, spends)

    def record(self, spends: Sequence[Spend], *, request_id: str | None = None, response: Any = None,
               digest: str | None = None) -> Recorded:
        """Spend, all or nothing, in one transaction, with the release's ``response`` (JSON data)
        stored under ``request_id``. A request recorded before is not spent again: its stored
        response comes back (``replayed``); ``digest`` (of what was asked) tells a retry from
        another request that reuses the id (:class:`RequestConflict`)."""
        with self._transaction() as connection:
            if request_id is not None:
                found = _replay(connection, request_id, digest)
                if found is not None:
                    return found
            _check(connection, spends)
            now = time.time()
            connection.executemany(
                "INSERT INTO spends (dataset, subject, amount, unit, mechanism, request_id, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(s.dataset, s.subject, float(s.amount), s.unit, s.mechanism, request_id, now) for s in spends])
            if request_id is not None:
                connection.execute("INSERT INTO requests VALUES (?, ?, ?, ?)",
                                   (request_id, now, json.dumps(response), digest))
        return Recorded(False, response)

    def replay(self, request_id: str, digest: str | None = None) -> Recorded | None:
        """A recorded request with its stored response, or None if it was never recorded; a
        recorded request with another ``digest`` is a :class:`RequestConflict`."""
        with self._connection() as connection:
            return _replay(connection, request_id, digest)

    # -- reading ------------------------------------------------------------------------

    def totals(self) -> list[dict[str, Any]]:
        """Per dataset, subject and unit: spent, releases, cap and what is left."""
        with self._connection() as connection:
            rows = connection.execute(
                "SELECT dataset, subject, unit, SUM(amount), COUNT(*) FROM spends GROUP BY dataset, subject, unit "
                "ORDER BY dataset, subject, unit").fetchall()
            result = []
            for dataset, subject, unit, amount, count in rows:
                cap = _cap(connection, dataset, subject)
                result.append({"dataset": dataset, "subject": subject, "unit": unit, "spent": amount,
                               "releases": count, "cap": cap,
                               "remaining": None if cap is None else max(0.0, cap - amount)})
        return result

    def caps(self) -> list[dict[str, Any]]:
        with self._connection() as connection:
            return [{"dataset": d, "subject": s, "cap": c}
                    for d, s, c in connection.execute("SELECT dataset, subject, cap FROM caps ORDER BY dataset, subject")]

    def spends(self) -> list[dict[str, Any]]:
        """Every spend, in the order recorded."""
        with self._connection() as connection:
            rows = connection.execute("SELECT id, dataset, subject, amount, unit, mechanism, request_id, created "
                                      "FROM spends ORDER BY id").fetchall()
        keys = ("id", "dataset", "subject", "amount", "unit", "mechanism", "request_id", "created")
        return [dict(zip(keys, row)) for row in rows]


def _replay(connection: sqlite3.Connection, request_id: str, digest: str | None) -> Recorded | None:
    row = connection.execute("SELECT response, digest FROM requests WHERE request_id = ?", (request_id,)).fetchone()
    if row is None:
        return None
    if digest is not None and row[1] is not None and row[1] != digest:
        raise RequestConflict(f"request id '{request_id}' was used before for another request; give every request "
                              "its own id (a retry of the same request may reuse it)")
    return Recorded(True, json.loads(row[0]))


def _cap(connection: sqlite3.Connection, dataset: str, subject: str) -> float | None:
    for key in ((dataset, subject), (EVERY, subject), (dataset, EVERY), (EVERY, EVERY)):
        row = connection.execute("SELECT cap FROM caps WHERE dataset = ? AND subject = ?", key).fetchone()
        if row is not None:
            return float(row[0])
    return None


def _spent(connection: sqlite3.Connection, dataset: str, subject: str) -> float:
    row = connection.execute("SELECT COALESCE(SUM(amount), 0) FROM spends WHERE dataset = ? AND subject = ?",
                             (dataset, subject)).fetchone()
    return float(row[0])


def _check(connection: sqlite3.Connection, spends: Sequence[Spend]) -> None:
    wanted: dict[tuple[str, str], float] = {}
    units: dict[tuple[str, str], str] = {}
    for spend in spends:
        key = (spend.dataset, spend.subject)
        wanted[key] = wanted.get(key, 0.0) + float(spend.amount)
        if units.setdefault(key, spend.unit) != spend.unit:
            raise InvalidParameterError(f"subject '{spend.subject}' would spend in two units ({units[key]}, "
                                        f"{spend.unit}); release it with one mechanism at a time")
    for (dataset, subject), amount in wanted.items():
        row = connection.execute("SELECT unit FROM spends WHERE dataset = ? AND subject = ? LIMIT 1",
                                 (dataset, subject)).fetchone()
        if row is not None and row[0] != units[(dataset, subject)]:
            raise InvalidParameterError(
                f"subject '{subject}' (dataset '{dataset}') has spent in {row[0]}; this release would spend in "
                f"{units[(dataset, subject)]}, which does not add up with it: use a mechanism of the same kind")
        cap = _cap(connection, dataset, subject)
        spent = _spent(connection, dataset, subject)
        # A tiny tolerance, so that spends summing to the cap exactly are not refused by rounding.
        if cap is not None and spent + amount > cap * (1 + 1e-12) + 1e-12:
            raise BudgetExceeded(
                f"subject '{subject}' (dataset '{dataset}') has spent {spent:g} {units[(dataset, subject)]} of its cap "
                f"of {cap:g}; this release would spend {amount:g} more: raise the cap with 'textveil budget set-cap' "
                "or release less")
