"""The joint reset of the original stack: a joint-position move to the reset configuration.

A smooth (quintic) trajectory at a bounded joint speed, tracked by a joint-space PD law with the
gains of Franka's joint impedance example; done within `tolerance` rad, or after `timeout` s.
"""

from __future__ import annotations

import numpy as np

KP = np.array([600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0])  # [Nm/rad]
KD = np.array([50.0, 50.0, 50.0, 20.0, 20.0, 20.0, 10.0])  # [Nm s/rad]
MAX_JOINT_SPEED = 0.6  # [rad/s] peak speed of the slowest-finishing joint
SETTLE_VELOCITY = 0.05  # [rad/s] the arm counts as arrived once it is this still


class JointResetMotion:
    def __init__(self, q0: np.ndarray, target: np.ndarray, t0: float, tolerance: float, timeout: float) -> None:
        self.q0, self.target, self.t0 = q0.copy(), target.copy(), t0
        self.tolerance, self.timeout = tolerance, timeout
        # a quintic's peak speed is 1.875 * distance / duration
        self.duration = max(0.5, 1.875 * float(np.max(np.abs(target - q0))) / MAX_JOINT_SPEED)

    def reference(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        s = min(max((t - self.t0) / self.duration, 0.0), 1.0)
        blend = 10 * s**3 - 15 * s**4 + 6 * s**5
        rate = (30 * s**2 - 60 * s**3 + 30 * s**4) / self.duration if s < 1.0 else 0.0
        delta = self.target - self.q0
        return self.q0 + blend * delta, rate * delta

    def torque(self, q: np.ndarray, dq: np.ndarray, t: float) -> np.ndarray:
        q_ref, dq_ref = self.reference(t)
        return KP * (q_ref - q) + KD * (dq_ref - dq)

    def reached(self, q: np.ndarray) -> bool:
        return bool(np.max(np.abs(self.target - q)) <= self.tolerance)

    def finished(self, q: np.ndarray, dq: np.ndarray, t: float) -> bool:
        if t - self.t0 >= self.timeout:
            return True
        settled = t - self.t0 >= self.duration and float(np.max(np.abs(dq))) < SETTLE_VELOCITY
        return settled and self.reached(q)
