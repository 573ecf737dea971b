"""One publisher at a time: an OS file lock next to the state, released if the process dies."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from feeds.errors import StateError


@contextmanager
def exclusive(state: Path, wait: float = 30.0) -> Iterator[None]:
    """Hold the lock of a state database; wait up to `wait` seconds, then say who holds it."""
    path = state.with_name(state.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        message = f"cannot create its lock file {path}: {e.strerror}"
        raise StateError(message, file=str(state)) from e

    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                    raise StateError(
                        f"another paperfeeds process (pid {holder}) is publishing with this "
                        f"state; waited {wait:.0f}s. Try again when it has finished",
                        file=str(state),
                    ) from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
