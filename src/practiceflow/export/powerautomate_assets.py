"""The Power Automate connector's icon and README, and the names and texts they share with
its definition (:mod:`practiceflow.export.powerautomate`)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import Any

from practiceflow.export.exporter import template_text

#: The connector's title (Power Automate: at most 30 characters, no "API").
TITLE = "Practiceflow"
#: Brand colour of the icon and the connector card (not #007ee5 or #ffffff).
BRAND_COLOR = "#1b5e7a"
#: Where the swagger's host points before a connection sets the real regional host.
PLACEHOLDER_HOST = "regional-host.example.com"
#: Publisher metadata; replace the addresses with your own before certification.
METADATA = {
    "Website": "https://practiceflow.example.com",
    "Privacy policy": "https://practiceflow.example.com/privacy",
    "Categories": "Business Management;Finance",
}
DESCRIPTION = (
    "Clients, leads, bills, proposals, eForms and onboarding jobs of a practice-management "
    "platform: create and find records, download documents, and start flows on its events."
)


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def icon_png(size: int = 230) -> bytes:
    """The connector icon: a white document mark on the brand colour, as PNG bytes."""
    red, green, blue = (int(BRAND_COLOR[i : i + 2], 16) for i in (1, 3, 5))
    background = bytes((red, green, blue))
    white = b"\xff\xff\xff"
    left, right, top, bottom = (
        size * 30 // 100,
        size * 70 // 100,
        size * 22 // 100,
        size * 78 // 100,
    )
    rows = []
    for y in range(size):
        row = bytearray(b"\x00")  # filter: none
        for x in range(size):
            inside = left <= x < right and top <= y < bottom
            ruled = (y - top) % (size // 10) in (0, 1) and y > top + size // 10 and x < right - 6
            row += white if inside and not ruled else background
        rows.append(bytes(row))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    data = zlib.compress(b"".join(rows), 9)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", data)
        + _chunk(b"IEND", b"")
    )


def readme(swagger: Mapping[str, Any]) -> str:
    """The connector's README (the sections Microsoft's certification asks for)."""
    actions: list[str] = []
    triggers: list[str] = []
    for methods in swagger["paths"].values():
        for operation in methods.values():
            if not isinstance(operation, Mapping) or "operationId" not in operation:
                continue
            if operation.get("x-ms-visibility") == "internal":
                continue
            line = f"### {operation['summary']}\n{operation['description']}\n"
            (triggers if "x-ms-trigger" in operation else actions).append(line)
    skipped = swagger["info"].get("x-practiceflow-skipped", {})
    limits = "".join(f"- `{name}`: {reason}\n" for name, reason in sorted(skipped.items()))
    return template_text("powerautomate", "README.md.in").format(
        title=TITLE,
        description=DESCRIPTION,
        triggers="\n".join(triggers),
        actions="\n".join(sorted(actions)),
        host=PLACEHOLDER_HOST,
        limits=limits,
    )
