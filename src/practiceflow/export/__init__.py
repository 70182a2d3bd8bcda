"""Exporters: the modules as connectors for automation platforms (``practiceflow export``).

The platforms' table (here), the writer (``exporter.py``), the expression trees the JavaScript
runtimes interpret (``expression_tree.py``), and one deterministic generator per platform, so a
test compares each fresh export with the committed copy in ``connectors/``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from practiceflow.errors import ConfigError
from practiceflow.export.exporter import LISTING, Exporter, ExportResult, stale_files, write_export
from practiceflow.export.n8n import n8n_files
from practiceflow.export.powerautomate import openapi_files
from practiceflow.export.zapier import zapier_files
from practiceflow.manifest import default_registry, load_connector, load_modules
from practiceflow.manifest.loader import PathLike

__all__ = [
    "LISTING",
    "ExportResult",
    "Exporter",
    "export",
    "exporter_for",
    "exporters",
    "generate",
    "stale_files",
    "write_export",
]

#: The platforms (the CLI's PLATFORM), sorted.
_EXPORTERS: dict[str, Exporter] = {
    "n8n": n8n_files,
    "openapi": openapi_files,
    "zapier": zapier_files,
}


def exporters() -> dict[str, Exporter]:
    """Return the exporters by platform name, sorted."""
    return dict(_EXPORTERS)


def exporter_for(name: str) -> Exporter:
    """The exporter of a platform such as ``zapier`` (ConfigError listing the valid names)."""
    if name not in _EXPORTERS:
        message = f"platform: got {name!r}; valid values are {sorted(_EXPORTERS)}"
        raise ConfigError(message)
    return _EXPORTERS[name]


def generate(platform: str, modules: Iterable[PathLike] = ()) -> dict[str, str | bytes]:
    """Build one platform's export in memory, with extra module folders (``--modules DIR``).

    Raises:
        ConfigError: the platform is unknown.
        ManifestError: a module does not load or cannot be expressed on the platform.
    """
    exporter = exporter_for(platform)
    extra = list(modules)
    registry = load_modules(extra) if extra else default_registry()
    return dict(exporter(registry, load_connector()))


def export(platform: str, out: Path, modules: Iterable[PathLike] = ()) -> ExportResult:
    """Generate one platform's export and write it into ``out`` (see :func:`generate`).

    Raises:
        ConfigError: the platform is unknown, or a generated file would replace a
            hand-written one.
        ManifestError: a module does not load or cannot be expressed on the platform.
    """
    return write_export(platform, generate(platform, modules), out)
