"""The server's GripperCommand goals for the Franka hand as franka_gripper's own move and grasp actions.

franka_gripper also serves a GripperCommand action, but the server's goals do not fit it: the original
server opens the hand to 0.09 m, more than the hand's 0.08 m (franka_gripper aborts a GripperCommand
wider than its maximum); it grasps with epsilon 1 m so that any width counts as a grasp (franka_gripper's
GripperCommand uses its 5 mm default); and the server turns the original's speeds into a stream of goals
(GripperCommand has no speed), which would start one libfranka command per goal. So goals go through
this bridge: the width is clamped into the hand's range, a goal with a force is a grasp with the
original's epsilon, and while one command runs only the newest goal waits (the ones in between are
dropped), so the hand ends where the last goal says.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

HAND_MAX_WIDTH = 0.08  # [m]


@dataclass(frozen=True)
class HandCommand:
    kind: str  # "move" or "grasp"
    width: float  # [m] between the fingers
    speed: float  # [m/s]
    force: float = 0.0  # [N] grasp only
    epsilon_inner: float = 0.0  # [m] grasp only: how much narrower than `width` still counts as a grasp
    epsilon_outer: float = 0.0  # [m] ... wider


def hand_command(
    position: float,
    max_effort: float,
    speed: float,
    max_width: float = HAND_MAX_WIDTH,
    grasp_epsilon: float = 1.0,
) -> HandCommand:
    """A GripperCommand goal (position: one finger's travel, half the width; max_effort [N], 0 = a move)."""
    if not (position == position and max_effort == max_effort):  # NaN
        raise ValueError("gripper goal with a non-finite position or effort")
    width = min(max(2.0 * float(position), 0.0), max_width)
    if max_effort > 0.0:
        return HandCommand("grasp", width, speed, float(max_effort), grasp_epsilon, grasp_epsilon)
    return HandCommand("move", width, speed)


class LatestCommand:
    """One command runs at a time; of those that arrive meanwhile only the newest is kept."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._pending: tuple[int, HandCommand] | None = None
        self._sequence = 0
        self._closed = False

    def put(self, command: HandCommand) -> tuple[int, int | None]:
        """Queue `command`; returns its number and that of the command it replaced (one not started yet)."""
        with self._condition:
            self._sequence += 1
            replaced = self._pending[0] if self._pending is not None else None
            self._pending = (self._sequence, command)
            self._condition.notify_all()
            return self._sequence, replaced

    def take(self, timeout: float | None = None) -> tuple[int, HandCommand] | None:
        """The newest command not started yet (waits up to `timeout`); None when there is none or on close."""
        with self._condition:
            if self._pending is None and not self._closed:
                self._condition.wait(timeout)
            taken, self._pending = self._pending, None
            return None if self._closed else taken

    @property
    def newest(self) -> int:
        with self._condition:
            return self._sequence

    @property
    def closed(self) -> bool:
        with self._condition:
            return self._closed

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._condition.notify_all()
