"""What the routes need of a robot, and nothing of ROS: the server is built over this interface.

`FrankaRosClient` (robot_client.py) implements it over the contract's ROS 2 topics, services and
actions, for the simulated and the real arm alike; the route tests use a stand-in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np
from scipy.spatial.transform import Rotation

from .grippers import GripperGoal, GripperModel


class RobotUnavailable(RuntimeError):
    """The robot (simulated or real) does not answer: no state yet, or a service that is not there."""


class RobotRefused(RuntimeError):
    """The robot answered a command with a refusal (500 with its reason)."""


@dataclass(frozen=True)
class StateSnapshot:
    stamp: float  # header stamp of the control tick [s]
    received: float  # [s] wall-clock time (time.time()) its joint_states arrived
    pose: np.ndarray  # (7,) x, y, z, qx, qy, qz, qw
    vel: np.ndarray  # (6,)
    force: np.ndarray  # (3,)
    torque: np.ndarray  # (3,)
    q: np.ndarray
    dq: np.ndarray
    jacobian: np.ndarray  # (6, 7)
    gripper_pos: float

    def euler_pose(self) -> np.ndarray:
        return np.concatenate([self.pose[:3], Rotation.from_quat(self.pose[3:]).as_euler("xyz")])


class TriggerResult(NamedTuple):
    success: bool
    message: str


@dataclass
class ServerSettings:
    """What the routes read of the server's configuration (its node keeps it current)."""

    workspace_min: np.ndarray  # the box /pose accepts, base frame [m]
    workspace_max: np.ndarray
    state_timeout: float = 0.75  # [s] older state is stale
    controller: str = "impedance"  # impedance: franka_server's routes; wrench: franka_eggflip_server's
    world_servers: tuple[str, ...] = ()  # the other servers of the robot's world (GET /cameras lists them)
    state_wait: float = 2.0  # [s] a request finding it stale waits this long for a fresh one, then answers 503


class Robot(Protocol):
    gripper: GripperModel | None  # the original gripper server's model; None without a gripper
    robot_mode: str | None  # impedance, idle, joint_reset, reflex: ...; None before the first

    @property
    def state_age(self) -> float | None:
        """Seconds since the last state arrived (None before the first)."""

    def state(self) -> StateSnapshot:
        """The newest consistent state; RobotUnavailable when there is none or it is stale."""

    def move(self, position: np.ndarray, quat: np.ndarray) -> None:
        """A new equilibrium pose for the impedance controller."""

    def trigger(self, name: str, timeout: float = 5.0) -> TriggerResult:
        """Call a robot service: error_recovery, joint_reset, start, stop."""

    def compliance_parameter_ranges(self) -> dict[str, tuple[float, float] | None]:
        """The controller's writable parameters and their ranges (None: unbounded)."""

    def set_parameters(self, node: str, values: dict[str, object]) -> tuple[bool, str]:
        """Set parameters of cartesian_impedance_controller or franka_control, all or none."""

    def wait_for_gripper(self) -> None:
        """RobotUnavailable if the gripper does not answer."""

    def command_gripper(self, goal: GripperGoal) -> None:
        """Send a gripper goal without waiting for the motion."""

    def warn(self, message: str) -> None:
        """Log a warning where the robot's node logs."""

    def send_wrench(self, wrench: np.ndarray) -> None:
        """A target wrench (force, torque; base frame) for the Cartesian wrench controller."""

    def reset_wrench_controller(self) -> None:
        """Ask the wrench controller to move the arm back to its reset configuration."""

    def task_state(self) -> dict:
        """The simulated task's ground truth (GET /task); RobotUnavailable where there is none."""

    def place_object(self, place: str) -> TriggerResult:
        """Put the object of the simulated world's `place` there (a person's part between episodes)."""
