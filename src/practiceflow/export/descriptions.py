"""Descriptions of exported operations, derived from the module's own text.

A module's description is written for the runner; a sentence naming an input field the
operation does not carry, or something only the runner does (:data:`RUNNER_ONLY`), is left out
(a first sentence is cut before it), and what the operation itself does is added.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from practiceflow.export.expression_tree import local_fields
from practiceflow.manifest.models import ActionModule

#: Phrases of what only this machine does: save a download to a file, run a module's hooks
#: and pre-send checks, report warnings. No export does these (Zapier and n8n included).
LOCAL_ONLY = (
    "writes it to a file",
    "the file's path",
    "reported as a warning",
    "checked against the settings lists",
    "checks this",
)
#: Phrases of what the runner (and the Zapier and n8n runtimes, which run the module's plan)
#: does beyond one request: paging for the caller, limits, local matching, output maps.
PLAN_ONLY = (
    "page by page",
    "pages through",
    "stops at limit",
    "hasmore says",
    "hasmore is true when",
    "matched here",
    "as a query parameter as given",
    "is returned as",
)
#: What an operation of one request (OpenAPI, Power Automate) must not promise.
RUNNER_ONLY = PLAN_ONLY + LOCAL_ONLY
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_TRAILING = re.compile(r"(?:[\s,;:(]|\b(?:and|with|or)\b)+$")
#: A cut first sentence must keep at least this many words, else the title stands in.
_MIN_WORDS = 3


def _mentions(text: str, missing: Iterable[str], phrases: Iterable[str]) -> list[tuple[int, str]]:
    """Where each of the phrases and missing fields a text mentions starts in it."""
    lowered = text.lower()
    found = [(lowered.find(phrase), phrase) for phrase in phrases]
    for name in missing:
        match = re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text)
        found.append((match.start() if match else -1, name))
    return [(at, what) for at, what in found if at >= 0]


def runner_only_mentions(
    text: str, missing: Iterable[str], phrases: Iterable[str] = RUNNER_ONLY
) -> list[str]:
    """The ``phrases`` and ``missing`` input fields a description mentions."""
    return [what for _, what in _mentions(text, missing, phrases)]


def export_description(
    description: str,
    title: str,
    missing: Iterable[str],
    extra: Iterable[str] = (),
    phrases: Iterable[str] = RUNNER_ONLY,
) -> str:
    """The description of an exported operation, as one paragraph (``title`` stands in for
    an emptied first sentence; ``extra``: sentences on the operation itself; ``phrases``:
    :data:`RUNNER_ONLY` for one request, :data:`LOCAL_ONLY` where the plan runs)."""
    names = sorted(set(missing))
    said = tuple(phrases)
    sentences = _SENTENCE.split(" ".join(description.split()))
    kept: list[str] = []
    for index, sentence in enumerate(sentences):
        offences = _mentions(sentence, names, said)
        if not offences:
            kept.append(sentence)
            continue
        if index == 0:
            head = _TRAILING.sub("", sentence[: min(offences)[0]]).strip()
            kept.append(head + "." if len(head.split()) >= _MIN_WORDS else title + ".")
    kept.extend(text for text in extra if text)
    return " ".join(kept)


def plan_description(action: ActionModule) -> str:
    """The description of an action on a platform that runs its plan (Zapier, n8n)."""
    missing = local_fields(action)
    return export_description(action.description, action.title, missing, (), LOCAL_ONLY)
