"""The public prompts the language-model rewriters read, and the prompt of a unit built from them.

A template (:data:`PROMPTS`, the ``prompt`` parameter) is fixed before any private text: a system
prompt, an instruction put before the input and, for ``one-shot``, a public example exchange. A
unit's prompt is the template holding the unit (:func:`template_prompt`), or, with context, after
an earlier exchange: the unit before it and the reply released for it (:func:`context_prompt`).
Every prompt starts with the template's opening (:func:`template_opening`), tokenized on its own,
so an engine reads it once for every prompt of a batch. An input that holds the entity stage's
placeholders gets a public note after it (:func:`with_placeholder_note`).

>>> from textveil.models.toy_language_model import toy_language_model
>>> toy = toy_language_model(["calm", "sea", "storm"])
>>> opening = template_opening(toy, "paraphrase")
>>> prompt = template_prompt(toy, "calm sea", "paraphrase")
>>> prompt[: len(opening)] == opening == context_prompt(toy, "calm sea", "paraphrase", ("storm", "sea"))[: len(opening)]
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textveil.errors import InputError
from textveil.text.placeholders import is_placeholder
from textveil.text.tokenize import find_words

SYSTEM_PROMPT = "You rewrite texts in plain, neutral English."
INSTRUCTION = "Paraphrase the following text in your own words:"
"""The default public template: the model reads SYSTEM_PROMPT, then INSTRUCTION, an empty line and the input."""
NEUTRAL_INSTRUCTION = ("Rewrite the following text in plain, neutral English, keeping what it says. Do not describe it "
                       "or comment on it: reply with the rewritten text only.")
EXAMPLE = ("honestly i cant believe how long the line was at the post office today!!! waited like an hour lol, "
           "never again",
           "The queue at the post office was very long today. I waited for about an hour and will not go back.")
"""A public example exchange for the one-shot prompt, written for it (no released text in it)."""
POLISH_INSTRUCTION = ("Write the following words as a few fluent, plain English sentences, keeping what they say. "
                      "Reply with the sentences only: no title, no comment.")
"""The instruction of ``polish`` (:mod:`textveil.mechanisms.polish`): it reads a release, often words
out of order, and writes them as sentences."""


@dataclass(frozen=True)
class PromptTemplate:
    """A public prompt: the system prompt (None: the model's own default), the instruction put
    before the input, and an optional example exchange shown first."""

    system: str | None
    instruction: str
    example: tuple[str, str] | None = None


PROMPTS = {
    "paraphrase": PromptTemplate(SYSTEM_PROMPT, INSTRUCTION),
    "neutral": PromptTemplate(SYSTEM_PROMPT, NEUTRAL_INSTRUCTION),
    "one-shot": PromptTemplate(SYSTEM_PROMPT, NEUTRAL_INSTRUCTION, (f"{NEUTRAL_INSTRUCTION}\n\n{EXAMPLE[0]}",
                                                                    EXAMPLE[1])),
    "default-system": PromptTemplate(None, INSTRUCTION),
    "polish": PromptTemplate(SYSTEM_PROMPT, POLISH_INSTRUCTION),
}
"""The public prompts a release may use (the ``prompt`` parameter), each fixed before any private text:
``paraphrase`` (the default), ``neutral`` (a plain rewrite, no comment), ``one-shot`` (``neutral`` after
a public example), ``default-system`` (``paraphrase`` under the model's own system prompt) and ``polish``
(sentences written from a release's words: what :mod:`textveil.mechanisms.polish` asks)."""


PLACEHOLDER_NOTE = "(Keep {listed} exactly as written: each stands for a detail that was removed.)"
"""A public note put after an input that holds the entity stage's placeholders, so the model copies
them rather than guessing a name: the same words for every text, naming only the placeholders."""


def with_placeholder_note(text: str) -> str:
    """``text`` with :data:`PLACEHOLDER_NOTE` after it where it holds placeholders.

    >>> print(with_placeholder_note("Ask <PERSON> in <LOCATION>, <PERSON>."))
    Ask <PERSON> in <LOCATION>, <PERSON>.
    <BLANKLINE>
    (Keep <PERSON> and <LOCATION> exactly as written: each stands for a detail that was removed.)
    >>> with_placeholder_note("No names here.")
    'No names here.'
    """
    found = list(dict.fromkeys(word for word in find_words(text) if is_placeholder(word) and word.isupper()))
    if not found:
        return text
    listed = found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]
    return f"{text}\n\n{PLACEHOLDER_NOTE.format(listed=listed)}"


INPUT_MARK = "\ue000"
"""A private-use character standing for the input where the template is split in two."""


def _template_parts(language_model: Any, prompt: str = "paraphrase") -> tuple[list[int], str, str]:
    """The template ``prompt`` split where the input starts: the opening as token ids, the rest as
    text, and the opening as text (computed once per model and prompt)."""
    cache = language_model.__dict__.setdefault("_template_parts", {})
    if prompt not in cache:
        template = PROMPTS[prompt]
        rendered = language_model.chat_text(template.system, f"{template.instruction}\n\n{INPUT_MARK}",
                                            template.example)
        head, tail = rendered.split(INPUT_MARK, 1)
        cache[prompt] = (list(language_model.encode(head)), tail, head)
    return cache[prompt]


def template_opening(language_model: Any, prompt: str = "paraphrase") -> list[int]:
    """The template's opening as token ids: the system prompt and the instruction, up to where the
    input starts. It is tokenized on its own, so every prompt starts with exactly these tokens
    whatever its input: the opening is read once, and it is a function of the public template
    alone, never of which texts share a batch."""
    return list(_template_parts(language_model, prompt)[0])


def context_prompt(language_model: Any, text: str, prompt: str, previous: tuple[str, str]) -> list[int]:
    """The template holding ``text`` after an earlier exchange: ``previous`` (the unit before it
    and the reply released for it) as a user turn with the same instruction and the assistant's
    answer. It starts with the same opening tokens as :func:`template_prompt`'s (the earlier turn
    opens as every turn does), so both kinds of prompt share the opening read once."""
    opening, _, head = _template_parts(language_model, prompt)
    template = PROMPTS[prompt]
    rendered = language_model.chat_text(template.system, f"{template.instruction}\n\n{text}", template.example,
                                        history=((f"{template.instruction}\n\n{previous[0]}", previous[1]),))
    if not rendered.startswith(head):  # pragma: no cover - a chat template that writes turns otherwise
        raise InputError(f"the language model's chat template does not open an earlier turn as it opens the "
                         f"prompt's; rewrite it with context=none")
    return list(opening) + list(language_model.encode(rendered[len(head):]))


def template_prompt(language_model: Any, text: str, prompt: str = "paraphrase") -> list[int]:
    """The template holding ``text``: its opening's tokens, then the input and the rest of the
    template tokenized together."""
    opening, tail, _ = _template_parts(language_model, prompt)
    return opening + list(language_model.encode(text + tail))



# -- the public prompts of the public-base draw --------------------------------------------------

@dataclass(frozen=True)
class PublicPrompt:
    """The public prompt of the public-base draw for one kind of text: a writer's system prompt,
    the instruction for a unit that opens a section, and the one for the next unit (after the reply
    released before it)."""

    system: str
    first: str
    following: str


PUBLIC_PROMPTS = {
    "post": PublicPrompt("You write short personal blog posts.",
                         "Write a short personal blog post in your own words.", "Write the next paragraph of the post."),
    "news": PublicPrompt("You write news articles.",
                         "Write a paragraph of a news article in your own words.",
                         "Write the next paragraph of the article."),
    "review": PublicPrompt("You write short reviews.",
                           "Write a short review of a product, a book or a place in your own words.",
                           "Write the next paragraph of the review."),
}
"""The public prompts of ``paraphrase``'s public-base score (its ``public_prompt`` parameter), one per
kind of text, fixed before any private text was read and named in the Guarantee. The model reads
the same words in both rows of a unit: the public row the instruction alone, the document's row the
unit's words first and then the same instruction (:func:`document_prompt`). The two rows differ by
the document only, so the tilt between them carries what the document says, not a change of task:
asked to "paraphrase" instead, the small model favours "Here is a rewritten version" over the
public row and writes about the task."""


def _words(kind: str) -> PublicPrompt:
    if kind not in PUBLIC_PROMPTS:
        raise InputError(f"unknown public prompt {kind!r}; use one of: {', '.join(PUBLIC_PROMPTS)}")
    return PUBLIC_PROMPTS[kind]


def _public_head(language_model: Any, kind: str) -> tuple[list[int], str]:
    """The chat of kind ``kind`` up to where the user's words start (its system turn), as token ids
    tokenized on their own and as text: what both rows of a unit start with."""
    _words(kind)
    cache = language_model.__dict__.setdefault("_public_heads", {})
    if kind not in cache:
        rendered = language_model.chat_text(PUBLIC_PROMPTS[kind].system, INPUT_MARK)
        head = rendered.split(INPUT_MARK, 1)[0]
        cache[kind] = (list(language_model.encode(head)), head)
    return cache[kind]


def public_opening(language_model: Any, kind: str) -> list[int]:
    """The tokens every prompt of the public-base draw of kind ``kind`` starts with, the document's
    row and the public row alike (the system turn, tokenized on its own): an engine reads them once.

    >>> from textveil.models.toy_language_model import toy_language_model
    >>> toy = toy_language_model(["calm", "sea"])
    >>> n = len(public_opening(toy, "post"))
    >>> n > 0 and document_prompt(toy, "post", "calm")[:n] == public_prompt(toy, "post")[:n]
    True
    """
    return list(_public_head(language_model, kind)[0])


def _public_chat(language_model: Any, kind: str, user: str, history: tuple[tuple[str, str], ...]) -> list[int]:
    opening, head = _public_head(language_model, kind)
    rendered = language_model.chat_text(PUBLIC_PROMPTS[kind].system, user, history=history)
    if not rendered.startswith(head):  # pragma: no cover - a chat template that writes turns otherwise
        raise InputError("the language model's chat template does not open every turn alike; use another score")
    return list(opening) + list(language_model.encode(rendered[len(head):]))


def public_prompt(language_model: Any, kind: str, previous_reply: str | None = None) -> list[int]:
    """The public row's prompt of kind ``kind`` (:data:`PUBLIC_PROMPTS`): it holds no word of the
    document. With ``previous_reply`` (the reply released for the unit before, public output) that
    exchange comes first and the next-paragraph instruction follows, as the document's row shows
    the unit before it."""
    words = _words(kind)
    if previous_reply is None:
        return _public_chat(language_model, kind, words.first, ())
    return _public_chat(language_model, kind, words.following, ((words.first, previous_reply),))


def document_prompt(language_model: Any, kind: str, text: str, previous: tuple[str, str] | None = None) -> list[int]:
    """The document's row's prompt of kind ``kind``: the unit ``text``, an empty line, then the
    public row's own instruction; with ``previous`` (the unit before it and the reply released for
    it), that exchange first, laid out the same way."""
    words = _words(kind)
    if previous is None:
        return _public_chat(language_model, kind, f"{text}\n\n{words.first}", ())
    return _public_chat(language_model, kind, f"{text}\n\n{words.following}",
                        ((f"{previous[0]}\n\n{words.first}", previous[1]),))


WRITE_INSTRUCTION = "{first} Write it about this:"
"""What ``select-write``'s writer is asked, after the kind's own instruction: the plan follows."""


def writer_prompt_name(kind: str) -> str:
    """The name under :data:`PROMPTS` of the writer's prompt for kind ``kind`` (a public prompt:
    the kind's system prompt and instruction, then the plan).

    >>> writer_prompt_name("news"), PROMPTS["write-news"].system
    ('write-news', 'You write news articles.')
    """
    _words(kind)
    return f"write-{kind}"


for _kind, _words_of_kind in PUBLIC_PROMPTS.items():
    PROMPTS[f"write-{_kind}"] = PromptTemplate(_words_of_kind.system, WRITE_INSTRUCTION.format(first=_words_of_kind.first))
