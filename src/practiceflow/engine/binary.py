"""File answers (PDF, zip): the destination, checked before sending, and streaming there.

The body is never held in memory: :meth:`practiceflow.api.Client.download` streams it beside
the target and renames it when complete.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from practiceflow.errors import Issue


@runtime_checkable
class DownloadClient(Protocol):
    """A client that can stream a body to disk (as :class:`practiceflow.api.Client`)."""

    def download(
        self,
        path: str,
        dest: str | os.PathLike[str],
        *,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """Stream a body to ``dest``; return an object with path, size, sha256, content_type."""


def resolve_destination(to: Any, filename: Any, field: str) -> tuple[Path | None, Issue | None]:
    """Turn the rendered ``download.to`` (and ``filename``) into the file to write."""
    if not isinstance(to, str | os.PathLike) or not str(to).strip():
        return None, Issue("input", 0, 0, field, f"got {to!r}; expected a file or folder path")
    target = Path(to).expanduser()
    if target.is_dir():
        name = Path(str(filename)).name if filename else ""
        if not name or name in (".", ".."):
            message = f"got the folder {str(target)!r}; give a file path to write"
            return None, Issue("input", 0, 0, field, message)
        return target / name, None
    if not target.parent.is_dir():
        message = (
            f"got {str(target)!r}; its folder {str(target.parent)!r} does not exist "
            "(create it first, or give an existing folder)"
        )
        return None, Issue("input", 0, 0, field, message)
    return target, None


def download_output(result: Any) -> dict[str, Any]:
    """The output of a download: ``{path, fileName, size, sha256, contentType}``."""
    path = Path(result.path)
    return {
        "path": str(path),
        "fileName": path.name,
        "size": int(result.size),
        "sha256": str(result.sha256),
        "contentType": result.content_type,
    }
