"""The run-unique marker: where it goes, when it is off, how it is recognised."""

from __future__ import annotations

from practiceflow.hooks.read_backs import marker_in
from practiceflow.manifest import default_registry
from practiceflow.runner.step_executor import add_marker, marker_enabled, marker_for

ACTIONS = default_registry().actions


def test_the_marker_is_stable_per_run_and_step_and_differs_between_them() -> None:
    one = marker_for("run-a", "bill")
    assert one == marker_for("run-a", "bill")
    assert one != marker_for("run-b", "bill")
    assert one != marker_for("run-a", "bill[1]")
    assert marker_in(f"Onboarding [{one}]") == one
    assert marker_in("pf-nothex") is None
    assert marker_in(None) is None


def test_the_marker_goes_into_the_free_field_and_keeps_the_callers_value() -> None:
    tag = marker_for("r", "s")
    assert (
        add_marker(ACTIONS["create_bill"], {"billDetails": "Fees"}, tag)["billDetails"]
        == f"Fees [{tag}]"
    )
    assert add_marker(ACTIONS["create_bill"], {"entityKey": "k"}, tag)["billDetails"] == f"[{tag}]"
    assert add_marker(ACTIONS["create_client"], {"entityName": "A"}, tag)["externalSystemID"] == tag
    own = {"externalSystemID": "crm-1"}
    assert add_marker(ACTIONS["create_client"], own, tag) == own
    data = {"entityKey": "k"}
    assert add_marker(ACTIONS["send_eform"], data, tag) is data


def test_marker_false_on_the_recipe_or_a_step_turns_it_off() -> None:
    steps = [{"id": "a"}, {"id": "b", "marker": False}, {"id": "c", "marker": True}]
    assert marker_enabled({"steps": steps}, "a")
    assert not marker_enabled({"steps": steps}, "b")
    off = {"marker": False, "steps": steps}
    assert not marker_enabled(off, "a")
    assert marker_enabled(off, "c")


def test_a_bill_text_cut_short_by_the_service_keeps_the_marker_read_back_open() -> None:
    """The service may cut a long billDetails, the marker with it: a row holding a leading
    part of what was sent is no proof of absence (the write would be repeated)."""
    from practiceflow.hooks.read_backs import _bill_by_marker, _BillReader

    tag = marker_for("run", "bill")
    sent = f"Onboarding services [{tag}]"
    reader = _BillReader(client=None, entity_key="k")  # type: ignore[arg-type]
    cut = [{"billingID": 1, "billDetails": "Onboarding serv"}]
    assert _bill_by_marker(reader, cut, tag, "span", sent) is None
    other = [{"billingID": 2, "billDetails": "Annual fees [pf-0123456789]"}]
    verdict = _bill_by_marker(reader, other, tag, "span", sent)
    assert verdict is not None
    assert verdict.outcome == "absent"
    ours = [*other, {"billingID": 3, "billDetails": sent}]
    found = _bill_by_marker(reader, ours, tag, "span", sent)
    assert found is not None
    assert found.outcome == "found"
