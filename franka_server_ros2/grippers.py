"""The grippers the original server drives, as seen through ROS 2 (control_msgs/GripperCommand).

Each maps the server's vocabulary (open, close, a 0..255 position, `gripper_pos` ~1 open / ~0
closed) onto the joint units of its driver's GripperCommand action and joint_states topic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GripperModel:
    name: str
    open_position: float  # action position when fully open (joint units)
    closed_position: float  # action position when fully closed
    max_effort: float  # [N] for open/close
    slow_close_s: float  # [s] a full close at the slow speed of close_gripper_slow

    def gripper_pos(self, joint_positions: np.ndarray) -> float:
        """The original server's normalised opening: about 1 open, 0 closed."""
        raise NotImplementedError

    def action_position(self, joint_positions: np.ndarray) -> float:
        """The current opening in GripperCommand units (the first joint's position)."""
        return float(joint_positions[0])

    def position_from_255(self, value: float) -> float:
        """Action position for the Robotiq-style 0 (open) .. 255 (closed) command of /move_gripper."""
        fraction = min(max(value, 0.0), 255.0) / 255.0
        return self.open_position + fraction * (self.closed_position - self.open_position)


class RobotiqGripper(GripperModel):
    """Robotiq 2F-85: knuckle joint 0 (open) .. 0.8 rad (closed); gripper_pos = 1 - gPO/255."""

    def gripper_pos(self, joint_positions: np.ndarray) -> float:
        gpo = 255.0 * min(max(float(joint_positions[0]) / self.closed_position, 0.0), 1.0)
        return 1.0 - gpo / 255.0


class FrankaHand(GripperModel):
    """Franka hand: two finger joints, 0 .. 0.04 m each; gripper_pos = (sum of both) / 0.08."""

    def gripper_pos(self, joint_positions: np.ndarray) -> float:
        return float(np.sum(joint_positions)) / 0.08


GRIPPERS: dict[str, GripperModel] = {
    # slow close: the original server's speed byte 50 of 255 (about 45 mm/s over the 85 mm stroke)
    "Robotiq": RobotiqGripper("Robotiq", 0.0, 0.8, 130.0, 1.9),
    # slow close: the original server's grasp at 0.1 m/s instead of 0.3 m/s, over the 80 mm stroke
    "Franka": FrankaHand("Franka", 0.04, 0.0, 70.0, 0.8),
}
