"""From where the hand should go to what a person does with the SpaceMouse.

HIL-SERL turns a SpaceMouse into an action (franka_env/spacemouse/spacemouse_expert.py): with pyspacemouse's
values x, y, z, roll, pitch, yaw, action = [-y, x, z, -roll, -pitch, -yaw], in the robot's base frame
(SpacemouseIntervention puts it in place of the policy's; RelativeFrame, outside it, does not transform it).
FrankaEnv.step then moves the hand from its measured pose by action[:3] * ACTION_SCALE[0] and turns it by
Rotation.from_euler("xyz", action[3:6] * ACTION_SCALE[1]) (applied on the left, in the base frame), each
action component clipped to -1..1 and the result to ABS_POSE_LIMIT. The left button closes the gripper,
the right one opens it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

FULL_SCALE = 350  # counts of the device at full deflection: a value is a multiple of 1/350


SMALLEST_DEFLECTION = 1.0 / 350.0  # one count of the SpaceMouse's report (full deflection: 350 counts)


def axes_for(action: np.ndarray) -> list[float]:
    """pyspacemouse's [x, y, z, roll, pitch, yaw] that SpaceMouseExpert turns into `action` (6, base frame).

    A motion the device cannot report (every axis below one count) is scaled up to one count: below that it
    reads as the cap at rest, and SpacemouseIntervention hands the step to the policy, which undoes a fine
    alignment (seen in a train_rlpd actor run)."""
    a = np.clip(np.asarray(action, dtype=float)[:6], -1.0, 1.0)
    largest = float(np.max(np.abs(a)))
    if 0.0 < largest < SMALLEST_DEFLECTION:
        a = a * (SMALLEST_DEFLECTION / largest)
    return [float(a[1]), float(-a[0]), float(a[2]), float(-a[3]), float(-a[4]), float(-a[5])]


def action_of(axes) -> np.ndarray:
    """The action SpaceMouseExpert makes of pyspacemouse's [x, y, z, roll, pitch, yaw]."""
    x, y, z, roll, pitch, yaw = axes
    return np.array([-y, x, z, -roll, -pitch, -yaw])


@dataclass(frozen=True)
class Pose:
    """A rigid transform: position (3) and rotation; from / to [x, y, z, qx, qy, qz, qw]."""

    pos: np.ndarray
    rot: Rotation

    @classmethod
    def of(cls, pose) -> Pose:
        pose = np.asarray(pose, dtype=float)
        return cls(pose[:3].copy(), Rotation.from_quat(pose[3:7]))

    @classmethod
    def at(cls, pos, rot: Rotation | None = None) -> Pose:
        return cls(np.asarray(pos, dtype=float), rot if rot is not None else Rotation.identity())

    def __mul__(self, other: Pose) -> Pose:
        return Pose(self.pos + self.rot.apply(other.pos), self.rot * other.rot)

    def inv(self) -> Pose:
        inverse = self.rot.inv()
        return Pose(-inverse.apply(self.pos), inverse)

    def moved(self, offset) -> Pose:
        """Translated by `offset` in the parent (base) frame."""
        return Pose(self.pos + np.asarray(offset, dtype=float), self.rot)

    def as_array(self) -> np.ndarray:
        return np.concatenate([self.pos, self.rot.as_quat()])


def rotation_error(current: Rotation, goal: Rotation) -> np.ndarray:
    """The rotation vector (base frame) that turns `current` into `goal` (applied on the left)."""
    return (goal * current.inv()).as_rotvec()


def closest(current: Rotation, candidates: list[Rotation]) -> Rotation:
    """The candidate nearest `current` (an object's symmetric orientations)."""
    return min(candidates, key=lambda r: (r * current.inv()).magnitude())


def step_toward(
    hand: Pose,
    goal: Pose,
    scale: tuple[float, float],
    gain: float = 0.6,
    max_translation: float = 1.0,
    max_rotation: float = 1.0,
) -> np.ndarray:
    """The action (6) that moves the hand `gain` of the way to `goal` in one step of FrankaEnv, within
    `max_translation` / `max_rotation` of an action's range (the direction kept: a straight line)."""
    action = np.zeros(6)
    move = gain * (goal.pos - hand.pos) / scale[0]
    # FrankaEnv turns by Rotation.from_euler("xyz", action[3:6] * scale): the turn's xyz Euler angles
    turn = Rotation.from_rotvec(gain * rotation_error(hand.rot, goal.rot)).as_euler("xyz") / scale[1]
    for part, limit, out in ((move, max_translation, slice(0, 3)), (turn, max_rotation, slice(3, 6))):
        largest = float(np.max(np.abs(part)))
        action[out] = part * (limit / largest) if largest > limit else part
    return action
