"""The Prometheus text format of a registry, as ``prometheus_client.generate_latest`` writes it,
at a fraction of its cost per line.

A replica of 10,000 practices exports about 340,000 lines (a poll-lag histogram of 17 lines
per practice, runs by status, budgets); ``generate_latest`` escapes and validates every label
of every line again, 12 us a line: 4 s of a replica's CPU per scrape, during which its
receiver answers slowly. Here each label pair is escaped once per scrape and each metric
name checked once per family. The text is the same, byte for byte
(``tests/ops/test_exposition.py`` compares them); a family of a kind this module does not
write, or a name outside the legacy character set, goes through ``generate_latest``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.utils import floatToGoString

__all__ = ["text_format"]

#: The kinds written here, with the type line each gets in the text format.
_KINDS: Final = {"counter": "counter", "gauge": "gauge", "histogram": "histogram",
                 "summary": "summary", "unknown": "untyped"}  # fmt: skip
#: Sample suffixes the text format moves to a gauge family of their own, after the family.
_APART: Final = ("_created", "_gsum", "_gcount")
_LEGACY_NAME: Final = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LEGACY_LABEL: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
#: A value as the format writes it (``+Inf``, ``1e+21``): prometheus-client's own function.
_number: Final[Callable[[float], str]] = floatToGoString


class _NotPlain(Exception):
    """A family this module does not write as ``generate_latest`` would."""


def text_format(registry: CollectorRegistry) -> bytes:
    """Every metric of ``registry`` in the text format (version 0.0.4)."""
    try:
        return _write(registry)
    except _NotPlain:
        return generate_latest(registry)


def _write(registry: CollectorRegistry) -> bytes:
    pairs: dict[tuple[str, str], str] = {}  # label="value", escaped once per scrape
    names: set[str] = set()  # the names already checked
    out: list[str] = []
    for metric in registry.collect():
        if metric.type not in _KINDS:
            raise _NotPlain
        _check(metric.name, _LEGACY_NAME)
        name = metric.name + ("_total" if metric.type == "counter" else "")
        help_text = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {help_text}\n# TYPE {name} {_KINDS[metric.type]}\n")
        apart: dict[str, list[str]] = {}
        for sample in metric.samples:
            if sample.timestamp is not None:
                raise _NotPlain
            if sample.name not in names:
                _check(sample.name, _LEGACY_NAME)
                names.add(sample.name)
            labels = ""
            if sample.labels:
                texts = []
                for pair in sorted(sample.labels.items()):
                    text = pairs.get(pair)
                    if text is None:
                        _check(pair[0], _LEGACY_LABEL)
                        text = pairs[pair] = f'{pair[0]}="{_escaped(pair[1])}"'
                    texts.append(text)
                labels = "{" + ",".join(texts) + "}"
            line = f"{sample.name}{labels} {_number(sample.value)}\n"
            suffix = sample.name[len(metric.name) :]
            if suffix in _APART and sample.name.startswith(metric.name):
                apart.setdefault(suffix, []).append(line)
            else:
                out.append(line)
        for suffix, lines in sorted(apart.items()):
            out.append(f"# HELP {metric.name}{suffix} {help_text}\n")
            out.append(f"# TYPE {metric.name}{suffix} gauge\n")
            out.extend(lines)
    return "".join(out).encode("utf-8")


def _check(name: str, legal: re.Pattern[str]) -> None:
    if legal.fullmatch(name) is None:
        raise _NotPlain


def _escaped(value: str) -> str:
    """A label value as the text format quotes it."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
