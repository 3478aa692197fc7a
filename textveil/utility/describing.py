"""Does a language model's release rewrite the text, or describe it?

Asked to paraphrase, a small model sometimes writes about the text instead ("The text conveys a
message of regret...", "Here is a paraphrased version: ...", "The author expresses..."). Such a
release keeps little of what the text says and nothing of how: it is neither a paraphrase nor a
useful release. :func:`describes` spots it by a public list of openings and phrases (fixed before
any release was read); :func:`describing_share` is the share of a release's texts that do.

>>> describes("The text conveys a message of regret and sorrow.")
True
>>> describes("Here's a rewritten version: I went to the market.")
True
>>> describes("I went to the market on Friday and bought apples.")
False
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SUBJECTS = r"(?:the|this|that|your)\s+(?:given\s+|original\s+|above\s+|following\s+)?(?:text|passage|post|message|" \
            r"paragraph|sentence|piece|excerpt|story|blog(?:\s+post)?|entry|writer|author|speaker|narrator)"
_OPENINGS = re.compile(
    r"^\W*(?:" + _SUBJECTS + r"|here(?:'s|\s+is|\s+are)|sure\b|certainly\b|in\s+this\s+(?:text|passage|post)|"
    r"(?:a\s+)?(?:re-?written|paraphrased|revised|simplified)\s+(?:version|text)|(?:this|the)\s+(?:re-?written|"
    r"paraphrased)\b|paraphrase\b|rewrite\b|summary\b|in\s+summary\b|to\s+summari[sz]e\b)", re.IGNORECASE)
_PHRASES = re.compile(
    r"\b(?:" + _SUBJECTS + r")\s+(?:is|was|conveys|expresses|describes|discusses|talks|says|mentions|seems|appears|"
    r"highlights|reflects|shares|suggests|uses|tells)\b|\b(?:re-?written|paraphrased)\s+(?:version|text)\b|"
    r"\bin\s+your\s+own\s+words\b|\bthe\s+original\s+(?:text|paragraph|sentence|passage|version)\b|"
    r"\bin\s+simpler\s+terms\b|\banother\s+way\s+to\s+(?:rephrase|say|put|write)\b|\brephras(?:e|ed|ing)\b|"
    r"\bthat(?:'s|\s+is)\s+an?\s+(?:\w+\s+){0,3}?(?:perspective|overview|summary|reflection|rewrite|paraphrase|"
    r"version)\b", re.IGNORECASE)


def describes(release: str) -> bool:
    """Whether ``release`` writes about a text (an opening such as "The text ...", "Here is a
    paraphrased version", or a phrase such as "the author expresses") instead of rewriting it."""
    return bool(_OPENINGS.search(release) or _PHRASES.search(release))


def describing_share(releases: Sequence[str]) -> float:
    """The share of the paragraphs of ``releases`` (non-empty ones) that :func:`describes`; 0 for
    none. A long release is read paragraph by paragraph (a rewriter's units), so a remark about
    the task anywhere in it counts once per paragraph that holds one; a one-paragraph release
    counts as itself.

    >>> describing_share(["The author is sad.", "I am sad.", ""])
    0.5
    >>> describing_share(["Shares rose.\\n\\nHere is a rewritten version: bonds fell.", "I am sad."])
    0.3333333333333333
    """
    counts = describing_counts(releases)
    paragraphs = sum(total for _, total in counts)
    return sum(found for found, _ in counts) / paragraphs if paragraphs else 0.0


def describing_counts(releases: Sequence[str]) -> list[tuple[int, int]]:
    """Per release: how many of its non-empty paragraphs describe the text, and how many it has
    (what :func:`describing_share` sums; a bootstrap over texts resamples these pairs).

    >>> describing_counts(["The author is sad.", "I am sad.", ""])
    [(1, 1), (0, 1), (0, 0)]
    """
    from textveil.utility.aligned_parts import release_paragraphs

    counts = []
    for text in releases:
        parts = release_paragraphs(text)
        counts.append((sum(describes(part) for part in parts), len(parts)))
    return counts
