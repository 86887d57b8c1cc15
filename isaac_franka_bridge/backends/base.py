"""The interface every physics backend fills in. Everything else (controller, loop, ROS) is shared.

A backend simulates a world (`PhysicsWorld`: one physics step, shared by all) holding one or more
robots (`PhysicsRobot`: one arm and its gripper, measured and commanded in its own base frame).
What a backend can simulate is declared as data (`Capabilities`) and checked before it loads.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..sim.state import ArmState
from ..world import DEFAULT_CUBE, WorldSpec

FRANKA_HAND_CONTINUOUS_FORCE = 70.0  # [N] the Franka hand's continuous grasp force (its data sheet)


@dataclass(frozen=True)
class Capabilities:
    """What a backend can simulate, checked against a world before anything loads."""

    grippers: tuple[str, ...]  # gripper types it can mount
    cameras: bool  # whether it renders cameras
    max_robots: int  # robots in one world
    objects: bool = True  # builds the world's objects (False: only the default cube)
    contacts: bool = True  # reports what touches what (False: a task's success is not computed)

    def refusal(self, backend: str, world: WorldSpec) -> str | None:
        """Why `world` cannot run on this backend, or None."""
        if len(world.robots) > self.max_robots:
            return (
                f"the {backend} backend simulates at most {self.max_robots} robot(s); the world has {len(world.robots)}"
            )
        for r in world.robots:
            if r.gripper_type not in self.grippers:
                return (
                    f"the {backend} backend mounts no gripper_type '{r.gripper_type}' "
                    f"(it has {', '.join(self.grippers)})"
                )
            if r.cameras and not self.cameras:
                return f"the {backend} backend renders no cameras: set cameras_config:=none"
        if not self.objects and world.objects != (DEFAULT_CUBE,):
            return f"the {backend} backend builds only the default cube, not the world's objects"
        return None


class PhysicsRobot(ABC):
    """One simulated Franka arm + gripper in a world, in its own base frame (panda_link0).

    The robot compensates its own gravity (as the real Franka does), so the torques given to
    `set_torque` are the controller's only; gravity of an undeclared payload is not compensated.
    """

    arm_joint_names: tuple[str, ...]
    gripper_joint_names: tuple[str, ...]
    joint_names: tuple[str, ...]  # every joint of the robot, for its joint_states
    flange_to_ee: tuple[np.ndarray, np.ndarray]  # EE pose in the flange frame: translation (3), rotation (3x3)
    frame_names: tuple[str, ...]  # TF frames of `frame_poses` (links, cameras), without the robot's prefix

    @abstractmethod
    def measure(self) -> ArmState:
        """The measurement at the current state (valid after the world's begin_step)."""

    @abstractmethod
    def set_torque(self, tau: np.ndarray) -> None:
        """The 7 arm torques (clamped to the joint torque limits) for the world's next end_step."""

    @abstractmethod
    def external_torque(self) -> np.ndarray:
        """External joint torques (7) acting on the arm in the last step (contacts, pushes)."""

    @abstractmethod
    def joint_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities of every joint in `joint_names`."""

    @abstractmethod
    def frame_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (n, 3) and (x, y, z, w) quaternions (n, 4) of `frame_names`, base frame."""

    @abstractmethod
    def gripper_positions(self) -> np.ndarray:
        """Positions of the joints in `gripper_joint_names`."""

    @abstractmethod
    def command_gripper(self, position: float, max_effort: float) -> None:
        """Drive the gripper toward `position` (units of its first joint), squeezing with at most `max_effort` [N].

        A non-positive `max_effort` means the gripper's own default force."""

    @abstractmethod
    def set_external_wrench(self, wrench: np.ndarray) -> None:
        """Apply a constant wrench (force, torque; base frame) at the end effector until changed."""

    @abstractmethod
    def set_payload(self, mass: float, center_of_mass: np.ndarray, inertia: np.ndarray) -> None:
        """Attach a rigid load at the flange: mass [kg], centre of mass (flange frame) [m], 3x3 inertia.

        Its weight is not compensated by the simulator (the controller compensates the declared load).
        """

    @abstractmethod
    def set_arm_configuration(self, q: np.ndarray) -> None:
        """Teleport the arm to `q` at rest (start-up only)."""

    def robot_description(self) -> str | None:
        """The robot as URDF, for RViz (None if the backend cannot describe it)."""
        return None


class PhysicsWorld(ABC):
    """The simulated world: its robots (in the order of the world's spec) and free objects."""

    capabilities: Capabilities
    timestep: float  # [s] one physics step
    robots: tuple[PhysicsRobot, ...]
    frame_names: tuple[str, ...]  # TF frames of free objects and world-fixed cameras, world frame

    @abstractmethod
    def begin_step(self) -> None:
        """Compute kinematics and dynamics at the current state: robots can be measured."""

    @abstractmethod
    def end_step(self) -> None:
        """Advance one timestep with the torques the robots were given."""

    def frame_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (n, 3) and (x, y, z, w) quaternions (n, 4) of `frame_names`, world frame."""
        return np.zeros((0, 3)), np.zeros((0, 4))

    def start(self) -> None:  # noqa: B027  (optional hook: most worlds start as built)
        """Once, after the robots' start configurations are set and before the first step: put what
        the grippers hold at start into them (world.py's `mount: gripper`)."""

    def reset_objects(self) -> None:
        """Every object back where the world started it (held ones back in their grippers), at rest."""
        raise NotImplementedError(f"{type(self).__name__} cannot put its objects back yet")

    def place_object(self, name: str, position: np.ndarray, quat: np.ndarray) -> None:
        """The free object `name` at `position` with the (x, y, z, w) quaternion `quat` (world frame), at rest:
        what a person does who puts it in a holder (world.py's places)."""
        raise NotImplementedError(f"{type(self).__name__} cannot place objects yet")

    @abstractmethod
    def object_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (n, 3) and (x, y, z, w) quaternions (n, 4) of every object of the world's spec,
        in its order, world frame (the task's ground truth)."""

    @abstractmethod
    def contacts(self) -> set[frozenset[str]]:
        """Which pairs touch now, named as task.py names them (objects, table, <ns>/gripper, <ns>/arm)."""

    def render_state(self) -> object:
        """A copy of what rendering needs (called by the physics thread between steps)."""
        raise NotImplementedError(f"{type(self).__name__} renders no cameras")

    def camera_renderer_factory(self, divisor: int = 1):
        """A picklable callable that makes, in the process that calls it, an object with
        render(state, camera_name) -> (h, w, 3) uint8 RGB and close(). `divisor` renders at
        1/divisor of the size and scales up."""
        raise NotImplementedError(f"{type(self).__name__} renders no cameras")

    def close(self) -> None:  # noqa: B027  (optional hook, most backends have nothing to release)
        """Release simulator resources."""
