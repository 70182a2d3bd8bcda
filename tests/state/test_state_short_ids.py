"""Short run ids (issue 24): a unique prefix of 8+ characters finds the run on every store;
an ambiguous one lists the candidates; wildcard characters are matched literally."""

from __future__ import annotations

import pytest

from practiceflow.state import StateStore
from practiceflow.state.runids import AmbiguousRunId, find_run


def test_a_unique_prefix_finds_the_run_and_an_ambiguous_one_lists_candidates(
    store: StateStore,
) -> None:
    first, _ = store.start_run("p", "r", "e1", run_id="abcdef0011111111")
    second, _ = store.start_run("p", "r", "e2", run_id="abcdef0022222222")
    store.start_run("p", "r", "e3", run_id="abcd_f00x3333333")
    found = find_run(store, "abcdef001")
    assert found is not None
    assert found.run_id == first
    assert find_run(store, second) is not None
    assert find_run(store, "abcdef0099") is None
    assert find_run(store, "abcdef0") is None  # 7 characters: not a short id
    with pytest.raises(AmbiguousRunId) as info:
        find_run(store, "abcdef00")
    assert sorted(run.run_id for run in info.value.candidates) == [first, second]
    assert first in str(info.value)
    assert second in str(info.value)
    # '_' and '%' are literal characters of the prefix, not LIKE wildcards
    assert find_run(store, "abcd%f00") is None
    underscored = find_run(store, "abcd_f00")
    assert underscored is not None
    assert underscored.event_id == "e3"
