"""The Cartesian impedance law of the real robot's 1 kHz controller (docs/controller.md).

Pure math (numpy, and LAPACK through scipy): no ROS, no simulator. A backend feeds it the measured
state each tick and applies the torque it returns; gravity is not part of the law (the robot, or the
simulator, compensates it).
Quaternions are (x, y, z, w), as scipy and the HTTP routes use them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from scipy.linalg.lapack import dgesv

from .parameters import COMPLIANCE_PARAMETERS, DEFAULT_COMPLIANCE

FILTER_FACTOR = 0.005  # first-order filter factor per tick, for gains and the equilibrium
DELTA_TAU_MAX = 1.0  # [Nm] largest change of a joint torque from one tick to the next
INTEGRAL_LIMIT = np.array([0.1, 0.1, 0.1, 0.3, 0.3, 0.3])
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
    # (in Python floats: called every tick, where numpy's per-call cost exceeds the arithmetic)
    x0, y0, z0, w0 = q0.tolist() if isinstance(q0, np.ndarray) else q0
    x1, y1, z1, w1 = q1.tolist() if isinstance(q1, np.ndarray) else q1
    d = x0 * x1 + y0 * y1 + z0 * z1 + w0 * w1
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
    s1 *= sign
    x, y, z, w = s0 * x0 + s1 * x1, s0 * y0 + s1 * y1, s0 * z0 + s1 * z1, s0 * w0 + s1 * w1
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    return np.array((x / norm, y / norm, z / norm, w / norm))


def damped_pinv_of_transpose(jacobian: np.ndarray, damping: float) -> np.ndarray:
    """Damped pseudo-inverse of J^T: V S/(S^2 + d^2) U^T = (J J^T + d^2 I)^-1 J (a 6x6 solve, no SVD)."""
    return _solve(_damped_gram(jacobian, damping), jacobian)


def damped_pinv_of_transpose_times(jacobian: np.ndarray, damping: float, vector: np.ndarray) -> np.ndarray:
    """damped_pinv_of_transpose(J, d) @ v = (J J^T + d^2 I)^-1 (J v), without forming the 6x7 matrix."""
    return _solve(_damped_gram(jacobian, damping), jacobian @ vector)


def _damped_gram(jacobian: np.ndarray, damping: float) -> np.ndarray:
    jjt = jacobian @ jacobian.T
    jjt.flat[::7] += damping * damping  # the diagonal
    return jjt


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.linalg.solve's LAPACK routine (gesv: LU with partial pivoting) without its Python wrapper, whose
    checks cost several times the 6x6 solve itself (twice every tick)."""
    _, _, x, info = dgesv(a, b)
    if info != 0:
        raise np.linalg.LinAlgError(f"singular matrix (LAPACK gesv info {info})")
    return x


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
        # (Every step is the law as written; the arithmetic is arranged for few numpy calls, each of which
        # costs more than its few flops: this runs every millisecond, in Python.)
        # 1. error, clipped per axis (asymmetric)
        qx, qy, qz, qw = quat.tolist() if isinstance(quat, np.ndarray) else quat
        dx, dy, dz, dw = self.quat_d.tolist()
        if dx * qx + dy * qy + dz * qz + dw * qw < 0.0:
            qx, qy, qz, qw = -qx, -qy, -qz, -qw
        # the vector part of q_err = conj(quat) * quat_d
        ex = qw * dx - qx * dw - qy * dz + qz * dy
        ey = qw * dy + qx * dz - qy * dw - qz * dx
        ez = qw * dz - qx * dy + qy * dx - qz * dw
        error = np.empty(6)
        np.subtract(position, self.position_d, out=error[:3])
        np.dot(rotation, (-ex, -ey, -ez), out=error[3:])
        np.minimum(np.maximum(error, self.clip_low, out=error), self.clip_high, out=error)
        self.error = error
        # 2. integral, clamped
        integral = self.error_integral + error
        np.minimum(np.maximum(integral, -INTEGRAL_LIMIT, out=integral), INTEGRAL_LIMIT, out=integral)
        self.error_integral = integral
        # 3. task torque: J^T (-K e - D (J dq) - Ki e_i)
        wrench = self.stiffness * error
        wrench += self.damping * (jacobian @ dq)
        wrench += self.ki * integral
        tau = jacobian.T @ wrench
        np.negative(tau, out=tau)
        # 4. null space: (I - J^T pinv(J^T)) v = v - J^T (pinv(J^T) v)
        qe = self.q_nullspace - q
        qe[0] *= self.joint1_nullspace_stiffness
        dqe = np.array(dq, dtype=float)
        dqe[0] *= 2.0 * math.sqrt(self.joint1_nullspace_stiffness)
        v = self.nullspace_stiffness * qe
        v -= 2.0 * math.sqrt(self.nullspace_stiffness) * dqe
        tau += v
        tau -= jacobian.T @ damped_pinv_of_transpose_times(jacobian, PINV_DAMPING, v)
        # 5. sum and torque-rate saturation
        tau += coriolis
        tau -= self.tau_previous
        np.minimum(np.maximum(tau, -self.delta_tau_max, out=tau), self.delta_tau_max, out=tau)
        tau += self.tau_previous
        self.tau_previous = tau
        # 6. first-order filters toward the targets
        self._filter()
        return tau

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
