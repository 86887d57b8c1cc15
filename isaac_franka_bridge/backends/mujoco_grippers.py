"""The grippers the MuJoCo backend can mount at the flange, each from a model package on PyPI.

  Robotiq  2F-85 as shipped with the Panda in `gym-hil` (HIL-SERL's default gripper)
  Franka   the Franka hand of `dm-robotics-panda`, attached to the same arm in place of the 2F-85
  None     no gripper: the bare flange, as a robot without an end effector (or with a tool of its own)

Each says which joints franka_gripper reports (names as the real drivers publish them), how a
GripperCommand position maps to its actuator, how its squeeze force [N] maps to the actuator's
force limit, and where its TCP is (O_T_EE's frame).

Squeeze calibration (each jaw's normal force on a static box between the pads, 2 and 4 cm wide,
tests/test_mujoco_grippers.py keeps it):
  Robotiq  8.9 N per unit of the 2F-85's tendon force, linear from 2.5 to 10 units; gym-hil's
           +-5 default gives 45 N, the force the original Robotiq server asks for (force byte 30)
  Franka   the hand's tendon splits its force between the fingers (coef 0.5): 2 units per newton;
           the finger servo is stiff enough that 130 N binds 5 mm before the grasp width
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco

from .base import FRANKA_HAND_CONTINUOUS_FORCE
from .mujoco_assets import franka_hand_xml

FRANKA_FINGER_STIFFNESS = 40000.0  # [N/m] of the hand's finger servo, so that the force limit binds
# the 2F-85's finger servo made this many times stiffer than gym-hil's (kp 100 per tendon unit), so that its
# force limit binds on a thin object as on a wide one: the real gripper squeezes with its force setting
# whatever the width (gym-hil's servo, near its closed end on a 3 mm RAM stick, squeezed 15 N instead of 45)
ROBOTIQ_SERVO_STIFFENING = 10.0
PAD_SOLREF, PAD_SOLIMP = [0.004, 1.0], [0.95, 0.99, 0.001, 0.5, 2.0]  # gym-hil's 2F-85 pads
# the fingers' pads: rubber (the 2F-85's silicone pads; the Franka hand's fingertips) on the objects, about 1
# (gym-hil gives the 2F-85's pads 0.7 and 0.6); the pads' friction wins over the object's (priority 1)
PAD_FRICTION = 1.0
# and their contact patch: a pad pressed on an object touches over an area, which resists a twist about the
# pad's normal (a RAM stick pushed up at its end by a slot's end wall, 67 mm from the grip). MuJoCo's point
# contacts have no area; condim 4 adds torsional friction (MuJoCo's default coefficient 0.005 m: a patch of
# about 5 mm effective radius). With condim 3, 10 N at the stick's end turned it 1 deg per second in the
# 2F-85's pads; with 4 it holds (tests/test_mujoco_grippers.py)
PAD_CONDIM, PAD_TORSION = 4, 0.005
ROBOTIQ_NEWTONS_PER_UNIT = 8.9  # [N] squeeze per unit of the 2F-85 tendon force (measured, see above)
ROBOTIQ_DEFAULT_FORCE = 45.0  # [N] gym-hil's force limit (+-5), about the original server's force byte 30


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
    closed_position: float  # ... of a fully closed one
    units_per_newton: float = 0.0  # actuator force limit per newton of squeeze (0: no force limit to set)
    default_effort: float = 0.0  # [N] squeeze for a GripperCommand with no max_effort
    # [rad] the EE frame's turn about the flange's z axis: Franka's EE convention for a hand (-45 deg);
    # with no gripper, the EE is the flange itself (what the robot reports without an end effector)
    ee_yaw: float = -math.pi / 4

    def force_limit(self, max_effort: float) -> float:
        """The actuator's force limit for a squeeze of `max_effort` [N] (non-positive: the default)."""
        return self.units_per_newton * (max_effort if max_effort > 0.0 else self.default_effort)

    def control(self, position: float) -> float:
        return self.ctrl_offset + self.ctrl_per_unit * position

    @property
    def present(self) -> bool:
        return bool(self.joints)

    def mount(self, spec: mujoco.MjSpec) -> None:
        """Edit the gym-hil Panda (which comes with a 2F-85) to carry this gripper."""


def set_pad(geom) -> None:
    """A finger's pad: the friction and contact patch of a rubber pad."""
    geom.friction[0], geom.friction[1], geom.condim = PAD_FRICTION, PAD_TORSION, PAD_CONDIM


class RobotiqMount(MujocoGripper):
    def mount(self, spec: mujoco.MjSpec) -> None:
        # gym-hil's Panda already carries it: its pads get real pads' friction, its servo the stiffness at
        # which the force limit binds on any object (the force limit itself is set per command)
        for side in ("left", "right"):
            for i in (1, 2):
                set_pad(spec.geom(f"{side}_pad{i}"))
        actuator = spec.actuator(self.actuator)
        actuator.gainprm[0] *= ROBOTIQ_SERVO_STIFFENING
        actuator.biasprm[1] *= ROBOTIQ_SERVO_STIFFENING
        actuator.biasprm[2] *= math.sqrt(ROBOTIQ_SERVO_STIFFENING)  # the same damping ratio


class BareFlange(MujocoGripper):
    def mount(self, spec: mujoco.MjSpec) -> None:
        spec.delete(spec.body("base_mount"))  # the 2F-85 and everything that refers to it


class FrankaHandMount(BareFlange):
    def mount(self, spec: mujoco.MjSpec) -> None:
        super().mount(spec)
        hand = mujoco.MjSpec.from_file(franka_hand_xml())
        # the attachment body is the flange turned +135 deg; the hand sits at the flange turned -45 deg
        spec.body("attachment").add_frame(quat=[0.0, 0.0, 0.0, 1.0]).attach_body(hand.body("panda_hand"), "", "")
        # a position servo stiff enough that the force limit, set per command from
        # GripperCommand.max_effort, is what holds an object (the real hand grasps by force)
        actuator = spec.actuator(self.actuator)
        actuator.gainprm[0] = FRANKA_FINGER_STIFFNESS * 0.04
        actuator.biasprm[1] = -FRANKA_FINGER_STIFFNESS
        # fingertips as hard as the 2F-85's pads, so that a grasp reads the object's width (the
        # default contact sinks 12 mm into a 4 cm cube at 130 N)
        for finger in ("panda_leftfinger", "panda_rightfinger"):
            pad = spec.geom(f"{finger}_collision")
            pad.solref, pad.solimp, pad.priority = PAD_SOLREF, PAD_SOLIMP, 1
            set_pad(pad)


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
        0.8,
        units_per_newton=1.0 / ROBOTIQ_NEWTONS_PER_UNIT,
        default_effort=ROBOTIQ_DEFAULT_FORCE,
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
        0.0,
        units_per_newton=2.0,
        default_effort=FRANKA_HAND_CONTINUOUS_FORCE,
    ),
    # the end effector at the flange, with no joints and no actuator
    "None": BareFlange("None", 0.0, (), (), "", 0.0, 0.0, 0.0, 0.0, ee_yaw=0.0),
}
