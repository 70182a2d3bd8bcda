"""The variant matrix of the test suite (see tests/conftest.py)."""

from __future__ import annotations

import os

import pytest

from practiceflow.testing import SandboxHandle

#: Variants of the matrix, comma-separated (``make test-variants`` sets it per variant).
VARIANTS_ENV = "PRACTICEFLOW_TEST_VARIANTS"


def variant_matrix() -> list[str]:
    """The variants a ``@pytest.mark.variants`` test runs under: ``default`` and
    ``hostile``, or the comma-separated list in ``PRACTICEFLOW_TEST_VARIANTS`` (presets,
    ``random:SEED`` or ``TOPIC=ANSWER``; ``make test-variants`` sets it)."""
    given = os.environ.get(VARIANTS_ENV, "")
    return [item.strip() for item in given.split(",") if item.strip()] or ["default", "hostile"]


def play_variant(handle: SandboxHandle, variant: str | None) -> None:
    """Make a (reset) sandbox play ``variant``: a preset or ``TOPIC=ANSWER``."""
    if not variant or variant == "default":
        return
    if "=" in variant:
        topic, _, answer = variant.partition("=")
        handle.admin("POST", "/_admin/variants", {"set": {topic: answer}})
    else:
        handle.admin("POST", "/_admin/variants", {"preset": variant})


def requested_variant(request: pytest.FixtureRequest) -> str | None:
    """The ``variant`` parameter of the test asking, if it runs under the matrix."""
    callspec = getattr(request.node, "callspec", None)
    value = callspec.params.get("variant") if callspec is not None else None
    return str(value) if value is not None else None
