"""Figures quoted from committed results: ``docs/hooks/result_figures.py`` fills each placeholder
with the value read from a ``results.json`` (the lookup is :mod:`textveil.evaluation.quoted_figures`),
fails the build with one line per problem where a placeholder names a folder, release or measure
that does not exist, and fails it where a page quotes a measured figure by hand.

Fixture pages and a tiny comparison under a temporary docs folder; the last tests read the
committed docs/ (no site build: the hook's own check, page by page, in a second or two).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import NEEDS_MKDOCS, REPO_ROOT, load_docs_hook
from textveil.evaluation import quoted_figures, quoted_pages, quoted_rows, quoted_tables


def _attack(top1: float, n: int = 150, training: str = "clean") -> dict:
    return {"top1": top1, "n_unknown": n, "training": training}


def _release(name: str, parameter: float | None, risk: tuple[str, str, float], similarity: float, fluency: float,
             options: dict | None = None, topic: float = 0.02, seconds: float = 1.5, guarantee: str = "dp") -> dict:
    attack, training, top1 = risk
    attacks = {"char3-svm": _attack(0.01), "topic-svm": _attack(topic)}
    attacks_release = {"char3-svm": _attack(0.01, training="release"), "topic-svm": _attack(0.0, training="release")}
    (attacks if training == "clean" else attacks_release)[attack] = _attack(top1, training=training)
    label = name + (f" [{', '.join(f'{k}={v}' for k, v in options.items())}]" if options else "")
    setting = "default" if parameter is None else f"epsilon {parameter:g}"
    return {"id": f"{label} {setting}", "mechanism": label, "name": name, "guarantee": guarantee,
            "corpus_level": False, "parameter_name": "epsilon", "parameter": parameter, "setting": setting,
            "options": options or {}, "risk": {"attack": attack, "training": training, "top1": top1},
            "utility": {"semantic-similarity": {"value": similarity}, "fluency": {"value": fluency},
                        "describing": {"value": 0.2}, "length-ratio": {"value": 1.1}},
            "budget": {"kind": "dp", "per_document": {"median": 768.0, "largest": 3840.0, "texts": 150}},
            "not_applicable": {}, "seconds": 10.0,
            "point": {"seconds": {"release": seconds * 150, "release known texts": seconds * 300},
                      "release": {"read_from_cache": 0}, "known_release": {"read_from_cache": 0},
                      "attacks": attacks, "attacks_release": attacks_release}}


COMPARISON = {
    "kind": "comparison", "chance": 1 / 150, "floor": {"attack": "length", "top1": 0.04},
    "corpora": {"risk_known": {"documents": 300}, "risk_unknown": {"documents": 150}},
    "unmodified": {"risk": {"attack": "char3-svm", "training": "clean", "top1": 0.76},
                   "attacks": {"char3-svm": _attack(0.76), "topic-svm": _attack(0.54)},
                   "utility": {"semantic-similarity": {"value": 1.0}, "fluency": {"value": 1.0}}},
    "releases": [
        _release("emp", 10.0, ("word1-svm", "release", 7 / 150), 0.1659, 165.42, seconds=0.02),
        _release("paraphrase", 25.0, ("length", "release", 4 / 150), 0.181, 14.36),
        _release("paraphrase", 30.0, ("word1-svm", "clean", 13 / 150), 0.302, 0.767, topic=11 / 150),
        _release("paraphrase", 8.0, ("char3-svm", "clean", 4 / 150), 0.195, 0.80, {"score": "public-base"}),
        _release("restyle", 0.7, ("word1-svm", "release", 0.01), 0.433, 0.25, guarantee="none"),
    ],
    "frontier": {"semantic-similarity": {"pareto": ["emp epsilon 10", "paraphrase epsilon 30"], "best_under": [
        {"max_risk": 0.05, "release": "emp epsilon 10", "utility": 0.1659, "risk": 7 / 150},
        {"max_risk": 0.1, "release": "paraphrase epsilon 30", "utility": 0.302, "risk": 13 / 150}]}},
}


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    """A docs folder holding one committed comparison, results/cmp, and its README."""
    folder = tmp_path / "docs" / "results" / "cmp"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(COMPARISON), encoding="utf-8")
    (folder / "README.md").write_text("# cmp\n", encoding="utf-8")
    return tmp_path / "docs"


def _fill(docs: Path, body: str) -> str:
    return quoted_pages.ResultsLibrary(docs / "results").fill(body)


@pytest.mark.parametrize(("body", "shown"), [
    ('fig cmp "emp" 10 risk', "0.047"),
    ("fig cmp emp 10 risk-interval", "0.047 [0.023, 0.093]"),
    ('fig cmp "emp" 10 similarity', "0.166"),
    ('fig cmp "emp" 10 fluency', "165"),
    ('fig cmp "paraphrase" 25 fluency', "14.4"),
    ('fig cmp "paraphrase" 30 fluency', "0.77"),
    ('fig cmp "paraphrase" 30 describing', "0.20"),
    ('fig cmp "paraphrase" 30 length', "1.10"),
    ('fig cmp "paraphrase" 30 semantic-similarity .2', "0.30"),
    ('fig cmp "paraphrase" 30 content-only', "0.073"),
    ('fig cmp "paraphrase[score=public-base]" 8 risk', "0.027"),
    ('fig cmp "paraphrase[score=public-base]" 8 epsilon-per-document', "768"),
    ('fig cmp "restyle" 0.7 risk %', "1%"),
    ("fig cmp unmodified risk", "0.760"),
    ("fig cmp unmodified style-adds", "0.220"),
    ("fig cmp chance", "0.007"),
    ("fig cmp floor", "0.040"),
    ("plain 0.40", "0.40"),
])
def test_a_placeholder_renders_the_value_of_the_committed_results(docs, body, shown):
    assert _fill(docs, body) == shown


def test_a_release_after_a_step_and_a_utility_interval_are_quoted_by_name():
    """``emp+polish`` names the polished release, ``emp`` the plain one (both are emp at 10), and
    ``MEASURE-interval`` gives a utility with its bootstrap interval, or fails where none was kept."""
    plain = _release("emp", 10.0, ("word1-svm", "release", 7 / 150), 0.1659, 165.42)
    polished = _release("emp", 10.0, ("topic-svm", "release", 3 / 150), 0.118, 1.143)
    polished["mechanism"], polished["id"] = "emp+polish", "emp+polish epsilon 10"
    polished["utility"]["fluency"]["interval"] = {"low": 0.574, "high": 2.332, "method": "bootstrap"}
    results = {**COMPARISON, "releases": [plain, polished]}
    assert quoted_figures.render(results, 'fig cmp "emp" 10 fluency') == "165"
    assert quoted_figures.render(results, 'fig cmp "emp+polish" 10 fluency-interval') == "1.14 [0.57, 2.33]"
    assert quoted_figures.render(results, 'fig cmp "emp+polish" 10 risk-interval') == "0.020 [0.004, 0.057]"  # 3 of 150: exact (Clopper-Pearson)
    with pytest.raises(quoted_figures.FigureError, match="has no interval"):
        quoted_figures.render(results, 'fig cmp "emp" 10 fluency-interval')
    with pytest.raises(quoted_figures.FigureError, match=r"it has: emp at 10, emp\+polish at 10"):
        quoted_figures.render(results, 'fig cmp "emp+restyle" 10 risk')
    names = [row.split(" | ")[0].strip("| *") for row in quoted_tables.comparison_table(results, ["risk"]).splitlines()[2:]]
    assert names == ["unmodified text", "emp + polish", "emp"]  # a table names the step after the mechanism, as a placeholder does


def test_the_risk_interval_is_the_library_rate_interval_of_the_risk_attack():
    from textveil.evaluation.intervals import rate_interval

    release = quoted_figures.find_release(COMPARISON, "emp", "10")  # word1-svm, release-trained: 7 of 150
    expected = rate_interval(7, 150)
    assert quoted_figures.risk_interval_of(release)[1:] == pytest.approx((expected.low, expected.high))


def test_tables_read_every_release_and_the_frontier(docs):
    table = _fill(docs, "fig_table cmp risk similarity:.3 fluency")
    rows = table.splitlines()
    assert rows[0] == "| mechanism | setting | risk | semantic similarity | fluency (ratio) |"
    assert rows[2] == "| unmodified text |  | 0.760 | 1.000 | 1.00 |"
    assert "| emp * | epsilon 10 | 0.047 | 0.166 | 165 |" in rows
    assert "| paraphrase [score=public-base] | epsilon 8 | 0.027 | 0.195 | 0.80 |" in rows
    best = _fill(docs, "best_under cmp similarity").splitlines()
    assert best[2:] == ["| 0.05 | emp, epsilon 10: 0.166 at risk 0.047 |",
                        "| 0.10 | paraphrase, epsilon 30: 0.302 at risk 0.087 |"]


def test_the_answers_follow_the_stated_rule():
    found = dict(quoted_tables.answers(COMPARISON))
    # readable (fluency ratio at most 2): public base at 8 and paraphrase at 30; the least risk of them
    assert quoted_figures.release_label(found["readable"]) == "paraphrase[score=public-base] at 8"
    # least risk: public base at 8 and paraphrase at 25 tie at 4 of 150; the higher similarity wins
    assert quoted_figures.release_label(found["least risk"]) == "paraphrase[score=public-base] at 8"
    # fastest: emp's release time per text is the least; restyle has no guarantee and never answers
    assert quoted_figures.release_label(found["fastest"]) == "emp at 10"
    left_out = dict(quoted_tables.answers(COMPARISON, left_out=["paraphrase[score=public-base] at 8"]))
    assert quoted_figures.release_label(left_out["readable"]) == "paraphrase at 30"
    assert quoted_figures.release_label(left_out["least risk"]) == "paraphrase at 25"


def test_a_step_after_a_mechanism_makes_another_mechanism_for_the_answers():
    """emp then polish is timed and answered apart from emp: its language model is slow, so the
    fastest answer stays emp's own, and the table names the step."""
    plain = _release("emp", 10.0, ("word1-svm", "release", 7 / 150), 0.1659, 165.42, seconds=0.02)
    polished = _release("emp", 10.0, ("topic-svm", "release", 3 / 150), 0.118, 1.143, seconds=0.8)
    polished["mechanism"], polished["id"] = "emp+polish", "emp+polish epsilon 10"
    polished["paired"] = {"reference": "emp epsilon 10", "only_first": 3, "only_second": 7, "p_value": 0.34375,
                          "told_apart": False}
    results = {**COMPARISON, "plan": {}, "releases": [plain, polished]}
    found = dict(quoted_tables.answers(results))
    assert quoted_figures.release_label(found["fastest"]) == "emp at 10"
    assert quoted_figures.release_label(found["readable"]) == "emp+polish at 10"
    table = quoted_tables.answer_table({"cmp": results}, {"cmp": "results/cmp/README.md"},
                                       [quoted_tables.AnswerRow("posts", "cmp")])
    assert ("| posts | readable | `emp --then polish`, epsilon 10 | 0.020 [0.004, 0.057] (0.007) | cannot be told "
            "apart (p = 0.344; 3 named only here, 7 only there) |") in table


def test_one_epsilon_per_document_answers_with_the_least_risk_among_fixed_bounds():
    """Only releases whose every document has the same epsilon answer it; among them the least risk."""
    def fixed(parameter: float, top1: float) -> dict:
        release = _release("select-write", parameter, ("char3-svm", "clean", top1), 0.25, 1.2)
        release["budget"] = {"kind": "dp", "per_document": {"median": parameter, "largest": parameter, "texts": 150}}
        return release

    results = {**COMPARISON, "releases": [*COMPARISON["releases"], fixed(10.0, 3 / 150), fixed(50.0, 6 / 150)]}
    found = dict(quoted_tables.answers(results))
    assert quoted_figures.release_label(found["one epsilon per document"]) == "select-write at 10"
    assert quoted_figures.release_label(found["least risk"]) == "select-write at 10"


def test_the_answer_table_cites_each_comparison_and_states_its_rule():
    rows = [quoted_tables.AnswerRow("posts", "cmp", (("paraphrase[score=public-base] at 8", "a first design"),))]
    table = quoted_tables.answer_table({"cmp": COMPARISON}, {"cmp": "results/cmp/README.md"}, rows)
    assert table.startswith(quoted_tables.ANSWER_RULE)
    lines = [line for line in table.splitlines() if line.startswith("| ") and "your texts" not in line]
    assert len(lines) == 4 and all("[`cmp`](results/cmp/README.md)" in line for line in lines)
    assert "| one epsilon per document | none measured |" in lines[3]  # every fixture budget grows with the text
    # 13 of 150 named: Wilson's interval; no per-text outcomes in this fixture, so no paired test
    assert ("| posts | readable | `paraphrase`, epsilon 30 | 0.087 [0.051, 0.143] (0.007) "
            "| not recorded (per-text outcomes not kept) | 0.302 | 0.77 |") in lines[0]
    assert "| fastest | `emp`, epsilon 10 | 0.047 [0.023, 0.093] (0.007) | the reference |" in lines[2]
    assert "Not an answer: `paraphrase --set score=public-base`, epsilon 8 in `cmp`, a first design." in table


# --- The hook: the build fails with one line naming the page, the placeholder and what is missing


@pytest.fixture()
def hook(docs):
    module = load_docs_hook("result_figures")
    config = {"docs_dir": str(docs)}
    module.on_config(config)

    def build(markdown: str, page: str = "guide/page.md") -> str:
        return module.on_page_markdown(markdown, SimpleNamespace(file=SimpleNamespace(src_uri=page)), config, None)

    return build


@NEEDS_MKDOCS
def test_the_hook_fills_placeholders_and_leaves_code_as_written(hook):
    page = ('On [the comparison](../results/cmp/README.md), emp at epsilon 10 names {{ fig cmp "emp" 10 risk }}.\n\n'
            "Write `{{ fig cmp \"emp\" 10 risk }}` in a page.\n\n```text\n{{ fig cmp chance }}\n```\n")
    built = hook(page)
    assert "emp at epsilon 10 names 0.047." in built
    assert '`{{ fig cmp "emp" 10 risk }}`' in built and "{{ fig cmp chance }}\n```" in built


@NEEDS_MKDOCS
@pytest.mark.parametrize(("placeholder", "missing"), [
    ('{{ fig cmp "emp" 12 risk }}', 'no release "emp" at 12 (it has: emp at 10, paraphrase at 25'),
    ('{{ fig cmp "paraphrase[score=private]" 8 risk }}', 'no release "paraphrase[score=private]" at 8'),
    ('{{ fig nowhere "emp" 10 risk }}', 'no results folder "nowhere" (no nowhere/results.json)'),
    ('{{ fig cmp "emp" 10 sentiment-cosine }}', 'emp at 10 has no measure "sentiment-cosine" (it has: '),
    ("{{ figs cmp chance }}", 'unknown placeholder "figs"'),
])
def test_an_unknown_folder_release_or_measure_fails_with_one_line(hook, placeholder, missing):
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError) as failed:
        hook(f"Measured: {placeholder}.\n", page="guide/page.md")
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith(f"guide/page.md: {placeholder}: ")
    assert missing in message


@NEEDS_MKDOCS
@pytest.mark.parametrize("page", [
    "On [all users](../results/cmp/README.md), emp at epsilon 10 names 0.047 of the writers.\n",
    "The risk is {{ fig cmp \"emp\" 10 risk }} and the similarity 0.166.\n",
    "See docs/results/cmp for the run.\n\n| release | risk |\n|---|---:|\n| emp, epsilon 10 | 0.047 |\n",
    "- **blog** ([report](../results/cmp/README.md)): risk 0.047 at\n  epsilon 10 (similarity\n  0.17).\n",
])
def test_a_page_quoting_a_figure_by_hand_fails(hook, page):
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError) as failed:
        hook(page, page="guide/page.md")
    lines = str(failed.value).splitlines()
    assert lines and all(line.startswith("guide/page.md: line ") and "typed by hand" in line for line in lines)
    assert any("0.047" in line or "0.166" in line for line in lines)


@NEEDS_MKDOCS
def test_what_is_not_a_measured_figure_passes(hook):
    page = "\n\n".join([
        "On [the comparison](../results/cmp/README.md), textveil 0.5.0 at epsilon 0.5 and temperature 0.7,",
        "under a risk of 0.10 or below 0.3, with `--set width=12.5` and {{ plain 0.40 }} of the meaning",
        "named {{ fig cmp \"emp\" 10 risk }}.\n\n```bash\ntextveil compare --thresholds 0.05,0.1\n```",
        "A page that cites no run may say 0.98x or 2.5 GB.",
        "| a table | 0.5 |\n|---|---|\n| citing nothing | 0.25 |",
    ])
    assert "named 0.047." in hook(page)
    # the measured record itself (results/) is not checked for figures typed by hand
    assert hook("[the run](cmp/README.md): 0.047 and 0.166.\n", page="results/page.md")


# --- The committed documentation


def _user_pages() -> list[Path]:
    docs = REPO_ROOT / "docs"
    return [path for path in sorted(docs.rglob("*.md")) if not path.relative_to(docs).as_posix().startswith("results/")]


@NEEDS_MKDOCS
def test_every_page_of_the_documentation_fills_its_placeholders_and_quotes_no_figure_by_hand():
    module = load_docs_hook("result_figures")
    library = quoted_pages.ResultsLibrary(REPO_ROOT / "docs" / "results")
    quotable = library.quotable()
    problems = []
    for path in _user_pages():
        page = path.relative_to(REPO_ROOT / "docs").as_posix()
        problems += module.check_page(path.read_text(encoding="utf-8"), page, library, quotable)[1]
    assert not problems, "\n".join(problems)


def test_which_mechanism_answers_from_the_committed_comparisons():
    library = quoted_pages.ResultsLibrary(REPO_ROOT / "docs" / "results")
    page = (REPO_ROOT / "docs" / "choosing-a-mechanism.md").read_text(encoding="utf-8")
    assert "{{ answer_table }}" in page
    table = library.fill("answer_table", "choosing-a-mechanism.md")
    rows = [line for line in table.splitlines() if line.startswith("| ") and "your texts" not in line]
    assert len(rows) == 4 * len(quoted_tables.ANSWER_ROWS)
    news = [row for row in rows if "c50-documents" in row]
    assert len(news) == 4 and all("(results/c50-documents/README.md)" in row for row in news)
    assert "(results/blog-cross-topic/README.md)" in table and "(results/blog-same-stream/README.md)" in table


def test_a_paired_test_is_quoted_in_words_against_the_reference_or_another_setting():
    """``paired`` reads the release's McNemar test against the reference; ``paired=SETTING``
    computes it against the same release at another setting from the per-text outcomes; a row
    without outcomes is tested from its count, bounded over every pairing; a row with neither
    fails with one line instead of quoting a figure no results hold."""
    from scipy.stats import binomtest

    from textveil.evaluation.release_intervals import with_intervals

    def hits(named: set[int]) -> list[bool]:
        return [index in named for index in range(150)]

    emp = _release("emp", 10.0, ("word1-svm", "clean", 7 / 150), 0.17, 165.0)
    emp["point"]["attacks"]["word1-svm"]["hits"] = hits(set(range(7)))
    at50 = _release("select-write", 50.0, ("word1-svm", "clean", 11 / 150), 0.27, 0.3)
    at50["point"]["attacks"]["word1-svm"]["hits"] = hits(set(range(2)) | set(range(100, 109)))  # 9 only here
    at100 = _release("select-write", 100.0, ("word1-svm", "clean", 5 / 150), 0.29, 0.3)
    at100["point"]["attacks"]["word1-svm"]["hits"] = hits(set(range(2)) | set(range(100, 103)))
    old = _release("paraphrase", 30.0, ("word1-svm", "clean", 13 / 150), 0.3, 0.8)  # no per-text outcomes
    far = _release("paraphrase", 40.0, ("word1-svm", "clean", 40 / 150), 0.4, 0.3)
    bare = _release("restyle", 0.7, ("word1-svm", "clean", 30 / 150), 0.4, 0.3)
    del bare["point"]["attacks"]["word1-svm"]["n_unknown"]  # neither outcomes nor a count of texts
    results = with_intervals({**COMPARISON, "releases": [emp, at50, at100, old, far, bare]})
    shown = quoted_figures.render(results, 'fig cmp "select-write" 50 paired')
    # against emp: users 100-108 named only at 50 (9), users 2-6 only by emp (5)
    p_value = binomtest(5, 14, 0.5).pvalue
    assert shown == f"against emp at 10: cannot be told apart (p = {p_value:.3g}; 9 named only here, 5 only there)"
    between = quoted_figures.render(results, 'fig cmp "select-write" 50 paired=100')
    # users 103-108 named only at 50, none only at 100: p = 2 / 2**6, told apart
    assert between == "against select-write at 100: higher at 95% (p = 0.0312; 6 named only here, 0 only there)"
    # 13 against emp's 7 of the same 150: at least 6 named only here (p = 2 / 2**6), at most 13 and 7
    assert quoted_figures.render(results, 'fig cmp "paraphrase" 30 paired') == (
        f"against emp at 10: not recorded: the pairing would decide (p between 0.0312 and "
        f"{binomtest(13, 20, 0.5).pvalue:.3g}; 13 named here, 7 there, of 150; per-text outcomes not kept)")
    # 40 against 7: apart under every pairing
    assert quoted_figures.render(results, 'fig cmp "paraphrase" 40 paired') == (
        f"against emp at 10: higher at 95% whatever the pairing (p at most {binomtest(40, 47, 0.5).pvalue:.3g}; "
        "40 named here, 7 there, of 150; per-text outcomes not kept)")
    assert quoted_figures.render(results, 'fig cmp "paraphrase" 40 paired=30').startswith(
        "against paraphrase at 30: higher at 95% whatever the pairing")
    with pytest.raises(quoted_figures.FigureError, match="no paired test"):
        quoted_figures.render(results, 'fig cmp "restyle" 0.7 paired')
    assert "McNemar" in quoted_tables.comparison_table(results, ["risk", "paired"]).splitlines()[0]


# --- A pilot's table of rows (no attack: one measure over a grid of settings)

PILOT = {"rows": [
    {"corpus": "posts", "items": "sentences", "k": 1, "epsilon": 10.0, "similarity": 0.1024, "similarity_interval": [0.0789, 0.1246]},
    {"corpus": "posts", "items": "sentences", "k": 1, "epsilon": 30.0, "similarity": 0.2919, "similarity_interval": [0.2759, 0.3069]},
    {"corpus": "posts", "items": "sentences", "k": 2, "epsilon": 30.0, "similarity": 0.1561, "similarity_interval": [0.133, 0.1787]},
    {"corpus": "C50 test articles", "items": "keywords", "k": 3, "epsilon": 30.0, "similarity": 0.2378,
     "similarity_interval": [0.2141, 0.2605]},
]}


@pytest.fixture()
def pilot_docs(docs: Path) -> Path:
    folder = docs / "results" / "pilot"
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(PILOT), encoding="utf-8")
    (folder / "README.md").write_text("# pilot\n", encoding="utf-8")
    return docs


@pytest.mark.parametrize(("body", "shown"), [
    ("row pilot similarity k=1 epsilon=30", "0.292"),
    ("row pilot similarity k=1 epsilon=10.0", "0.102"),
    ("row pilot similarity-interval items=sentences k=2 epsilon=30", "0.156 [0.133, 0.179]"),
    ('row pilot similarity-interval corpus="C50 test articles" epsilon=30 .2', "0.24 [0.21, 0.26]"),
    ("row pilot similarity k=2 %", "16%"),
])
def test_a_row_placeholder_quotes_the_one_row_its_filters_match(pilot_docs, body, shown):
    assert _fill(pilot_docs, body) == shown


@pytest.mark.parametrize(("body", "missing"), [
    ("row pilot similarity epsilon=30", "3 rows of pilot match epsilon=30 (tell them apart by "),
    ("row pilot similarity k=4", "no row of pilot matches k=4"),
    ("row pilot fluency k=2", 'no number "fluency" (it has: epsilon, k, similarity)'),
    ("row pilot similarity k2", '"k2" is not a filter KEY=VALUE'),
    ("row cmp similarity k=1", "cmp/results.json holds no pilot rows"),
    ("row pilot k-interval k=2", 'has no interval "k_interval"'),
])
def test_a_row_placeholder_that_matches_no_single_row_fails_with_what_is_there(pilot_docs, body, missing):
    with pytest.raises(quoted_pages.FigureError) as failed:
        _fill(pilot_docs, body)
    assert missing in str(failed.value)


def test_a_page_citing_a_pilot_quotes_its_figures_from_the_rows(pilot_docs):
    quotable = quoted_pages.ResultsLibrary(pilot_docs / "results").quotable()
    assert "pilot" in quotable
    by_hand = "A [pilot of the plans](../results/pilot/README.md) keeps 0.292 at 30 per document.\n"
    assert [found.number for found in quoted_pages.hand_figures(by_hand, quotable)] == ["0.292"]
    quoted = "A [pilot of the plans](../results/pilot/README.md) keeps {{ row pilot similarity k=1 epsilon=30 }} at 30.\n"
    assert quoted_pages.hand_figures(quoted, quotable) == []
    assert "keeps 0.292 at 30" in quoted_pages.fill_page(quoted, quoted_pages.ResultsLibrary(pilot_docs / "results").fill)[0]


def test_rows_told_apart_by_a_setting_before_text_that_merely_varies():
    rows = {"rows": [{"corpus": "posts", "example": "a calm sea", "k": 1, "similarity": 0.1},
                     {"corpus": "posts", "example": "a storm", "k": 2, "similarity": 0.2}]}
    with pytest.raises(quoted_pages.FigureError, match=r"tell them apart by k: 1, 2"):
        quoted_rows.render_row(rows, quoted_rows.parse_row("row pilot similarity corpus=posts"))
