"""Text for n8n nodes: TypeScript literals (:func:`ts`) and the casing rules that
``n8n-node lint`` (strict) checks on display names, action texts and descriptions."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
# n8n's lint checks display names with the npm ``title-case`` package and actions with
# ``sentence-case``; these patterns follow that package's documented rules.
_SMALL_WORDS = re.compile(
    r"\b(?:an?d?|a[st]|because|but|by|en|for|i[fn]|neither|nor|o[fnr]|only|over|per|so|some"
    r"|tha[tn]|the|to|up|upon|vs?\.?|versus|via|when|with|without|yet)\b",
    re.IGNORECASE,
)
_TOKENS = re.compile(r"[^\s:\u2013\u2014-]+|.", re.DOTALL)
_MANUAL_CASE = re.compile(r".(?=[A-Z]|\..)")
_WORD_CHAR = re.compile(r"[A-Za-z0-9\u00C0-\u00FF]")
#: Words n8n wants in capitals wherever they appear (``Id`` -> ``ID``, ``Url`` -> ``URL``).
_ACRONYMS = (
    (re.compile(r"\b[iI]d(s?)\b"), r"ID\1"),
    (re.compile(r"\b[uU]rl(s?)\b"), r"URL\1"),
    (re.compile(r"\b[jJ]son\b"), "JSON"),
)


_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(text: str) -> str:
    """A single-quoted TypeScript string literal (no needless escapes)."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "'" + "".join(out) + "'"


def ts(value: Any, indent: int = 0) -> str:
    """A JSON-like value as a TypeScript literal (tabs, single quotes, bare keys) at nesting
    depth ``indent``."""
    pad = "\t" * (indent + 1)
    end = "\t" * indent
    if isinstance(value, str):
        return _string(value)
    if value is None:
        return "null"
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        lines = []
        for key, child in value.items():
            name = key if _IDENT.match(key) else _string(key)
            lines.append(f"{pad}{name}: {ts(child, indent + 1)},")
        return "{\n" + "\n".join(lines) + "\n" + end + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        if all(not isinstance(item, Mapping | list | tuple) for item in value):
            inline = "[" + ", ".join(ts(item) for item in value) + "]"
            if len(inline) < 80:
                return inline
        lines = [f"{pad}{ts(item, indent + 1)}," for item in value]
        return "[\n" + "\n".join(lines) + "\n" + end + "]"
    message = f"cannot write {type(value).__name__} as TypeScript"
    raise TypeError(message)


def _acronyms(text: str) -> str:
    for pattern, replacement in _ACRONYMS:
        text = pattern.sub(replacement, text)
    return text


def title_case(text: str) -> str:
    """Title Case as n8n display names use it: ``Client entity id`` -> ``Client Entity ID``.

    Small words stay lower case except first and last; words with capitals inside
    (``eForm``, ``ID``) are kept; each part of a hyphenated word is capitalised.
    """
    text = _acronyms(" ".join(text.split()))
    out = []
    for match in _TOKENS.finditer(text):
        token, index = match.group(0), match.start()
        small = _SMALL_WORDS.search(token) is not None
        at_edge = index == 0 or index + len(token) == len(text)
        if not _MANUAL_CASE.search(token) and (not small or at_edge):
            token = _WORD_CHAR.sub(lambda m: m.group(0).upper(), token, count=1)
        out.append(token)
    return "".join(out)


def sentence_case(text: str) -> str:
    """An operation's ``action`` text: words lower case (acronyms kept), first one capitalised
    (``List practice-management staff`` -> ``List practice management staff``)."""
    words = [word for word in re.split(r"[^A-Za-z0-9]+", text) if word]
    kept = [word if word.isupper() and len(word) > 1 else word.lower() for word in words]
    joined = " ".join(kept)
    return joined[:1].upper() + joined[1:]


def describe(text: str) -> str:
    """A parameter description as n8n's lint wants it: one line, first letter capitalised,
    ``ID`` / ``URL`` / ``JSON`` in capitals, a final period only on several sentences."""
    flat = _acronyms(" ".join(text.split()).strip())
    if not flat:
        return flat
    flat = flat[:1].upper() + flat[1:]
    single = len(flat.replace("e.g.", "", 1).split(". ")) == 1
    if single:
        return flat.rstrip(".")
    return flat if flat.endswith((".", "!", "?")) else flat + "."


def camel(text: str) -> str:
    """``client entities`` -> ``clientEntities``."""
    words = re.split(r"[^A-Za-z0-9]+", text)
    words = [word for word in words if word]
    return words[0].lower() + "".join(word[:1].upper() + word[1:] for word in words[1:])


def first_sentence(text: str) -> str:
    """The first sentence of a text, as :func:`describe` shapes it."""
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", flat)
    return describe(match.group(1) if match else flat)
