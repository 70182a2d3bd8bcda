"""Exporters: the same action and trigger modules as connectors for automation platforms.

This package owns ``practiceflow export PLATFORM --out DIR`` and what it writes into
``connectors/``:

* :mod:`.exporter`: the :class:`Exporter` ABC, its name -> class registry
  (:func:`exporter_for` says "valid values are ..." for an unknown name), and
  :func:`write_export`, which never overwrites a hand-written file;
* :mod:`.expression_tree`: module templates as portable expression trees for the JavaScript
  runtimes;
* :mod:`.schemas`: JSON Schema helpers (form fields, references, lists of types as
  ``anyOf``);
* :mod:`.dropdowns`: the declared choice lists (``x-choices``), named once for every platform;
* :mod:`.lists`: how list operations page on the OpenAPI platforms and what a page answers;
* :mod:`.descriptions`: operation descriptions derived from the module's text, without
  what the platform does not do;
* :mod:`.zapier`, :mod:`.n8n` (with :mod:`.n8n_text`, :mod:`.n8n_params`): one generator per
  platform; :mod:`.openapi` builds the OpenAPI 3.1 document and :mod:`.powerautomate` the
  ``openapi`` exporter with its Power Automate connector folder (:mod:`.powerautomate_assets`:
  its icon and README).

Every generator is deterministic (sorted keys, stable order), so a test can regenerate an
export and compare it with the committed copy.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from practiceflow.export import n8n as _n8n  # noqa: F401 - registers its exporter
from practiceflow.export import powerautomate as _powerautomate  # noqa: F401 - registers "openapi"
from practiceflow.export import zapier as _zapier  # noqa: F401 - registers its exporter
from practiceflow.export.exporter import (
    LISTING,
    Exporter,
    ExportResult,
    exporter_for,
    exporters,
    stale_files,
    write_export,
)
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


def generate(platform: str, modules: Iterable[PathLike] = ()) -> dict[str, str | bytes]:
    """Build one platform's export in memory.

    Args:
        platform: an exporter name (see :func:`exporters`).
        modules: extra module folders (``--modules DIR``) besides the shipped ones.

    Returns:
        Relative path -> file text (bytes for binary files such as icons).

    Raises:
        ConfigError: the platform is unknown.
        ManifestError: a module does not load or cannot be expressed on the platform.
    """
    exporter = exporter_for(platform)
    extra = list(modules)
    registry = load_modules(extra) if extra else default_registry()
    return dict(exporter.files(registry, load_connector()))


def export(platform: str, out: Path, modules: Iterable[PathLike] = ()) -> ExportResult:
    """Generate one platform's export and write it into ``out``.

    Args:
        platform: an exporter name.
        out: the export folder (hand-written files in it are left alone).
        modules: extra module folders besides the shipped ones.

    Returns:
        What was written.

    Raises:
        ConfigError: the platform is unknown, or a generated file would replace a
            hand-written one.
        ManifestError: a module does not load or cannot be expressed on the platform.
    """
    return write_export(platform, generate(platform, modules), out)
