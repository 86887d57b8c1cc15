"""The grippers the MuJoCo backend can mount at the flange, each from a model package on PyPI.

  Robotiq  2F-85 as shipped with the Panda in `gym-hil` (HIL-SERL's default gripper)
  Franka   the Franka hand of `dm-robotics-panda`, attached to the same arm in place of the 2F-85
  None     no gripper: the bare flange, as a robot without an end effector (or with a tool of its own)

Each says which joints franka_gripper reports (names as the real drivers publish them), how a
GripperCommand position maps to its actuator, and where its TCP is (O_T_EE's frame).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco

from .mujoco_assets import franka_hand_xml

FRANKA_FINGER_STIFFNESS = 5000.0  # [N/m] of the hand's finger servo


@dataclass(frozen=True)
class MujocoGripper:
    name: str
    tcp_offset: float  # [m] flange -> TCP along the flange z axis
    joints: tuple[str, ...]  # MJCF joints reported on franka_gripper/joint_states
    ros_joints: tuple[str, ...]  # their names as the real driver publishes them
    actuator: str
    ctrl_per_unit: float  # actuator control per unit of GripperCommand position
    ctrl_offset: float  # actuator control at position 0
    open_position: float  # GripperCommand position of a fully open gripper (its state at start-up)
    effort_limited: bool = False  # whether GripperCommand.max_effort [N] limits the actuator force

    def control(self, position: float) -> float:
        return self.ctrl_offset + self.ctrl_per_unit * position

    @property
    def present(self) -> bool:
        return bool(self.joints)

    def mount(self, spec: mujoco.MjSpec) -> None:
        """Edit the gym-hil Panda (which comes with a 2F-85) to carry this gripper."""


class RobotiqMount(MujocoGripper):
    def mount(self, spec: mujoco.MjSpec) -> None:
        pass  # gym-hil's Panda already carries it


class BareFlange(MujocoGripper):
    def mount(self, spec: mujoco.MjSpec) -> None:
        spec.delete(spec.body("base_mount"))  # the 2F-85 and everything that refers to it


class FrankaHandMount(BareFlange):
    def mount(self, spec: mujoco.MjSpec) -> None:
        super().mount(spec)
        hand = mujoco.MjSpec.from_file(franka_hand_xml())
        # the attachment body is the flange turned +135 deg; the hand sits at the flange turned -45 deg
        spec.body("attachment").add_frame(quat=[0.0, 0.0, 0.0, 1.0]).attach_body(hand.body("panda_hand"), "", "")
        # a position servo stiff enough to grasp with the hand's real force (up to 70 N continuous);
        # the force limit is set per command from GripperCommand.max_effort
        actuator = spec.actuator(self.actuator)
        actuator.gainprm[0] = FRANKA_FINGER_STIFFNESS * 0.04
        actuator.biasprm[1] = -FRANKA_FINGER_STIFFNESS


GRIPPERS: dict[str, MujocoGripper] = {
    # knuckle 0 (open) .. 0.8 rad (closed); the actuator takes 0..255
    "Robotiq": RobotiqMount(
        "Robotiq",
        0.1488,
        ("right_driver_joint",),
        ("robotiq_85_left_knuckle_joint",),
        "fingers_actuator",
        255 / 0.8,
        0.0,
        0.0,
    ),
    # each finger 0 (closed) .. 0.04 m (open); the actuator's 0..1 sets the opening
    "Franka": FrankaHandMount(
        "Franka",
        0.1034,
        ("panda_finger_joint1", "panda_finger_joint2"),
        ("panda_finger_joint1", "panda_finger_joint2"),
        "panda_hand_actuator",
        1 / 0.04,
        0.0,
        0.04,
        effort_limited=True,
    ),
    # the end effector at the flange, with no joints and no actuator
    "None": BareFlange("None", 0.0, (), (), "", 0.0, 0.0, 0.0),
}
