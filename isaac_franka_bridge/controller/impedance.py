"""The Cartesian impedance law of the real robot's 1 kHz controller (../shared/design/controller.md).

Pure numpy: no ROS, no simulator. A backend feeds it the measured state each tick and applies the
torque it returns; gravity is not part of the law (the robot, or the simulator, compensates it).
Quaternions are (x, y, z, w), as scipy and the HTTP routes use them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from .parameters import COMPLIANCE_PARAMETERS, DEFAULT_COMPLIANCE

FILTER_FACTOR = 0.005  # first-order filter factor per tick, for gains and the equilibrium
DELTA_TAU_MAX = 1.0  # [Nm] largest change of a joint torque from one tick to the next
INTEGRAL_LIMIT = np.array([0.1, 0.1, 0.1, 0.3, 0.3, 0.3])
IDENTITY7 = np.eye(7)
PINV_DAMPING = 0.2  # damping of the pseudo-inverse in the null-space projector, as the real controller
# the real controller's member initialisers: its null-space stiffnesses start here at every launch and
# filter toward the parameters (its Cartesian stiffness and damping start at zero)
NULLSPACE_STIFFNESS_AT_START = 20.0

_SPECS = {p.name: p for p in COMPLIANCE_PARAMETERS}


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b of (x, y, z, w) quaternions."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    return np.array([-q[0], -q[1], -q[2], q[3]])


def quat_slerp(q0: np.ndarray, q1: np.ndarray, t: float) -> np.ndarray:
    """Spherical interpolation along the shortest arc (as Eigen's Quaternion::slerp)."""
    d = float(np.dot(q0, q1))
    sign = 1.0
    if d < 0.0:
        d, sign = -d, -1.0
    if d > 1.0 - 1e-9:
        s0, s1 = 1.0 - t, t
    else:
        theta = math.acos(d)
        sin_theta = math.sin(theta)
        s0 = math.sin((1.0 - t) * theta) / sin_theta
        s1 = math.sin(t * theta) / sin_theta
    q = s0 * q0 + sign * s1 * q1
    return q / np.linalg.norm(q)


def damped_pinv_of_transpose(jacobian: np.ndarray, damping: float) -> np.ndarray:
    """Damped pseudo-inverse of J^T: V S/(S^2 + d^2) U^T = (J J^T + d^2 I)^-1 J (a 6x6 solve, no SVD)."""
    jjt = jacobian @ jacobian.T
    jjt[np.diag_indices(6)] += damping * damping
    return np.linalg.solve(jjt, jacobian)


def normalized_quaternion(quat: np.ndarray) -> np.ndarray:
    """The unit quaternion of `quat`; ValueError for a zero or non-finite one."""
    quat = np.asarray(quat, dtype=float)
    norm = float(np.linalg.norm(quat))
    if quat.shape != (4,) or not math.isfinite(norm) or norm < 1e-6:
        raise ValueError(f"quaternion must be 4 finite numbers with a non-zero norm, got {quat.tolist()}")
    return quat / norm


class CartesianImpedanceController:
    """One instance per arm. Call `start` with the current state, then `update` every tick."""

    def __init__(
        self,
        params: Mapping[str, float] | None = None,
        filter_factor: float = FILTER_FACTOR,
        delta_tau_max: float = DELTA_TAU_MAX,
    ) -> None:
        self.filter_factor = filter_factor
        self.delta_tau_max = delta_tau_max
        self.params: dict[str, float] = dict(DEFAULT_COMPLIANCE)
        self.set_params(params or {})
        self.position_d = np.zeros(3)
        self.position_d_target = np.zeros(3)
        self.quat_d = np.array([0.0, 0.0, 0.0, 1.0])
        self.quat_d_target = self.quat_d.copy()
        self.q_nullspace = np.zeros(7)
        self.error = np.zeros(6)
        self.error_integral = np.zeros(6)
        self._reset_filtered_gains()
        self.tau_previous = np.zeros(7)

    # ------------------------------------------------------------------ configuration
    def set_params(self, updates: Mapping[str, float]) -> None:
        """Set compliance parameters (names and ranges of contract.md section 3).

        Raises ValueError, changing nothing, for an unknown name or an out-of-range value.
        Gains are then filtered toward the new values; clips apply at once (as on the robot).
        """
        for name, value in updates.items():
            spec = _SPECS.get(name)
            if spec is None:
                raise ValueError(f"unknown compliance parameter '{name}'")
            if not (math.isfinite(value) and spec.low <= value <= spec.high):
                raise ValueError(f"{name}={value} is outside [{spec.low}, {spec.high}]")
        self.params.update({k: float(v) for k, v in updates.items()})
        p = self.params
        self.stiffness_target = np.array([p["translational_stiffness"]] * 3 + [p["rotational_stiffness"]] * 3)
        self.damping_target = np.array([p["translational_damping"]] * 3 + [p["rotational_damping"]] * 3)
        self.ki_target = np.array([p["translational_Ki"]] * 3 + [p["rotational_Ki"]] * 3)
        self.nullspace_stiffness_target = p["nullspace_stiffness"]
        self.joint1_nullspace_stiffness_target = p["joint1_nullspace_stiffness"]
        self.clip_high = np.array([p[f"{k}_clip_{a}"] for k in ("translational", "rotational") for a in "xyz"])
        self.clip_low = -np.array([p[f"{k}_clip_neg_{a}"] for k in ("translational", "rotational") for a in "xyz"])

    def _reset_filtered_gains(self) -> None:
        """As a freshly launched controller: stiffness, damping and Ki at zero, null space at 20."""
        self.stiffness = np.zeros(6)
        self.damping = np.zeros(6)
        self.ki = np.zeros(6)
        self.nullspace_stiffness = NULLSPACE_STIFFNESS_AT_START
        self.joint1_nullspace_stiffness = NULLSPACE_STIFFNESS_AT_START

    def start(
        self, q: np.ndarray, position: np.ndarray, quat: np.ndarray, tau_commanded: np.ndarray | None = None
    ) -> None:
        """A fresh launch of the controller (the original's init() then starting()), as at boot, after a
        joint reset and on /startimp: the filtered gains start from zero (null space from 20) and rise
        toward the parameters through the 0.005 filter; then `seed`."""
        self._reset_filtered_gains()
        self.seed(q, position, quat, tau_commanded)

    def seed(
        self, q: np.ndarray, position: np.ndarray, quat: np.ndarray, tau_commanded: np.ndarray | None = None
    ) -> None:
        """The original's starting() (also what error recovery triggers): the equilibrium and the
        null-space target take the current state; the filtered gains keep their values.

        `tau_commanded` is the torque the robot was last commanded (its tau_J_d), from which the
        torque-rate limit counts; zero when nothing was commanded.
        """
        self.position_d = np.array(position, dtype=float)
        self.position_d_target = self.position_d.copy()
        self.quat_d = normalized_quaternion(quat)
        self.quat_d_target = self.quat_d.copy()
        self.q_nullspace = np.array(q, dtype=float)
        self.error_integral = np.zeros(6)
        self.tau_previous = np.zeros(7) if tau_commanded is None else np.array(tau_commanded, dtype=float)

    def set_target(self, position: np.ndarray, quat: np.ndarray) -> None:
        """A new equilibrium pose: normalised, sign-aligned with the previous target, integral reset."""
        quat = normalized_quaternion(quat)
        position = np.asarray(position, dtype=float)
        if position.shape != (3,) or not np.all(np.isfinite(position)):
            raise ValueError(f"position must be 3 finite numbers, got {position.tolist()}")
        if np.dot(quat, self.quat_d_target) < 0.0:
            quat = -quat
        self.position_d_target = position.copy()
        self.quat_d_target = quat
        self.error_integral = np.zeros(6)

    # ------------------------------------------------------------------ the 1 kHz law
    def update(
        self,
        q: np.ndarray,
        dq: np.ndarray,
        position: np.ndarray,
        rotation: np.ndarray,
        quat: np.ndarray,
        jacobian: np.ndarray,
        coriolis: np.ndarray,
    ) -> np.ndarray:
        """One tick: the commanded joint torques (7), without gravity.

        `rotation` is the end-effector rotation matrix and `quat` the same orientation as (x, y, z, w);
        `jacobian` the 6x7 zero Jacobian (linear rows first); `coriolis` the Coriolis torques C(q, dq) dq.
        """
        # 1. error, clipped per axis (asymmetric)
        error = np.empty(6)
        error[:3] = position - self.position_d
        if np.dot(self.quat_d, quat) < 0.0:
            quat = -quat
        q_err = quat_multiply(quat_conjugate(quat), self.quat_d)
        error[3:] = -rotation @ q_err[:3]
        np.minimum(np.maximum(error, self.clip_low, out=error), self.clip_high, out=error)
        self.error = error
        # 2. integral, clamped
        self.error_integral = np.minimum(np.maximum(self.error_integral + error, -INTEGRAL_LIMIT), INTEGRAL_LIMIT)
        # 3. task torque
        tau_task = jacobian.T @ (
            -self.stiffness * error - self.damping * (jacobian @ dq) - self.ki * self.error_integral
        )
        # 4. null space
        qe = self.q_nullspace - q
        qe[0] *= self.joint1_nullspace_stiffness
        dqe = np.array(dq, dtype=float)
        dqe[0] *= 2.0 * math.sqrt(self.joint1_nullspace_stiffness)
        projector = IDENTITY7 - jacobian.T @ damped_pinv_of_transpose(jacobian, PINV_DAMPING)
        tau_null = projector @ (self.nullspace_stiffness * qe - 2.0 * math.sqrt(self.nullspace_stiffness) * dqe)
        # 5. sum and torque-rate saturation
        tau_d = tau_task + tau_null + coriolis
        step = np.minimum(np.maximum(tau_d - self.tau_previous, -self.delta_tau_max), self.delta_tau_max)
        tau_d = self.tau_previous + step
        self.tau_previous = tau_d
        # 6. first-order filters toward the targets
        self._filter()
        return tau_d

    def _filter(self) -> None:
        a = self.filter_factor
        self.stiffness = a * self.stiffness_target + (1.0 - a) * self.stiffness
        self.damping = a * self.damping_target + (1.0 - a) * self.damping
        self.ki = a * self.ki_target + (1.0 - a) * self.ki
        self.nullspace_stiffness = a * self.nullspace_stiffness_target + (1.0 - a) * self.nullspace_stiffness
        self.joint1_nullspace_stiffness = (
            a * self.joint1_nullspace_stiffness_target + (1.0 - a) * self.joint1_nullspace_stiffness
        )
        self.position_d = a * self.position_d_target + (1.0 - a) * self.position_d
        self.quat_d = quat_slerp(self.quat_d, self.quat_d_target, a)
