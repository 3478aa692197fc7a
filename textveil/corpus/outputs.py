"""Where releases go, checked before any work: no release overwrites an input or another release,
and no vocabulary corpus overlaps the text being released.

Pure path arithmetic (nothing is read or written), so the command line can fail in one line
before loading embeddings.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from textveil.corpus.reading import STDIN, InputFile
from textveil.errors import InputError


def plan_output_paths(
    files: Sequence[InputFile], output: Path, single_target: bool, suffix: str
) -> dict[InputFile, Path]:
    """Where each input file's release goes: ``output`` itself for a single target, else
    ``output / (file.relative + suffix)``, mirroring the input folders' layout.

    Refuses a destination that is an input (textveil never writes over its input), a file
    ``output`` when several inputs need a folder, and two inputs with the same destination
    (two folders each holding ``a.txt``): the second release would silently replace the first.

    >>> a = InputFile(Path("news/a.txt"), Path("a.txt"), "text")
    >>> plan_output_paths([a], Path("out"), single_target=False, suffix=".json")[a].as_posix()
    'out/a.txt.json'
    >>> b = InputFile(Path("blogs/a.txt"), Path("a.txt"), "text")
    >>> plan_output_paths([a, b], Path("out"), single_target=False, suffix="")
    Traceback (most recent call last):
    ...
    textveil.errors.InputError: inputs 'news/a.txt' and 'blogs/a.txt' would both be written to 'out/a.txt'; sanitize them in separate runs with different --output folders, or rename one
    """
    if single_target:
        candidates = [(files[0], output)]
    else:
        if output.exists() and not output.is_dir():
            raise InputError(f"--output '{output}' is a file, but several inputs need a folder; give a folder path")
        candidates = [(f, output / (str(f.relative) + suffix)) for f in files]
    inputs = {f.path.resolve() for f in files if f.path is not None}
    targets: dict[InputFile, Path] = {}
    claimed: dict[Path, InputFile] = {}  # resolved destination -> the input that writes it
    for source, target in candidates:
        resolved = target.resolve()
        if resolved in inputs:
            raise InputError(
                f"--output '{target}' is an input file; textveil never writes over its input: choose another path"
            )
        if resolved in claimed:
            # Also the same file given twice (a file and its folder): one of its releases would be lost.
            raise InputError(
                f"inputs '{claimed[resolved].display}' and '{source.display}' would both be written to '{target}'; "
                "sanitize them in separate runs with different --output folders, or rename one"
            )
        claimed[resolved] = source
        targets[source] = target
    return targets


def check_vocabulary_corpus(vocab_corpus: Path, inputs: Sequence[str], option: str = "--vocab-corpus") -> None:
    """Refuse a vocabulary (or training) corpus that overlaps the inputs: the same path, the
    corpus inside an input folder, or an input inside the corpus folder. A vocabulary drawn from
    the released text, or a mechanism fitted on it, is not covered by the guarantee (which words
    exist would leak). Paths are compared resolved (``..`` and links followed); ``-`` (standard
    input) is ignored. ``option`` names the flag in the message.

    >>> check_vocabulary_corpus(Path("public/wiki.txt"), ["-", "private/"])
    >>> check_vocabulary_corpus(Path("private/wiki.txt"), ["private"])
    Traceback (most recent call last):
    ...
    textveil.errors.InputError: --vocab-corpus 'private/wiki.txt' lies inside the input folder 'private'; a vocabulary drawn from the released text is not covered by the guarantee: use a public or training corpus kept apart from the inputs
    """
    vocabulary = vocab_corpus.resolve()
    what = "a vocabulary drawn from" if option == "--vocab-corpus" else "a mechanism fitted on"
    fix = f"{what} the released text is not covered by the guarantee: use a public or training corpus kept apart from the inputs"
    for item in inputs:
        if item == STDIN:
            continue
        path = Path(item).resolve()
        if path == vocabulary:
            raise InputError(f"{option} '{vocab_corpus}' is one of the inputs; {fix}")
        if path in vocabulary.parents:
            raise InputError(f"{option} '{vocab_corpus}' lies inside the input folder '{item}'; {fix}")
        if vocabulary in path.parents:
            raise InputError(f"input '{item}' lies inside {option} '{vocab_corpus}'; {fix}")
