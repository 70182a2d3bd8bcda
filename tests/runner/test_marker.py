"""The run-unique marker: where it goes, when it is off, how it is recognised."""

from __future__ import annotations

from practiceflow.runner.marker import add_marker, enabled, marker_for, marker_in


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
    assert add_marker("create_bill", {"billDetails": "Fees"}, tag)["billDetails"] == f"Fees [{tag}]"
    assert add_marker("create_bill", {"entityKey": "k"}, tag)["billDetails"] == f"[{tag}]"
    assert add_marker("create_client", {"entityName": "A"}, tag)["externalSystemID"] == tag
    own = {"externalSystemID": "crm-1"}
    assert add_marker("create_client", own, tag) == own
    data = {"entityKey": "k"}
    assert add_marker("send_eform", data, tag) is data


def test_marker_false_on_the_recipe_or_a_step_turns_it_off() -> None:
    steps = [{"id": "a"}, {"id": "b", "marker": False}, {"id": "c", "marker": True}]
    assert enabled({"steps": steps}, "a")
    assert not enabled({"steps": steps}, "b")
    off = {"marker": False, "steps": steps}
    assert not enabled(off, "a")
    assert enabled(off, "c")
