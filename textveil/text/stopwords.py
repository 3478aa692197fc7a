"""English stop words, taken from scikit-learn's list rather than written again here.

One rule for every caller (the mechanism's ``keep_stop_words`` and bag output, the utility
tasks' content words, the embedding attack): a word is a stop word when its key (lower case,
straight apostrophe) is in scikit-learn's list, or when it is such a word with an English
clitic attached: "it's", "we're", "I'd", "don't", "can't". The tokenizer keeps contractions
whole, and scikit-learn lists none of them, yet a contraction of stop words ("it is", "do
not": "not" is itself a stop word) carries no more content than its parts. Only a known
clitic counts, not any text after an apostrophe, so names such as "De'Andre" ("de" is in
scikit-learn's list) stay content words; and the list decides the heads ("does" is not in it,
so neither is "doesn't").
"""

from __future__ import annotations

from functools import cache

from textveil.text.tokenize import word_key

# Endings a contraction adds to a word; the head before them is what carries the meaning.
_CLITICS = ("n't", "'s", "'re", "'ve", "'ll", "'d", "'m")
# Heads that "n't" changes: can't, won't, shan't.
_IRREGULAR_HEADS = {"ca": "can", "wo": "will", "sha": "shall"}
# A content word as the topic features read it (the topic attack, the cross-topic split's topic
# model): letters only, three or more, matched in lower-cased text; with the stop words left out,
# what a text is about rather than how it is written.
CONTENT_WORD_PATTERN = r"(?u)\b[^\W\d_]{3,}\b"


@cache
def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list (imported lazily: scikit-learn is slow to import)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def is_stop_word(word: str) -> bool:
    """Whether ``word`` (any casing, straight or curly apostrophe) is an English stop word, or a
    contraction of one ("it's", "we're", "don't").

    >>> is_stop_word("The"), is_stop_word("market")
    (True, False)
    >>> is_stop_word("It\u2019s"), is_stop_word("don't"), is_stop_word("market's")
    (True, True, False)
    """
    key = word_key(word)
    stop = english_stop_words()
    if key in stop:
        return True
    for clitic in _CLITICS:
        if key.endswith(clitic):
            head = key[: -len(clitic)]
            if clitic == "n't":
                head = _IRREGULAR_HEADS.get(head, head)
            return head in stop
    return False
