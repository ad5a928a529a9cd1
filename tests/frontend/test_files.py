"""All-or-nothing writes: a failed write leaves no temporary file and no changed target."""

from __future__ import annotations

from pathlib import Path

import pytest

from pase.frontend.files import write_atomically


def test_writes_the_text(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_atomically(str(target), "{}\n")
    assert target.read_text(encoding="utf-8") == "{}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_directory_target_fails_and_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    with pytest.raises(OSError, match="directory"):
        write_atomically(str(tmp_path / "taken"), "text")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def test_unencodable_text_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_atomically(str(target), "\udc80")   # a lone surrogate has no UTF-8 form
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
