"""Personal values in shipped examples that look real (issue 35: samples must not carry
real-looking personal data): an email outside the domains reserved for examples, an
Australian phone number outside the ranges ACMA keeps for fiction, and identification
numbers that pass their own check digits (a tax file number, an ABN, a South African ID
number), since a number that passes its check may well be someone's."""

from __future__ import annotations

import re
from datetime import datetime

#: Domains reserved for examples (RFC 2606, RFC 6761).
_RESERVED_DOMAIN = re.compile(r"(^|\.)(example\.(com|net|org)|example|test|invalid|localhost)$")
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")
_AU_PHONE = re.compile(r"(?<![\w+])(?:\+61 ?|0)([2-478](?:[ -]?\d){8})(?!\w)")
#: ACMA's numbers for drama and examples: (0x) 5550 xxxx, (0x) 7010 xxxx, 0491 57x xxx.
_FICTIONAL_PHONE = re.compile(r"^(?:[2378](?:5550|7010)\d{4}|49157\d{4})$")
#: A quoted string that is all digits (spaces allowed), as an example value is written.
_NUMBER = re.compile(r"[\"'](\d[\d ]{7,16}\d)[\"']")


def _tfn_valid(digits: str) -> bool:
    weights = (1, 4, 3, 7, 5, 8, 6, 9, 10)
    return sum(int(d) * w for d, w in zip(digits, weights, strict=True)) % 11 == 0


def _abn_valid(digits: str) -> bool:
    weights = (10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19)
    values = [int(digits[0]) - 1, *(int(d) for d in digits[1:])]
    return sum(v * w for v, w in zip(values, weights, strict=True)) % 89 == 0


def _sa_id_valid(digits: str) -> bool:
    try:
        datetime.strptime(digits[:6], "%y%m%d")  # a date of birth: no time, no zone
    except ValueError:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        value = int(d) * (2 if i % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


_CHECKED = {9: ("a valid tax file number", _tfn_valid), 11: ("a valid ABN", _abn_valid)}
_CHECKED[13] = ("a valid South African ID number", _sa_id_valid)


def real_looking(where: str, text: str) -> list[str]:
    """``"<what> <value> in <where>"`` for each real-looking personal value in ``text``."""
    found = [
        f"an email at {match.group(1)} in {where}"
        for match in _EMAIL.finditer(text)
        if not _RESERVED_DOMAIN.search(match.group(1).lower())
    ]
    for match in _AU_PHONE.finditer(text):
        digits = re.sub(r"\D", "", match.group(1))
        if not _FICTIONAL_PHONE.match(digits):
            found.append(f"the phone number {match.group(0)!r} in {where}")
    for match in _NUMBER.finditer(text):
        digits = match.group(1).replace(" ", "")
        what, valid = _CHECKED.get(len(digits), ("", None))
        if valid is not None and valid(digits):
            found.append(f"{what} {digits} in {where}")
    return found
