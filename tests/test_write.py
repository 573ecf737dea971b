"""The writer: every file lands whole, whether written at once (small) or by its thread
(large); unchanged ones are kept; an error on either side stops the writing and reaches
the caller."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from feeds.errors import PublishError
from feeds.publish import write
from feeds.publish.write import Writer

BIG = Writer.INLINE_BELOW  # bytes: a file this size goes to the thread


def big(tag: int | str) -> bytes:
    return str(tag).encode().ljust(BIG, b".")


def test_writes_every_file_and_keeps_unchanged_ones(tmp_path: Path) -> None:
    for name, data in (("same.html", b"same"), ("same-big.html", big("same"))):
        (tmp_path / name).write_bytes(data)
        os.utime(tmp_path / name, (1, 1))
    with Writer(depth=1) as out:  # depth 1: the caller waits often
        for i in range(2500):
            out.write(tmp_path / "deep" / f"{i}.html", big(i) if i % 5 == 0 else b"%d" % i)
        out.write(tmp_path / "same.html", b"same")
        out.write(tmp_path / "same-big.html", big("same"))
        out.write(tmp_path / "deep" / "0.html", big("last"))  # after big(0), on the thread
    assert (out.written, out.unchanged) == (2501, 2)
    assert (tmp_path / "deep" / "0.html").read_bytes() == big("last")
    for i in range(1, 2500):
        assert (tmp_path / "deep" / f"{i}.html").read_bytes() == (
            big(i) if i % 5 == 0 else b"%d" % i
        )
    assert (tmp_path / "same.html").stat().st_mtime == 1  # not rewritten
    assert (tmp_path / "same-big.html").stat().st_mtime == 1
    assert sorted(p.name for p in tmp_path.rglob(".*")) == []  # no temp file left


@pytest.mark.parametrize("size", [1, BIG], ids=["written-at-once", "by-the-thread"])
def test_a_write_error_reaches_the_caller_and_stops_the_writing(tmp_path: Path, size: int) -> None:
    (tmp_path / "taken").write_text("a file where a folder should be")

    def write_three() -> None:
        with Writer() as out:
            out.write(tmp_path / "a.html", b"a" * size)
            out.write(tmp_path / "taken" / "b.html", b"b" * size)
            out.write(tmp_path / "c.html", b"c" * size)

    with pytest.raises(PublishError) as caught:
        write_three()
    assert str(caught.value) == f"cannot write {tmp_path / 'taken' / 'b.html'}: Not a directory"
    assert isinstance(caught.value.__cause__, NotADirectoryError)
    assert (tmp_path / "a.html").read_bytes() == b"a" * size
    assert not (tmp_path / "c.html").exists()  # after the error: not written


def test_an_error_of_the_caller_stops_the_writer_and_is_the_one_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Boom(Exception):
        pass

    writers: list[Writer] = []
    in_hand = threading.Event()

    def write_when_told_to_stop(path: Path, data: bytes) -> tuple[bool, write.Stamp]:
        if not in_hand.is_set():  # the first file is still in hand when the caller fails
            in_hand.set()
            deadline = time.monotonic() + 10
            while not writers[0]._stop and time.monotonic() < deadline:
                time.sleep(0.001)
        return real_write_file(path, data)

    real_write_file = write.write_file
    monkeypatch.setattr(write, "write_file", write_when_told_to_stop)

    def write_then_fail() -> None:
        with Writer(depth=100) as out:
            writers.append(out)
            for i in range(50):
                out.write(tmp_path / f"{i}.html", big(i))
            assert in_hand.wait(10)
            raise Boom

    with pytest.raises(Boom):
        write_then_fail()
    assert not writers[0]._thread.is_alive()
    # The file in hand is finished; the 49 queued after it are not written.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.html"]
