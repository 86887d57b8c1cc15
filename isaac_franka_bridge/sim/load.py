"""Gravity of a load at the flange, as joint torques: what holds it, and what a wrong declaration leaves.

The real robot compensates its own weight plus the load declared with set_load; an undeclared (or
wrongly declared) load sags the arm and reads as an external wrench. The holding torque is computed
from the end-effector Jacobian (the flange and the EE are one rigid body), so every backend shares it.
"""

from __future__ import annotations

import numpy as np

GRAVITY = 9.81  # [m/s^2]


def skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def load_point(position: np.ndarray, rotation: np.ndarray, flange_to_ee, center_of_mass: np.ndarray) -> np.ndarray:
    """Base-frame position of a load's centre of mass given in the flange frame."""
    translation, rot_f_ee = flange_to_ee  # EE pose in the flange frame
    rot_flange = rotation @ rot_f_ee.T
    flange = position - rot_flange @ translation
    return flange + rot_flange @ center_of_mass


def holding_torque(
    jacobian: np.ndarray,
    position: np.ndarray,
    rotation: np.ndarray,
    flange_to_ee,
    mass: float,
    center_of_mass: np.ndarray,
) -> np.ndarray:
    """Joint torques (7) that hold `mass` at `center_of_mass` (flange frame) against gravity."""
    if mass <= 0.0:
        return np.zeros(7)
    lever = load_point(position, rotation, flange_to_ee, center_of_mass) - position
    # v_point = v_ee + w x lever = v_ee - [lever]x w
    jacobian_point = jacobian[:3] - skew(lever) @ jacobian[3:]
    return jacobian_point.T @ np.array([0.0, 0.0, mass * GRAVITY])
