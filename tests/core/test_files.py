"""Reading input files, and all-or-nothing writes: a failed write leaves no temporary file
and no changed target, and a deferred one lands only when its block succeeds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pase.core import files
from pase.core.diagnostics import LONGEST_SHOWN_LINE, Diagnostic, read_line, shown_line
from pase.core.files import (
    WriteError,
    deferred_writes,
    read_text,
    write_atomically,
    write_bytes_atomically,
)


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


def test_deferred_writes_wait_for_the_block_to_end(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old", encoding="utf-8")
    with deferred_writes():
        write_atomically(str(target), "new")
        assert target.read_text(encoding="utf-8") == "old"
    assert target.read_text(encoding="utf-8") == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


@pytest.mark.parametrize("error", [RuntimeError("a later pass failed"), SystemExit(1)])
def test_an_exception_drops_the_deferred_writes(tmp_path: Path, error: BaseException) -> None:
    target = tmp_path / "out.json"
    target.write_text("old", encoding="utf-8")

    def run_that_fails() -> None:
        with deferred_writes():
            write_atomically(str(target), "new")
            write_atomically(str(tmp_path / "other.json"), "new")
            raise error

    with pytest.raises(type(error)):
        run_that_fails()
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_deferred_writes_land_in_order_and_nest(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    with deferred_writes():
        write_atomically(str(target), "first")
        with deferred_writes():
            write_atomically(str(target), "second")
        assert not target.exists()    # the inner block hands its files to the outer one
    assert target.read_text(encoding="utf-8") == "second"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_deferred_write_fails_at_once(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    with deferred_writes():
        with pytest.raises(OSError, match="directory"):
            write_atomically(str(tmp_path / "taken"), "text")
        with pytest.raises(WriteError, match="out.json: No such file or directory"):
            write_atomically(str(tmp_path / "missing" / "out.json"), "text")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def test_writes_outside_a_block_are_immediate(tmp_path: Path) -> None:
    with deferred_writes():
        pass
    write_atomically(str(tmp_path / "out.json"), "now")
    assert (tmp_path / "out.json").read_text(encoding="utf-8") == "now"


def test_read_text(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    path.write_text("{\n  \"é\": 1}\n", encoding="utf-8")
    assert read_text(str(path)) == "{\n  \"é\": 1}\n"


def test_read_line_and_shown_line(tmp_path: Path) -> None:
    path = tmp_path / "model.dnn"
    path.write_text("one\r\ntwo\n" + "x" * (LONGEST_SHOWN_LINE + 1) + "\n", encoding="utf-8")
    assert read_line(str(path), 2) == "two"
    assert read_line(str(path), 3) is None         # too long to show
    assert read_line(str(path), 9) is None
    assert read_line(str(tmp_path / "none"), 1) is None
    assert shown_line("a\rb\nc", 2) == "c"          # lines are counted at "\n", as locations are


def test_through_a_symlink_the_named_file_changes_and_keeps_its_mode(tmp_path: Path) -> None:
    real = tmp_path / "real.mlir"
    real.write_text("old", encoding="utf-8")
    real.chmod(0o600)
    link = tmp_path / "link.mlir"
    link.symlink_to(real.name)
    write_atomically(str(link), "new")
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == "new"
    assert real.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.mlir", "real.mlir"]


def test_a_pipe_is_written_into_not_replaced(tmp_path: Path) -> None:
    import os
    import stat
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text(encoding="utf-8")))
    reader.start()
    write_atomically(str(fifo), "through the pipe\n")
    reader.join(timeout=10)
    assert received == ["through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["fifo"]


def test_two_outputs_of_one_run_to_one_file_are_an_error(tmp_path: Path) -> None:
    from pase.core.files import deferred_writes

    target = tmp_path / "out.mlir"

    def both() -> None:
        with deferred_writes():
            write_atomically(str(target), "the strategy")
            write_atomically(str(target), "the IR")

    with pytest.raises(OSError, match="another output of this run goes to the same file"):
        both()
    assert list(tmp_path.iterdir()) == []


def test_a_failing_stream_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    import os

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text("old", encoding="utf-8")

    def run() -> None:
        with deferred_writes():
            write_atomically(str(first), "new")
            write_atomically("/dev/full", "text")    # written before any file is renamed
            write_atomically(str(second), "new")

    with pytest.raises(WriteError, match="cannot write /dev/full: No space left on device"):
        run()
    assert first.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_a_descriptor_is_written_through_not_reopened(tmp_path: Path) -> None:
    import os

    log = tmp_path / "log"
    log.write_text("first\n", encoding="utf-8")
    descriptor = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        link = tmp_path / "link"
        link.symlink_to(f"/dev/fd/{descriptor}")
        write_atomically(f"/proc/self/fd/{descriptor}", "second\n")
        write_atomically(str(link), "third\n")
    finally:
        os.close(descriptor)
    assert log.read_text(encoding="utf-8") == "first\nsecond\nthird\n"
    with pytest.raises(WriteError, match=f"cannot write /dev/fd/{descriptor}: Bad file"):
        write_atomically(f"/dev/fd/{descriptor}", "closed")


def test_the_standard_output_is_written_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    print("before")
    with deferred_writes():
        write_atomically("-", "the IR\n")
        write_atomically("/dev/stdout", "the strategy\n")
        print("during")
    assert capsys.readouterr().out == "before\nduring\nthe IR\nthe strategy\n"


def test_writes_the_bytes(tmp_path: Path) -> None:
    target = tmp_path / "picture.png"
    write_bytes_atomically(str(target), b"\x89PNG\r\n\x1a\n\x00\xff")
    assert target.read_bytes() == b"\x89PNG\r\n\x1a\n\x00\xff"
    assert [p.name for p in tmp_path.iterdir()] == ["picture.png"]


def test_bytes_and_text_of_one_run_land_together_or_not_at_all(tmp_path: Path) -> None:
    picture, strategy = tmp_path / "step.png", tmp_path / "strategy.json"

    def run_that_fails() -> None:
        with deferred_writes():
            write_bytes_atomically(str(picture), b"\x00")
            write_atomically(str(strategy), "{}")
            raise RuntimeError("a later step failed")

    with pytest.raises(RuntimeError):
        run_that_fails()
    assert list(tmp_path.iterdir()) == []
    with deferred_writes():
        write_bytes_atomically(str(picture), b"\x00")
        write_atomically(str(strategy), "{}")
    assert picture.read_bytes() == b"\x00"
    assert strategy.read_text(encoding="utf-8") == "{}"


def test_bytes_to_the_standard_output_follow_its_text(
        capfd: pytest.CaptureFixture[str]) -> None:
    with deferred_writes():
        write_atomically("-", "text, ")
        write_bytes_atomically("-", b"then bytes\n")
    assert capfd.readouterr().out == "text, then bytes\n"


def test_bytes_to_a_missing_folder_fail_and_leave_nothing(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="No such file or directory"):
        write_bytes_atomically(str(tmp_path / "missing" / "step.png"), b"\x00")
    assert list(tmp_path.iterdir()) == []


def test_an_endless_file_is_an_error_not_all_of_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """`strategy=/dev/zero` read until the machine ran out of memory (found by hostile3)."""
    monkeypatch.setattr(files, "LARGEST_TEXT_FILE", 1 << 20)
    with pytest.raises(Diagnostic) as raised:
        files.read_text("/dev/zero", "strategy file")
    assert str(raised.value) == ("/dev/zero: error: the strategy file is larger than 1 MiB, "
                                 "the most pase reads of one")


def test_fifo_with_a_writer_is_read_whole(tmp_path):
    """A FIFO opened without waiting (a named FIFO with no writer is an error, not a hang:
    tests/lit/tools/fifo-input.dnn) still reads all a writer sends, however slowly."""
    import threading
    import time

    fifo = tmp_path / "in.dnn"
    os.mkfifo(fifo)
    writer_end = os.open(fifo, os.O_RDWR)  # (Linux: a writer, opened without waiting)

    def write():
        os.write(writer_end, b"a" * 100_000)  # more than a pipe holds: waits for the read
        time.sleep(0.2)
        os.write(writer_end, b"b")
        os.close(writer_end)

    writer = threading.Thread(target=write)
    writer.start()
    text = files.read_text(str(fifo))
    writer.join()
    assert text == "a" * 100_000 + "b"
