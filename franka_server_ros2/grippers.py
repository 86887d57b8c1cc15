"""The original gripper servers (HIL-SERL robot_servers/*_gripper_server.py), over ROS 2's GripperCommand.

Each route of the original (activate, reset, open, close, close_slow, move) becomes a `GripperGoal`
in the units of the driver's control_msgs/GripperCommand action and franka_gripper/joint_states,
or None where the original sends nothing. What the originals do is kept, odd parts included
(docs/differences.md lists them): a Robotiq move keeps the speed of the previous command, and the
Franka hand remembers a binary open/closed state and sends no open (close) while it believes it is
open (closed). One deliberate exception: a Robotiq "open" goes to position 0 (fully open) by default,
as on the set-up behind HIL-SERL's results, not to the published server's 175 (`robotiq_open_position`
reproduces that: docs/differences.md gives the evidence).

GripperCommand carries no speed: `GripperGoal.stroke_s` (the time a full stroke takes at the
original's speed) is what the server's ramp of goals turns into motion at that speed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GripperGoal:
    position: float  # GripperCommand position (the driver's joint units)
    max_effort: float  # [N] grasp force; 0 = a move with the gripper's own force
    stroke_s: float  # [s] a full stroke at the commanded speed


class GripperModel:
    """One gripper as the original server drives it; one instance per server (it may keep state)."""

    name: str
    open_position: float  # GripperCommand position of the fully open gripper
    closed_position: float  # ... of the fully closed one

    def gripper_pos(self, joint_positions: np.ndarray) -> float:
        """The original server's normalised opening: about 1 open, 0 closed."""
        raise NotImplementedError

    def action_position(self, joint_positions: np.ndarray) -> float:
        """The current opening in GripperCommand units (the first joint's position)."""
        return float(joint_positions[0])

    def activate(self) -> GripperGoal | None:
        return None

    def reset(self) -> GripperGoal | None:
        return None

    def open(self) -> GripperGoal | None:
        raise NotImplementedError

    def close(self) -> GripperGoal | None:
        raise NotImplementedError

    def close_slow(self) -> GripperGoal | None:
        raise NotImplementedError

    def move(self, value: int) -> GripperGoal | None:
        """/move_gripper's 0..255 (already int() and clipped, as the original route does)."""
        raise NotImplementedError


# Robotiq 2F-85 (robotiq_gripper_server.py): register bytes rPR (position, 0 open .. 255 closed),
# rSP (speed) and rFR (force), as its datasheet scales them
ROBOTIQ_STROKE = 0.085  # [m]
ROBOTIQ_SPEED = (0.020, 0.150)  # [m/s] at rSP 0 and 255
ROBOTIQ_FORCE = (20.0, 235.0)  # [N] at rFR 0 and 255
ROBOTIQ_KNUCKLE_CLOSED = 0.8  # [rad] GripperCommand position (left knuckle joint) at rPR 255
# rPR of /open_gripper. The published robotiq_gripper_server.py sends 175 (the gripper then reads 0.31);
# HIL-SERL's own env code shows that an opened Robotiq read above 0.85 on the set-up behind its results
# (FrankaEnv closes only above 0.85, GripperPenaltyWrapper uses 0.9, usb_pickup_insertion's reward wants
# > 0.4 after release), so a full open is the default and 175 the parameter's value for the published one
ROBOTIQ_OPEN_POSITION = 0
ROBOTIQ_PUBLISHED_OPEN_POSITION = 175


def _byte_scale(byte: int, low_high: tuple[float, float]) -> float:
    low, high = low_high
    return low + byte / 255.0 * (high - low)


class RobotiqGripper(GripperModel):
    """gripper_pos = 1 - gPO/255. Activation: rACT 1, rGTO 1, rSP 255, rFR 30 and rPR 0 (open);
    open = rPR `open_byte` (0 by default, the published server's 175 if asked), close = 255, both at rSP 255;
    close_slow = 255 at rSP 50; move = rPR at the last rSP."""

    name = "Robotiq"
    open_position = 0.0
    closed_position = ROBOTIQ_KNUCKLE_CLOSED
    SPEED, SLOW_SPEED, FORCE = 255, 50, 30

    def __init__(self, open_byte: int = ROBOTIQ_OPEN_POSITION) -> None:
        if not 0 <= int(open_byte) <= 255:
            raise ValueError(f"robotiq_open_position {open_byte} must be 0..255")
        self.open_byte = int(open_byte)
        self.speed = self.SPEED  # the register keeps the last speed: a move goes at it
        self.force = self.FORCE

    def gripper_pos(self, joint_positions: np.ndarray) -> float:
        return 1.0 - self.byte_of(float(joint_positions[0])) / 255.0

    def byte_of(self, position: float) -> float:
        """gPO (0..255) of a knuckle position."""
        return 255.0 * min(max(position / self.closed_position, 0.0), 1.0)

    def _goal(self, byte: int, speed: int | None = None) -> GripperGoal:
        if speed is not None:
            self.speed = speed
        return GripperGoal(
            position=byte / 255.0 * self.closed_position,
            max_effort=_byte_scale(self.force, ROBOTIQ_FORCE),
            stroke_s=ROBOTIQ_STROKE / _byte_scale(self.speed, ROBOTIQ_SPEED),
        )

    def activate(self) -> GripperGoal:
        self.force = self.FORCE
        return self._goal(0, self.SPEED)

    def reset(self) -> GripperGoal:
        return self.activate()  # deactivate (rACT 0), then activate

    def open(self) -> GripperGoal:
        return self._goal(self.open_byte, self.SPEED)

    def close(self) -> GripperGoal:
        return self._goal(255, self.SPEED)

    def close_slow(self) -> GripperGoal:
        return self._goal(255, self.SLOW_SPEED)

    def move(self, value: int) -> GripperGoal:
        return self._goal(value)


# Franka hand (franka_gripper_server.py): franka_gripper move / grasp goals; GripperCommand
# position is one finger's travel, half the width
FRANKA_MAX_WIDTH = 0.08  # [m]


class FrankaHand(GripperModel):
    """gripper_pos = (sum of both fingers) / 0.08. open = move to 0.09 m at 0.3 m/s; close = grasp to
    0.01 m (epsilon 1 m: any width succeeds) with 130 N at 0.3 m/s; close_slow the same at 0.1 m/s;
    each only when the remembered binary state differs (it starts open); move = value / 2550 m."""

    name = "Franka"
    open_position = FRANKA_MAX_WIDTH / 2.0
    closed_position = 0.0
    OPEN_WIDTH, GRASP_WIDTH, GRASP_FORCE, SPEED, SLOW_SPEED = 0.09, 0.01, 130.0, 0.3, 0.1

    def __init__(self) -> None:
        self.closed = False  # the original's binary_gripper_pose: 0 (open) at start, whatever the fingers do

    def gripper_pos(self, joint_positions: np.ndarray) -> float:
        return float(np.sum(joint_positions)) / FRANKA_MAX_WIDTH

    @staticmethod
    def _goal(width: float, force: float, speed: float) -> GripperGoal:
        return GripperGoal(position=width / 2.0, max_effort=force, stroke_s=FRANKA_MAX_WIDTH / speed)

    def open(self) -> GripperGoal | None:
        if not self.closed:
            return None
        self.closed = False
        return self._goal(self.OPEN_WIDTH, 0.0, self.SPEED)

    def _grasp(self, speed: float) -> GripperGoal | None:
        if self.closed:
            return None
        self.closed = True
        return self._goal(self.GRASP_WIDTH, self.GRASP_FORCE, speed)

    def close(self) -> GripperGoal | None:
        return self._grasp(self.SPEED)

    def close_slow(self) -> GripperGoal | None:
        return self._grasp(self.SLOW_SPEED)

    def move(self, value: int) -> GripperGoal:
        return self._goal(value / 2550.0, 0.0, self.SPEED)


GRIPPERS: dict[str, type[GripperModel]] = {"Robotiq": RobotiqGripper, "Franka": FrankaHand}


def make_gripper(gripper_type: str, robotiq_open_position: int = ROBOTIQ_OPEN_POSITION) -> GripperModel | None:
    """The original server's gripper of `gripper_type` (None for 'None'); ValueError for an unknown type."""
    if gripper_type == "None":
        return None
    if gripper_type not in GRIPPERS:
        raise ValueError(f"gripper_type '{gripper_type}' must be one of {[*GRIPPERS, 'None']}")
    if gripper_type == "Robotiq":
        return RobotiqGripper(robotiq_open_position)
    return GRIPPERS[gripper_type]()
