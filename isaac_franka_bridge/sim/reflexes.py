"""The robot's reflexes: limits that, when exceeded, stop the arm until error recovery.

As on the real Franka, exceeding a contact-force, joint-position, joint-velocity or torque limit (or
leaving the Cartesian workspace box) puts the robot in a reflex state in which it holds still and
ignores commands until `error_recovery` is called. A joint within `joint_position_margin` of its limit trips
the reflex only while it moves toward the limit, so that after the recovery it can be moved away.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

# Franka Panda datasheet
JOINT_LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
JOINT_UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
JOINT_VELOCITY_LIMIT = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])
JOINT_TORQUE_LIMIT = np.array([87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])
INTO_LIMIT = 1e-3  # [rad/s] a joint within its position margin moving this fast toward the limit trips the reflex


@dataclass
class ReflexLimits:
    enabled: bool = True
    contact_force: float = 60.0  # [N] norm of the estimated external force at the end effector
    joint_position_margin: float = 0.01  # [rad] reflex this close to a joint's mechanical limit
    joint_velocity_scale: float = 1.0  # fraction of the datasheet velocity limits
    torque_scale: float = 1.0  # fraction of the datasheet torque limits, on the commanded torque
    workspace_min: np.ndarray = field(default_factory=lambda: np.array([-0.9, -0.9, -0.05]))
    workspace_max: np.ndarray = field(default_factory=lambda: np.array([0.9, 0.9, 1.3]))

    @functools.cached_property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of (q, dq, commanded torque, EE position) stacked, as `check` applies them
        (a set of limits is replaced whole, never changed in place)."""
        margin = self.joint_position_margin
        velocity = self.joint_velocity_scale * JOINT_VELOCITY_LIMIT
        torque = self.torque_scale * JOINT_TORQUE_LIMIT
        lower = np.concatenate((JOINT_LOWER + margin, -velocity, -torque, self.workspace_min))
        upper = np.concatenate((JOINT_UPPER - margin, velocity, torque, self.workspace_max))
        return lower, upper


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0]) + 1


def check(
    limits: ReflexLimits,
    q: np.ndarray,
    dq: np.ndarray,
    tau_commanded: np.ndarray,
    position: np.ndarray,
    external_force: np.ndarray,
) -> str | None:
    """The reflex this state triggers, as the robot would name it, or None."""
    if not limits.enabled:
        return None
    force = math.sqrt(float(external_force @ external_force))
    if force > limits.contact_force:
        return f"cartesian_reflex: external force {force:.1f} N > {limits.contact_force:g} N"
    # every limit at once (this runs every other tick); which one, only when one is exceeded
    lower, upper = limits.bounds
    state = np.concatenate((q, dq, tau_commanded, position))
    if not ((state < lower) | (state > upper)).any():
        return None
    margin = limits.joint_position_margin
    # a joint within the margin trips the reflex while it moves on toward its limit: after an error recovery it
    # can move away again, as the real arm can (standing still there, it would trip again at every check)
    outside = ((q < JOINT_LOWER + margin) & (dq < -INTO_LIMIT)) | ((q > JOINT_UPPER - margin) & (dq > INTO_LIMIT))
    fast = np.abs(dq) > limits.joint_velocity_scale * JOINT_VELOCITY_LIMIT
    strong = np.abs(tau_commanded) > limits.torque_scale * JOINT_TORQUE_LIMIT
    box = (position < limits.workspace_min) | (position > limits.workspace_max)
    if not (outside.any() or fast.any() or strong.any() or box.any()):
        return None
    if outside.any():
        j = _first(outside)
        return f"joint_position_limits_violation: joint {j} at {q[j - 1]:.3f} rad"
    if fast.any():
        j = _first(fast)
        return f"joint_velocity_violation: joint {j} at {dq[j - 1]:.2f} rad/s"
    if strong.any():
        j = _first(strong)
        return f"joint_torque_limit_violation: joint {j} commanded {tau_commanded[j - 1]:.1f} Nm"
    if box.any():
        return f"cartesian_position_limits_violation: end effector at {np.round(position, 3).tolist()}"
    return None
