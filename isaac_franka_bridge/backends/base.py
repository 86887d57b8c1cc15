"""The interface every physics backend fills in. Everything else (controller, loop, ROS) is shared."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..sim.state import ArmState

FRANKA_HAND_CONTINUOUS_FORCE = 70.0  # [N] the Franka hand's continuous grasp force (its data sheet)


class PhysicsBackend(ABC):
    """A simulated Franka arm + gripper.

    The robot compensates its own gravity (as the real Franka does), so the torques given to
    `end_step` are the controller's only; gravity of an undeclared payload is not compensated.
    """

    timestep: float  # [s] one physics step
    arm_joint_names: tuple[str, ...]
    gripper_joint_names: tuple[str, ...]
    joint_names: tuple[str, ...]  # every joint, for /joint_states
    flange_to_ee: tuple[np.ndarray, np.ndarray]  # EE pose in the flange frame: translation (3), rotation (3x3)
    frame_names: tuple[str, ...]  # TF frames of `frame_poses`: links and free objects

    @abstractmethod
    def begin_step(self) -> ArmState:
        """Compute kinematics and dynamics at the current state and return the measurement."""

    @abstractmethod
    def end_step(self, tau: np.ndarray) -> None:
        """Apply the 7 arm torques (clamped to the joint torque limits) and advance one timestep."""

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

    def render_state(self) -> object:
        """A copy of what rendering needs (called by the physics thread between steps)."""
        raise NotImplementedError(f"{type(self).__name__} renders no cameras")

    def camera_renderer_factory(self, divisor: int = 1):
        """A picklable callable that makes, in the process that calls it, an object with
        render(state, camera_name) -> (h, w, 3) uint8 RGB and close(). `divisor` renders at
        1/divisor of the size and scales up."""
        raise NotImplementedError(f"{type(self).__name__} renders no cameras")

    def robot_description(self) -> str | None:
        """The robot as URDF, for RViz (None if the backend cannot describe it)."""
        return None

    def close(self) -> None:  # noqa: B027  (optional hook, most backends have nothing to release)
        """Release simulator resources."""
