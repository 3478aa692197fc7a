"""Output paths and the vocabulary corpus, checked before any work (textveil.corpus.outputs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from textveil.corpus.outputs import check_vocabulary_corpus, plan_output_paths
from textveil.corpus.reading import expand_inputs
from textveil.errors import InputError


def _write(path: Path, text: str = "The market rallied.") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_folders_mirror_their_layout_under_the_output_folder(tmp_path: Path) -> None:
    _write(tmp_path / "in" / "a.txt")
    _write(tmp_path / "in" / "sub" / "b.jsonl", '{"text": "x"}\n')
    files = expand_inputs([str(tmp_path / "in")])
    targets = plan_output_paths(files, tmp_path / "out", single_target=False, suffix=".json")
    assert [targets[f] for f in files] == [tmp_path / "out" / "a.txt.json", tmp_path / "out" / "sub" / "b.jsonl.json"]


def test_a_single_target_is_the_output_path_itself(tmp_path: Path) -> None:
    files = expand_inputs([str(_write(tmp_path / "a.txt"))])
    assert plan_output_paths(files, tmp_path / "released.txt", single_target=True, suffix="") == {
        files[0]: tmp_path / "released.txt"
    }


def test_two_inputs_with_the_same_destination_are_refused_naming_both(tmp_path: Path) -> None:
    first, second = _write(tmp_path / "news" / "a.txt"), _write(tmp_path / "blogs" / "a.txt")
    files = expand_inputs([str(tmp_path / "news"), str(tmp_path / "blogs")])
    with pytest.raises(InputError) as caught:
        plan_output_paths(files, tmp_path / "out", single_target=False, suffix="")
    message = str(caught.value)
    assert str(first) in message and str(second) in message and "--output" in message
    assert "\n" not in message


def test_the_same_file_given_twice_is_refused(tmp_path: Path) -> None:
    _write(tmp_path / "in" / "a.txt")
    files = expand_inputs([str(tmp_path / "in"), str(tmp_path / "in" / "a.txt")])
    with pytest.raises(InputError, match="would both be written to"):
        plan_output_paths(files, tmp_path / "out", single_target=False, suffix="")


def test_a_destination_that_is_an_input_is_refused(tmp_path: Path) -> None:
    source = _write(tmp_path / "a.txt")
    files = expand_inputs([str(source)])
    with pytest.raises(InputError, match="never writes over its input"):
        plan_output_paths(files, source, single_target=True, suffix="")
    # a folder release landing on an input: out/ is the input folder itself
    files = expand_inputs([str(tmp_path)])
    with pytest.raises(InputError, match="never writes over its input"):
        plan_output_paths(files, tmp_path, single_target=False, suffix="")


def test_an_output_file_for_several_inputs_is_refused(tmp_path: Path) -> None:
    _write(tmp_path / "in" / "a.txt")
    _write(tmp_path / "in" / "b.txt")
    existing = _write(tmp_path / "out.txt")
    with pytest.raises(InputError, match="is a file, but several inputs need a folder"):
        plan_output_paths(expand_inputs([str(tmp_path / "in")]), existing, single_target=False, suffix="")


def test_a_vocabulary_corpus_apart_from_the_inputs_passes(tmp_path: Path) -> None:
    vocabulary = _write(tmp_path / "public" / "wiki.txt")
    _write(tmp_path / "private" / "a.txt")
    check_vocabulary_corpus(vocabulary, [str(tmp_path / "private"), "-"])
    check_vocabulary_corpus(tmp_path / "public", [str(tmp_path / "private" / "a.txt")])
    # a sibling whose name starts like the vocabulary folder's is not inside it
    _write(tmp_path / "public2" / "b.txt")
    check_vocabulary_corpus(tmp_path / "public", [str(tmp_path / "public2")])


@pytest.mark.parametrize(
    ("vocabulary", "inputs", "says"),
    [
        ("private/a.txt", ["private/a.txt"], "is one of the inputs"),
        ("private/sub/../a.txt", ["private/a.txt"], "is one of the inputs"),  # compared resolved
        ("private/a.txt", ["private"], "lies inside the input folder"),  # the vocabulary inside an input folder
        ("private", ["private/a.txt"], "lies inside --vocab-corpus"),  # an input inside the vocabulary folder
        ("private", ["-", "private"], "is one of the inputs"),
    ],
)
def test_a_vocabulary_corpus_overlapping_the_inputs_is_refused(
    tmp_path: Path, vocabulary: str, inputs: list[str], says: str
) -> None:
    _write(tmp_path / "private" / "a.txt")
    (tmp_path / "private" / "sub").mkdir()
    with pytest.raises(InputError, match=says) as caught:
        check_vocabulary_corpus(tmp_path / vocabulary, [i if i == "-" else str(tmp_path / i) for i in inputs])
    assert "public or training corpus" in str(caught.value)
