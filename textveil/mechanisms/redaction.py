"""Redaction (paper 004's first baseline): the features users repeat most (URLs, e-mail addresses,
@handles, hashtags, numbers) replaced by a placeholder, everything else copied.

It has no formal guarantee: its risk is measured, never bounded, and its Guarantee says so
(kind ``none``). Deterministic: the same text always gives the same release.

>>> Redaction().sanitize("Mail me at ann@example.org or see https://x.org #sale @bob 42!").text
'Mail me at [EMAIL] or see [URL] [HASHTAG] [USER] [NUMBER]!'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, ClassVar

from textveil.errors import InvalidParameterError
from textveil.mechanisms.base import Change, Mechanism, ProgressCallback, Release
from textveil.privacy.guarantee import Guarantee

# Order matters: an e-mail address holds an "@", a URL may hold digits and "#".
FEATURES: dict[str, tuple[str, str]] = {
    "urls": (r"(?:https?://|www\.)[^\s<>\"]+", "[URL]"),
    "emails": (r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", "[EMAIL]"),
    "handles": (r"(?<![\w@])@\w+", "[USER]"),
    "hashtags": (r"(?<![\w#&])#\w+", "[HASHTAG]"),
    "numbers": (r"(?<![\w.])\d+(?:[.,:]\d+)*(?![\w])", "[NUMBER]"),
}
"""What can be redacted: a pattern and its placeholder, by name."""

ALL_FEATURES = ",".join(FEATURES)


def no_guarantee(mechanism: str, statement: str, unprotected: tuple[str, ...], changed: int = 0,
                 **fields: Any) -> Guarantee:
    """The Guarantee of a release that has none: its risk is measured, not bounded. ``unprotected``:
    what every such release leaves unprotected, in general words; ``fields``: more of the
    Guarantee's fields (a record's counts, units rewritten, post-processing)."""
    return Guarantee(mechanism, None, kind="none", unit="document", composition="none", layout="keep",
                     words_protected=changed, unprotected_in_general=unprotected,
                     assumptions=("none: there is no formal guarantee; the risk is measured by attacks, not bounded",),
                     how=f"{mechanism}: NO formal privacy guarantee. {statement}", **fields)


class Redaction(Mechanism):
    """The ``redact`` mechanism: replace the chosen features by placeholders."""

    name = "redact"
    placeholder_rule = "each placeholder is copied as it is, like every word this baseline keeps"
    randomised: ClassVar[bool] = False

    def __init__(self, *, features: str = ALL_FEATURES, seed: int | None = None) -> None:
        self._check_parameters(features=features, seed=seed)
        chosen = [f.strip() for f in features.split(",") if f.strip()]
        unknown = [f for f in chosen if f not in FEATURES]
        if not chosen or unknown:
            raise InvalidParameterError(f"unknown --features {','.join(unknown) or features!r}; use a comma-separated "
                                        f"list of: {ALL_FEATURES}")
        self._chosen = [f for f in FEATURES if f in chosen]  # the patterns' own order
        self._pattern = re.compile("|".join(f"(?P<{f}>{FEATURES[f][0]})" for f in self._chosen))

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        releases = []
        for text in texts:
            releases.append(self._redact(text))
            if progress is not None:
                progress(1)
        return releases

    def _redact(self, text: str) -> Release:
        if not text.strip():
            return Release("", self._guarantee(0))
        changes: list[Change] = []

        def replace(match: re.Match) -> str:
            placeholder = FEATURES[match.lastgroup][1]
            # token_index: the feature's rank among this text's redactions
            changes.append(Change(len(changes), match.group(), placeholder))
            return placeholder

        released = self._pattern.sub(replace, text)
        return Release(released, self._guarantee(len(changes)), tuple(changes))

    def _guarantee(self, changed: int) -> Guarantee:
        return no_guarantee(
            self.name, f"{changed} feature(s) ({', '.join(self._chosen)}) were replaced by placeholders.",
            ("every word, its casing, punctuation, spacing and line breaks, except the redacted features",
             "the number and kind of the redacted features (their placeholders)"), changed)
