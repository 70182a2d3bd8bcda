"""The exporter registry and how generated files are written next to hand-written ones."""

from __future__ import annotations

import json

import pytest

from practiceflow.errors import ConfigError
from practiceflow.export import LISTING, exporter_for, exporters, stale_files, write_export


def test_registry_lists_the_platforms():
    assert set(exporters()) >= {"openapi", "zapier"}


def test_unknown_platform_says_which_are_valid():
    with pytest.raises(ConfigError, match=r"platform: got 'zappier'; valid values are \["):
        exporter_for("zappier")


def test_export_writes_files_and_a_listing(tmp_path):
    result = write_export("demo", {"a.txt": "A\n", "lib/b.txt": "B\n"}, tmp_path)
    assert set(result.written) == {"a.txt", "lib/b.txt", LISTING}
    listing = json.loads((tmp_path / LISTING).read_text())
    assert listing["files"] == ["a.txt", "lib/b.txt"]
    assert stale_files("demo", {"a.txt": "A\n", "lib/b.txt": "B\n"}, tmp_path) == []


def test_export_never_overwrites_a_hand_written_file(tmp_path):
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "harness.js").write_text("// mine\n")
    write_export("demo", {"a.txt": "A\n"}, tmp_path)
    with pytest.raises(ConfigError, match=r"refusing to overwrite .*'test/harness.js'"):
        write_export("demo", {"a.txt": "A\n", "test/harness.js": "// generated\n"}, tmp_path)
    assert (tmp_path / "test" / "harness.js").read_text() == "// mine\n"


def test_export_removes_files_it_no_longer_generates_but_keeps_others(tmp_path):
    (tmp_path / "keep.md").write_text("notes\n")
    write_export("demo", {"old.txt": "1\n", "a.txt": "A\n"}, tmp_path)
    result = write_export("demo", {"a.txt": "A\n"}, tmp_path)
    assert result.removed == ("old.txt",)
    assert result.unchanged == ("a.txt",)
    assert not (tmp_path / "old.txt").exists()
    assert (tmp_path / "keep.md").exists()


def test_stale_files_names_changed_missing_and_leftover_files(tmp_path):
    write_export("demo", {"a.txt": "A\n", "gone.txt": "G\n"}, tmp_path)
    assert stale_files("demo", {"a.txt": "changed\n", "new.txt": "N\n"}, tmp_path) == [
        LISTING,
        "a.txt",
        "gone.txt",
        "new.txt",
    ]
