"""Checks and hooks of the lead actions: source and status are sent by NAME (spec 2.3).

``GET /api/v1/settings/lead-sources`` and ``/lead-statuses`` list the valid names; their
shape is not shown, so :mod:`practiceflow.hooks.tolerant` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from practiceflow.hooks import tolerant
from practiceflow.hooks.action_context import ActionContext, register_check, register_hook
from practiceflow.manifest.validation import hint

#: Input field -> settings list that holds its valid names.
SETTINGS: Mapping[str, str] = {
    "leadSource": "/api/v1/settings/lead-sources",
    "leadStatus": "/api/v1/settings/lead-statuses",
}


def _known(ctx: ActionContext, field: str) -> list[str]:
    return tolerant.names(ctx.read(SETTINGS[field]))


@register_hook("canonical_lead_names", reads=True)
def canonical_lead_names(ctx: ActionContext) -> Mapping[str, Any] | None:
    """Send leadSource / leadStatus with the practice's own spelling when only case differs."""
    changed = dict(ctx.input)
    for field in SETTINGS:
        value = ctx.input.get(field)
        if not isinstance(value, str):
            continue
        known = _known(ctx, field)
        if value in known:
            continue
        folded = {name.strip().lower(): name for name in known}
        canonical = folded.get(value.strip().lower())
        if canonical is not None:
            changed[field] = canonical
            ctx.warnings.append(
                f"{field} {value!r} sent as {canonical!r} (the practice's spelling)"
            )
    return changed if changed != ctx.input else None


@register_check("lead_settings_names")
def lead_settings_names(ctx: ActionContext) -> None:
    """leadSource and leadStatus must be names from the practice's settings lists."""
    for field, path in SETTINGS.items():
        value = ctx.input.get(field)
        if not isinstance(value, str):
            continue
        known = _known(ctx, field)
        if not known:
            ctx.warnings.append(f"{field} not checked: could not read names from {path}")
            continue
        if value in known:
            continue
        shown = ", ".join(repr(name) for name in known[:20])
        tip = (hint(value, known, "") + " ").lstrip()
        ctx.problem((field,), f"got {value!r}; {tip}valid names (from {path}) are [{shown}]")
