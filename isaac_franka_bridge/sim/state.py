"""The data that crosses the backend / loop / ROS boundaries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


@dataclass
class ArmState:
    """What a backend measures at the start of a physics tick (base frame, SI units)."""

    q: np.ndarray  # (7,) joint positions
    dq: np.ndarray  # (7,) joint velocities
    tau_measured: np.ndarray  # (7,) link-side joint torques (gravity included), as tau_J
    position: np.ndarray  # (3,) end-effector position
    rotation: np.ndarray  # (3, 3) end-effector orientation
    quat: np.ndarray  # (4,) the same orientation, (x, y, z, w)
    jacobian: np.ndarray  # (6, 7) zero Jacobian at the end effector, linear rows first
    coriolis: np.ndarray  # (7,) C(q, dq) dq


class RobotSnapshot(NamedTuple):
    """One consistent state of the simulated robot, published with a single stamp (every state tick).

    A named tuple, not a dataclass: one is made every state tick, and a frozen dataclass costs several
    times more to build."""

    stamp: float  # simulated time [s]
    q: np.ndarray
    dq: np.ndarray
    tau_measured: np.ndarray
    position: np.ndarray
    quat: np.ndarray  # (x, y, z, w)
    twist: np.ndarray  # (6,) O_dP_EE = J dq (linear, angular), base frame
    wrench: np.ndarray  # (6,) K_F_ext_hat_K: external wrench in the stiffness (end-effector) frame
    jacobian: np.ndarray  # (6, 7)
    gripper_positions: np.ndarray
    mode: str


class JointSnapshot(NamedTuple):
    """Every joint and frame of the robot (for /joint_states and TF), taken only where they are published."""

    joint_positions: np.ndarray  # of the backend's joint_names
    joint_velocities: np.ndarray
    frame_positions: np.ndarray  # (n, 3) of the backend's frame_names, base frame
    frame_quats: np.ndarray  # (n, 4) (x, y, z, w)
