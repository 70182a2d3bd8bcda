"""Checks of ``create_bill``: the client must be Active, and the ledger rules of spec 4.1:
with a ledger connected, each line needs ``extAccountID`` or ``extItemID``, and ``extTaxID``
or a ``taxPercent`` within 0.02 of a ledger tax rate (both answers read tolerantly).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from practiceflow.errors import NotFoundError
from practiceflow.hooks import tolerant
from practiceflow.hooks.action_context import ActionContext, register_check
from practiceflow.templating import filter_pathseg

#: How far a taxPercent may be from a ledger rate and still match (percentage points).
TAX_TOLERANCE = 0.02
_EPSILON = 1e-9
LEDGER_STATUS = "/api/v1/bills/ledger/status"
LEDGER_TAX_RATES = "/api/v1/bills/ledger/tax-rates"


@register_check("entity_is_active_client")
def entity_is_active_client(ctx: ActionContext) -> None:
    """entityKey must name an Active client of the practice, not a lead."""
    key = ctx.input.get("entityKey")
    if not isinstance(key, str):
        return
    try:
        entity = ctx.read(f"/api/v1/entities/{filter_pathseg(key)}")
    except NotFoundError:
        ctx.problem(("entityKey",), f"got {key!r}; no client has this entityKey in the practice")
        return
    status = tolerant.entity_status(entity)
    if status is None:
        ctx.warnings.append("entityKey not checked: the client record carries no status")
    elif status.strip().lower() != "active":
        message = (
            f"the client's status is {status!r}; bills need an Active client "
            "(convert a lead first with the convert_lead action)"
        )
        ctx.problem(("entityKey",), message)


@register_check("ledger_rules")
def ledger_rules(ctx: ActionContext) -> None:
    """When a ledger is connected, each line needs ledger account/item and tax references."""
    lines = ctx.input.get("lineItems")
    if not isinstance(lines, list):
        return
    connected = tolerant.flag(ctx.read(LEDGER_STATUS))
    if connected is None:
        unknown = f"could not tell from {LEDGER_STATUS} whether a ledger is connected"
        ctx.warnings.append(f"ledger rules not checked: {unknown}")
    if not connected:  # not connected, or not known (warned)
        return
    rates: list[float] | None = None
    for index, line in enumerate(lines):
        if not isinstance(line, Mapping):
            continue
        if line.get("extAccountID") is None and line.get("extItemID") is None:
            ctx.problem(
                ("lineItems", index),
                "needs extAccountID or extItemID: the practice's ledger is connected",
            )
        if line.get("extTaxID") is not None:
            continue
        percent = line.get("taxPercent")
        if percent is None:
            ctx.problem(
                ("lineItems", index),
                "needs extTaxID, or a taxPercent that matches a ledger tax rate: the "
                "practice's ledger is connected",
            )
            continue
        if rates is None:
            rates = tolerant.rates(ctx.read(LEDGER_TAX_RATES))
            if not rates:
                ctx.warnings.append(
                    f"taxPercent not matched: could not read rates from {LEDGER_TAX_RATES}"
                )
        if rates and not _matches(percent, rates):
            shown = ", ".join(f"{rate:g}" for rate in sorted(set(rates)))
            message = (
                f"got taxPercent {percent!r}; no ledger tax rate is within ±{TAX_TOLERANCE} "
                f"of it; ledger rates are [{shown}] (or give extTaxID)"
            )
            ctx.problem(("lineItems", index, "taxPercent"), message)


def _matches(percent: Any, rates: list[float]) -> bool:
    if isinstance(percent, bool) or not isinstance(percent, int | float):
        return False
    return any(abs(float(percent) - rate) <= TAX_TOLERANCE + _EPSILON for rate in rates)
