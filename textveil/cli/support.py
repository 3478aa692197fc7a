"""What the command-line modules share: the error console, progress bars, loading embeddings,
and reading a mechanism's options as the user gave them. No privacy logic lives here."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.text import Text
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from textveil.errors import InvalidParameterError

stderr = Console(stderr=True, soft_wrap=True)


class OutputFormat(str, Enum):
    """``--format`` of the commands that print a table or JSON."""

    text = "text"
    json = "json"


class Layout(str, Enum):
    """``--layout`` of the token-substitution mechanisms."""

    public = "public"
    keep = "keep"


def progress_bar(*extra_columns: ProgressColumn) -> Progress | StageLines:
    """A live progress bar on a terminal; elsewhere (a log file, CI, a pipe) plain lines.

    A bar redrawn into a file is one endless line of carriage returns, so where stderr is not a
    terminal the same calls print one line per stage when it ends (nothing when it fails: the
    error is then the last line) and, while a long stage runs, a progress line at each 5% or 30 s
    (:class:`StageLines`).
    """
    if not stderr.is_terminal:
        return StageLines(stderr)
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        DoneOfTotalColumn(),
        *extra_columns,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    )


class DoneOfTotalColumn(ProgressColumn):
    """"done/total", with a tenth where the count is a fraction: one long document written unit by
    unit shows 0.4/1 rather than 0/1 until it ends.

    >>> from rich.progress import Progress
    >>> bar = Progress()
    >>> long, many = bar.add_task("one document", total=1, completed=0.4), bar.add_task("posts", total=1200)
    >>> bar.advance(many, 300)
    >>> [str(DoneOfTotalColumn().render(task)) for task in bar.tasks]
    ['0.4/1', '300/1,200']
    """

    def render(self, task: Task) -> Text:
        done = task.completed
        shown = f"{done:,.0f}" if float(done).is_integer() else f"{done:,.1f}"
        total = "?" if task.total is None else f"{task.total:,.0f}"
        return Text(f"{shown}/{total}", style="progress.download")


class StageLines:
    """What :func:`progress_bar` gives where stderr is not a terminal: the calls of a rich
    ``Progress`` (``add_task``, ``advance``, ``update``, ``console``), written as plain lines.

    A stage's line is printed when it ends. A long stage also prints a progress line as it goes,
    so that a log shows it moving: each time its count crosses another 5% of the total, or after
    30 s without a line, whichever comes first, and never within 2 s of its previous line (a quick
    stage prints its end only). A line holds the count, the rate since the stage began and the time
    left; a stage of unknown total prints its count and rate every 30 s. Lines are printed as the
    counts arrive (no thread): a stage that reports nothing prints nothing until it does.
    ``clock`` (seconds) is for tests.

    >>> from io import StringIO
    >>> out = StringIO()
    >>> with StageLines(Console(file=out, width=80)) as bar:
    ...     task = bar.add_task("sanitising", total=3)
    ...     bar.advance(task, 3)
    >>> print(out.getvalue().strip())  # doctest: +ELLIPSIS
    sanitising: done, 3 of 3 in ... s
    >>> out = StringIO()
    >>> with StageLines(Console(file=out, width=80)) as bar:  # stages reported as they end
    ...     task = bar.add_task("evaluating", total=2)
    ...     bar.update(task, completed=1, description="released")
    ...     bar.update(task, completed=2, description="attacked")
    >>> print(out.getvalue().strip())  # doctest: +ELLIPSIS
    released: done, 1 of 2 in ... s
    attacked: done, 2 of 2 in ... s
    >>> now, out = [0.0], StringIO()
    >>> with StageLines(Console(file=out, width=80), clock=lambda: now[0]) as bar:  # 0.1 s a text
    ...     task = bar.add_task("releasing", total=1000)
    ...     for _ in range(1000):
    ...         now[0] += 0.1
    ...         bar.advance(task)
    >>> lines = out.getvalue().splitlines()
    >>> for line in [f"{len(lines)} lines:", *lines[:2], "...", *lines[-2:]]:
    ...     print(line)
    20 lines:
    releasing: 50 of 1,000 (5%), 10.0/s, 1 min 35 s left
    releasing: 100 of 1,000 (10%), 10.0/s, 1 min 30 s left
    ...
    releasing: 950 of 1,000 (95%), 10.0/s, 5 s left
    releasing: done, 1,000 of 1,000 in 100.0 s
    """

    #: A progress line each time the count crosses another 1/STEPS of the total (5%) ...
    STEPS = 20
    #: ... or once this many seconds passed without a line ...
    AT_MOST_QUIET_S = 30.0
    #: ... but never sooner than this after the previous line.
    AT_LEAST_QUIET_S = 2.0

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self._tasks: dict[int, dict] = {}
        self._next_task = 0

    def __enter__(self) -> StageLines:
        return self

    def __exit__(self, *exc_info) -> None:
        if exc_info[0] is None:
            for task in self._tasks:
                self._end(task)

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **fields) -> int:
        task, self._next_task = self._next_task, self._next_task + 1
        self._tasks[task] = {"description": description, "total": total, "done": float(completed)}
        self._begin(self._tasks[task])
        return task

    def remove_task(self, task: int) -> None:
        """The task is over: its end line now (a task whose description names the running stage,
        as :func:`texts_progress`'s, ends this way rather than by a new description)."""
        self._end(task)
        del self._tasks[task]

    def advance(self, task: int, advance: float = 1) -> None:
        self._tasks[task]["done"] += advance
        self._progress(self._tasks[task])

    def update(self, task: int, *, completed: float | None = None, total: float | None = None,
               description: str | None = None, advance: float | None = None, **fields) -> None:
        """A new ``description`` names the stage just completed (the harness reports a stage when
        it ends): its line is printed now, timed from the previous line."""
        state = self._tasks[task]
        if total is not None:
            state["total"] = total
        if completed is not None:
            state["done"] = completed
        if advance is not None:
            state["done"] += advance
        if description is not None and description != state["description"]:
            state["description"] = description
            self._end(task)
            self._begin(state)
        else:
            self._progress(state)

    def _begin(self, state: dict) -> None:
        """A stage starts: its clock, its count so far (for its rate) and its quiet time start now."""
        now = self.clock()
        state.update(started=now, base=state["done"], shown=now, step=self._step(state))

    def _step(self, state: dict) -> int:
        """How many 5% steps of the total the count has crossed (0 where the total is unknown)."""
        return int(state["done"] * self.STEPS // state["total"]) if state["total"] else 0

    def _progress(self, state: dict) -> None:
        """Print a progress line where one is due (see the class)."""
        now = self.clock()
        quiet = now - state["shown"]
        total = state["total"]
        if quiet < self.AT_LEAST_QUIET_S or (total and state["done"] >= total):  # at the total: its end line
            return
        step = self._step(state)
        if step <= state["step"] and quiet < self.AT_MOST_QUIET_S:
            return
        state["shown"], state["step"] = now, max(step, state["step"])
        self.console.print(self._progress_line(state, now), markup=False, highlight=False)

    def _progress_line(self, state: dict, now: float) -> str:
        """``releasing: 1,250 of 25,000 (5%), 41.7/s, 9 min 30 s left``."""
        done, total = state["done"], state["total"]
        elapsed = now - state["started"]
        rate = (done - state["base"]) / elapsed if elapsed > 0 else 0.0
        line = f"{state['description']}: {_count(done)}"
        line += f" of {_count(total)} ({int(100 * done // total)}%)" if total else " done"
        if rate <= 0:
            return f"{line}, none in {_duration(elapsed)}, no estimate yet"
        line += f", {_rate(rate)}/s"
        return f"{line}, {_duration((total - done) / rate)} left" if total else line

    def _end(self, task: int) -> None:
        state = self._tasks[task]
        if state.get("ended") == state["description"]:
            return
        state["ended"] = state["description"]
        counted = f", {_count(state['done'])} of {_count(state['total'])}" if state["total"] else ""
        seconds = self.clock() - state["started"]
        self.console.print(f"{state['description']}: done{counted} in {seconds:.1f} s", markup=False, highlight=False)


def _count(value: float) -> str:
    """A count as a line shows it: ``1,250``; a fraction (progress within texts) with a tenth,
    ``12.5``, or below one with hundredths, ``0.25``, ``0.4``."""
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if abs(value) < 1 else f"{value:,.1f}"


def _rate(per_second: float) -> str:
    """Items a second, three significant digits or so: ``1,204``, ``41.7``, ``2.35``, ``0.052``."""
    for floor, digits in ((100, 0), (10, 1), (1, 2)):
        if per_second >= floor:
            return f"{per_second:,.{digits}f}"
    return f"{per_second:.3f}"


def _duration(seconds: float) -> str:
    """``45 s``, ``9 min 30 s``, ``2 h 5 min``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, rest = divmod(whole, 3600)
    return f"{hours} h {rest // 60} min" if rest // 60 else f"{hours} h"


def words_progress(bar: Progress | StageLines, stage: str, texts: Sequence[str]) -> Callable[[float], None]:
    """A task of ``bar`` that counts the input's words (split on white space), fed by a
    mechanism's ``progress(n)`` in finished texts (a fraction while a long one is written unit by
    unit): each text counts as the texts' mean length, so a 5 MB file moves by its words and the
    rate reads in words a second; exactly the total at the end. Texts without a word count as texts.

    >>> from io import StringIO
    >>> out = StringIO()
    >>> with StageLines(Console(file=out, width=80)) as bar:
    ...     told = words_progress(bar, "sanitising", ["one two three", "four"])
    ...     told(0.5); told(1.5)
    >>> print(out.getvalue().strip())  # doctest: +ELLIPSIS
    sanitising words: done, 4 of 4 in ... s
    """
    words = sum(len(text.split()) for text in texts)
    if not words:
        task = bar.add_task(stage, total=len(texts))
        return lambda done: bar.advance(task, done)
    task = bar.add_task(f"{stage} words", total=words)
    finished = 0.0

    def advance(done: float) -> None:
        nonlocal finished
        finished += done
        whole = finished >= len(texts) - 1e-9  # every text: the total exactly, not a float's sum
        bar.update(task, completed=words if whole else finished * words / len(texts))

    return advance


def texts_progress(bar: Progress | StageLines) -> Callable[[str, float, int], None]:
    """The harness's ``text_progress(stage, done, total)`` shown as a task of ``bar`` of its own,
    added when a first release starts: each release's texts, on a terminal a second bar, in a log
    a line every few percent (:class:`StageLines`)."""
    running: dict[str, Any] = {}  # the stage being released and its task

    def told(stage: str, done: float, total: int) -> None:
        if running.get("stage") != stage:  # a new release: the last one's task ends (its line in a log)
            if "task" in running:
                bar.remove_task(running["task"])
            running.clear()
            running.update(stage=stage, task=bar.add_task(stage, total=total))
        bar.update(running["task"], completed=done, total=total)
        if done >= total:  # all released: its line now
            bar.remove_task(running.pop("task"))
            running.pop("stage")

    return told


def load_cli_embeddings(spec: str, vocab_size: Optional[int]):
    from textveil.embeddings import load_embeddings

    return load_embeddings(spec, vocab_size, log=lambda message: stderr.print(f"[dim]{message}[/dim]"))


def given_options(mechanism: str, settings: Optional[list[str]], **flags) -> dict:
    """A mechanism's options as the user gave them: dedicated flags (``None``: not given) and
    ``--set NAME=VALUE`` for any other parameter, each parsed and checked by the mechanism's spec."""
    from textveil.building import check_mechanism_options, mechanism_options
    from textveil.mechanisms.registry import MECHANISMS

    entry = MECHANISMS.entry(mechanism)
    options = mechanism_options(**flags)
    for setting in settings or []:
        name, separator, value = setting.partition("=")
        if not separator or not name.strip():
            raise InvalidParameterError(f"--set '{setting}' is not NAME=VALUE, e.g. --set rating=similarity")
        options[name.strip().replace("-", "_")] = entry.parameter(name.strip().replace("-", "_")).parse(value)
    check_mechanism_options(mechanism, options)
    return options


def mechanism_of(mechanism: Optional[str], model: Optional[Path]) -> str:
    """The mechanism to use: the one named, else the trained model's, else emp.

    ``--model`` is a trained mechanism's folder ('textveil train'), or, for the mechanisms that
    rewrite with a language model (paraphrase, restyle), a language model: a ``.gguf`` file or a
    Hugging Face model folder (see :func:`language_model_option`). Anything else is one line."""
    if model is None:
        return mechanism or "emp"
    from textveil.building import check_model_path, is_language_model, model_users, takes_model
    from textveil.mechanisms.base import saved_mechanism_name

    check_model_path(model, mechanism)
    if is_language_model(model):
        if mechanism is not None and takes_model(mechanism):
            return mechanism
        users = " or ".join(f"--mechanism {name}" for name in model_users())
        reason = f"{mechanism} takes none" if mechanism is not None else "name the mechanism that rewrites with it"
        raise InvalidParameterError(f"--model '{model}' is a language model, not a trained mechanism; {reason}: {users}")

    saved = saved_mechanism_name(model)
    if mechanism is not None and mechanism != saved:
        raise InvalidParameterError(f"--model '{model}' holds a trained {saved}, not {mechanism}: "
                                    f"use --mechanism {saved} or another --model")
    return saved


def language_model_option(mechanism: str, model: Optional[Path], options: dict, *,
                          resolve: bool = False) -> Optional[Path]:
    """``--model`` as the mechanism takes it: a language model (for paraphrase, restyle) becomes
    its ``model`` parameter in ``options`` (the path, made absolute with ``resolve``) and None is
    returned; a trained mechanism's folder is returned as it is (built with ``Mechanism.load``).
    A ``model=`` parameter given with ``--set`` must then name the same model."""
    from textveil.building import is_language_model, takes_model

    if model is None or not takes_model(mechanism) or not is_language_model(model):
        if resolve and model is None and isinstance(options.get("model"), str) and Path(options["model"]).exists():
            options["model"] = str(Path(options["model"]).resolve())  # workers may run elsewhere
        return model
    source = str(model.resolve()) if resolve else str(model)
    given = options.get("model")
    if given is not None and given not in (str(model), source) and Path(given).resolve() != model.resolve():
        raise InvalidParameterError(f"--model '{model}' and --set model={given} name two language models: give one")
    options["model"] = source
    return None


def require_parameters(mechanism: str, options: dict, *, besides: tuple[str, ...] = ()) -> None:
    """Every parameter the mechanism cannot do without is given: one line names the flag."""
    from textveil.mechanisms.registry import MECHANISMS

    for parameter in MECHANISMS.entry(mechanism).parameters:
        if parameter.required and parameter.name not in options and parameter.name not in besides:
            raise InvalidParameterError(f"mechanism '{mechanism}' needs {parameter.flag}: {parameter.help}")


def warn_copied_fields(documents, text_field: str) -> None:
    """Name the JSONL/CSV fields besides the text that a release copies unchanged: no mechanism
    touches them, so no guarantee covers them."""
    warn_copied_field_names({name for d in documents for name in d.fields if name != text_field})


def warn_copied_field_names(names) -> None:
    """The warning of :func:`warn_copied_fields` for the field ``names`` a release copied (none: silent)."""
    copied = sorted(map(str, names))
    if copied:
        stderr.print(f"WARNING: the records' other fields ({', '.join(copied)}) are copied into the release unchanged "
                     "and are NOT protected; drop them from the input if they identify anyone",
                     style="bold yellow", markup=False)


# Subsets of a risk corpus read in place (evaluate, compare).
FIRST_LABELS = typer.Option(
    None, "--first-labels", help="Keep only the first N authors (in file order; of the known corpus when known and "
    "unknown are given apart), read in place.")
TEXTS_PER_LABEL = typer.Option(
    None, "--texts-per-label", help="Keep only each author's first T texts (of a single corpus before its "
    "known/unknown split; of each, given apart).")
# How a single risk corpus is split into known and judged texts (evaluate, compare; textveil.evaluation.splits).
KNOWN_PER_LABEL = typer.Option(
    None, help="Per author, the first K texts are known (single corpus; cross-topic: at most K, from the main "
    "topic or the fewest topics that hold K).")
SPLIT = typer.Option(
    "same-stream", "--split", help="same-stream: each author's first texts known, the next ones judged; cross-topic: "
    "known texts on the author's main topic, judged texts on other topics (an author on one topic is left out).")
TOPIC_FIELD = typer.Option(
    None, "--topic-field", help="A JSONL/CSV field naming each text's topic (e.g. fandom) for --split cross-topic; "
    "default: topics from an NMF topic model of the content words. With same-stream: how many judged texts share "
    "a topic with their author's known texts.")
TOPICS = typer.Option(
    None, "--topics", help="Topics of the NMF topic model (content words, seed 0) where no --topic-field names them: "
    "cross-topic's topics (default: 10); with same-stream, how many judged texts share a topic with their author's "
    "known texts.")

# The entity stage's options, declared once and added by @with_entity_options to every command
# that releases or learns from text (sanitize, release, evaluate, compare, attack, train, pivot).
_ENTITY_OPTIONS = (
    ("entities", str, typer.Option(
        "placeholder", "--entities",
        help="Entity stage before the mechanism (names, places, organisations, contacts; Presidio + spaCy): "
        "placeholder (<PERSON>, the default), pseudonym (keyed fake values), drop, or off.")),
    ("entity_types", Optional[str], typer.Option(
        None, "--entity-types", help="Comma-separated Presidio entity types to replace (default: PERSON, LOCATION, "
        "ORGANIZATION, NRP, EMAIL_ADDRESS, PHONE_NUMBER, URL, IP_ADDRESS, CREDIT_CARD, IBAN_CODE, US_SSN; add "
        "DATE_TIME for dates).")),
    ("allow_entity", Optional[list[str]], typer.Option(
        None, "--allow-entity", help="A word the entity stage never replaces (repeatable, or comma-separated).")),
    ("deny_entity", Optional[list[str]], typer.Option(
        None, "--deny-entity", help="A word the entity stage always replaces, as CUSTOM (repeatable, or "
        "comma-separated).")),
    ("pseudonym_key", Optional[Path], typer.Option(
        None, "--pseudonym-key", help="With --entities pseudonym: a file holding the key (the same key gives the "
        "same pseudonyms across runs; default: a fresh key, this run only). Never written anywhere.")),
    ("entity_scope", str, typer.Option(
        "corpus", "--entity-scope", help="With --entities pseudonym: one pseudonym per entity across the corpus, or "
        "per document.")),
)


def with_entity_options(command):
    """Give a command the entity stage's options; it receives them parsed, as one keyword
    argument ``entity_stage`` (an :class:`~textveil.pii.EntityOptions`), and declares no option itself."""
    import functools
    import inspect

    signature = inspect.signature(command)
    own = [p for p in signature.parameters.values() if p.name != "entity_stage"]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
             for name, kind, option in _ENTITY_OPTIONS]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        given = {name: kwargs.pop(name) for name, _, _ in _ENTITY_OPTIONS}
        return command(*args, entity_stage=entity_options(**given), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=own + added)  # type: ignore[attr-defined]
    return wrapper


def entity_options(entities: str, entity_types: Optional[str], allow_entity: Optional[list[str]],
                   deny_entity: Optional[list[str]], pseudonym_key: Optional[Path], entity_scope: str):
    """The entity stage's options as the user gave them (checked when the stage is built)."""
    from textveil.pii.stage import DEFAULT_TYPES, EntityOptions, read_key

    def words(values: Optional[list[str]]) -> tuple[str, ...]:
        return tuple(word.strip() for value in values or [] for word in value.split(",") if word.strip())

    key = None
    if pseudonym_key is not None:
        if entities != "pseudonym":
            raise InvalidParameterError("--pseudonym-key is for --entities pseudonym; drop it or pass that")
        key = read_key(str(pseudonym_key))
    types = tuple(t.strip() for t in entity_types.split(",")) if entity_types is not None else DEFAULT_TYPES
    return EntityOptions(operator=entities, entity_types=types, allow=words(allow_entity), deny=words(deny_entity),
                         key=key, key_file=None if pseudonym_key is None else str(Path(pseudonym_key).resolve()),
                         scope=entity_scope)


class Decoder(str, Enum):
    """emp's nearest-word decoding, as the commands offer it."""

    exact = "exact"
    screened = "screened"
    approx = "approx"


class OovPolicy(str, Enum):
    """What emp does with words outside its vocabulary."""

    perturb = "perturb"
    keep = "keep"
    drop = "drop"


def corpus_words(documents) -> list[str]:
    """The word tokens of documents, in order: what a vocabulary is restricted to."""
    from textveil.text.tokenize import tokenize

    return [t.text for d in documents for t in tokenize(d.text) if t.is_word]
