"""What a person at a terminal does to HIL-SERL's input(): types a line and Enter, then waits until it was read.

HandOffEnv's two arms reset in two threads that both wait in input(). Two lines that reach the pipe together can be
read by one thread's readline, the other's lost (TextIOWrapper is not thread-safe), which leaves the second arm's
reset waiting for ever. A person reads the second prompt before pressing Enter again; `type_line` waits likewise.
Used by scripts/hil_serl.py (its Prompter) and the tests (tests/hil_serl.py)."""

from __future__ import annotations

import array
import fcntl
import termios
import time
from collections.abc import Callable
from typing import BinaryIO


def unread(pipe: BinaryIO) -> int:
    """Bytes written to `pipe` that its reader has not read yet (FIONREAD answers on either end of a pipe)."""
    count = array.array("i", [0])
    fcntl.ioctl(pipe.fileno(), termios.FIONREAD, count)
    return count[0]


def type_line(pipe: BinaryIO, line: str = "", read_within: float = 10.0, alive: Callable[[], bool] = lambda: True):
    """Writes `line` and Enter to `pipe`, then waits (up to `read_within` s, while `alive()`) until it was read."""
    pipe.write((line + "\n").encode())
    pipe.flush()
    deadline = time.monotonic() + read_within
    while unread(pipe) and time.monotonic() < deadline and alive():
        time.sleep(0.01)
