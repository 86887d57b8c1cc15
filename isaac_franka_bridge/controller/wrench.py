"""The Cartesian wrench law of HIL-SERL's egg-flip controller, as pure math.

The original is the C++ ros_control plugin `egg_flip_controller/CartesianWrenchController` of
rail-berkeley/hil-serl (serl_robot_infra/egg_flip_controller: src/cartesian_wrench_controller.cpp,
include/egg_flip_controller/cartesian_wrench_controller.h, config/egg_flip_controller.yaml), driven by
robot_servers/franka_eggflip_server.py (`/wrench` -> `wrench_target`, `/reset` -> `reset` True) and
franka_env/envs/franka_wrench_env.py (a base-frame wrench at 10 Hz, ACTION_SCALE [13, 0, 12, 0, 3.5, 0]).
Line numbers below ("cpp:N") refer to that .cpp. The law is reproduced as it is, oddities included:

- the box test reads the orientation as tf2 `getRPY` (roll x, pitch y, yaw z of R = Rz Ry Rx, scipy's
  extrinsic `as_euler("xyz")` away from gimbal lock), adds 2 pi to a negative roll, then multiplies the
  Euler VECTOR (roll, pitch, yaw) by a rotation matrix of -pi/4 about z (cpp:222-237); the rotation box
  and the rotational "P" terms work on that mixed vector, and the resulting "torques" are applied about
  the base axes through J^T;
- the "PD" terms are P only (the end-effector velocity is computed and never used, cpp:255);
- inside the box the z force and the second rotational component of the P term are zeroed (cpp:308-309)
  and a fresh command's wrench is limited to fz >= -1 N and ty <= 1.5 Nm, written back into the stored
  target (cpp:315-316);
- the joint "reset" move is a joint impedance law that runs while the arm is inside the box and less
  than 1 s of inside-the-box time has passed since the last reset call (or start); it ignores the box
  and the null space (cpp:256-271); its velocity "filter" weighs the new sample by 0.99 (cpp:262-265),
  and its state carries over from one reset phase to the next;
- timers are ros::Durations (whole nanoseconds, compared through toSec()): a command is fresh while at
  most max_duration_between_commands has passed (stale is a strict `>`, cpp:312), the reset phase lasts
  while less than 1 s has (cpp:259); starting() zeroes both (cpp:183-184).

Pure numpy: no ROS, no simulator. A backend feeds it the measured state each tick and applies the
torque it returns; gravity is not part of the law (the robot, or the simulator, compensates it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from .impedance import damped_pinv_of_transpose

IDENTITY7 = np.eye(7)
PINV_DAMPING = 0.2  # pseudo_inversion.h: pseudoInverse(J^T) is damped with lambda 0.2 by default (cpp:245)
# literals of the .cpp
RESET_DURATION = 1.0  # [s] joint-impedance phase after a reset call (cpp:259)
DQ_FILTER_ALPHA = 0.99  # weight of the NEW dq sample in the reset phase's "filter" (cpp:262-265)
JOINT_TERM_CLIP = 10.0  # [Nm] clip of each P and D term of the joint impedance reset (cpp:269-270)
BOX_MARGIN_LOW_TRANSLATION = np.array([0.02, 0.01, 0.03])  # [m] target inside the box's low side (cpp:276)
BOX_MARGIN_HIGH_TRANSLATION = np.array([0.02, 0.01, 0.01])  # [m] target inside the box's high side (cpp:276)
BOX_MARGIN_ROTATION = 0.01  # [rad] on both sides of the rotation box (cpp:277)
TRANSLATION_ERROR_CLIP = 0.03  # [m] (cpp:285, 302)
ROTATION_ERROR_CLIP = 0.06  # [rad] of the rotated Euler vector (cpp:286, 303)
MAX_COMMANDED_TY = 1.5  # [Nm] upper limit of a fresh command's torque about y, inside the box (cpp:315)
MIN_COMMANDED_FZ = -1.0  # [N] lower limit of a fresh command's force along z, inside the box (cpp:316)
EULER_VECTOR_ROTATION = -math.pi / 4.0  # [rad] about z, applied to the (roll, pitch, yaw) vector (cpp:232-237)

_C, _S = math.cos(EULER_VECTOR_ROTATION), math.sin(EULER_VECTOR_ROTATION)
_EULER_ROTATION_MATRIX = np.array([[_C, -_S, 0.0], [_S, _C, 0.0], [0.0, 0.0, 1.0]])


@dataclass(frozen=True)
class WrenchControllerParams:
    """The controller's parameters: egg_flip_controller.yaml's values, and the header's member initialisers.

    Raises ValueError for a value of the wrong size, a non-finite one, a negative gain or limit, or a box
    whose minimum exceeds its maximum.
    """

    # egg_flip_controller.yaml
    max_duration_between_commands: float = 0.1  # [s] a wrench target older than this is ignored
    max_force: float = 20.0  # [N] rate_limiting/force: each force component of a target is clipped to +-this
    max_torque: float = 5.0  # [Nm] rate_limiting/torque: each torque component is clipped to +-this
    min_translation: tuple[float, ...] = (0.4, -0.08, 0.45)  # [m] bounding_box/min_translation (base frame)
    max_translation: tuple[float, ...] = (0.7, 0.08, 0.6)  # [m] bounding_box/max_translation
    min_rotation: tuple[float, ...] = (2.1, -2.7, -0.9)  # [rad] bounding_box/min_rotation (rotated Euler vector)
    max_rotation: tuple[float, ...] = (2.4, -1.5, -0.7)  # [rad] bounding_box/max_rotation
    p_translation: float = 200.0  # [N/m] toward the box (or its centre)
    p_rotation: float = 50.0  # [Nm/rad] toward the rotation box (or its centre)
    k_gains: tuple[float, ...] = (600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0)  # [Nm/rad] reset move
    d_gains: tuple[float, ...] = (50.0, 50.0, 50.0, 20.0, 20.0, 20.0, 10.0)  # [Nm s/rad] reset move
    target_joint_positions: tuple[float, ...] = (0.0, -0.3, 0.0, -2.1, 0.0, 1.6, 0.8)  # [rad] reset / null space
    # cartesian_wrench_controller.h (fixed there: its filter toward the *_target members is never run)
    nullspace_stiffness: float = 5.0
    joint1_nullspace_stiffness: float = 5.0
    delta_tau_max: float = 1.0  # [Nm] largest change of a joint torque from one tick to the next

    def __post_init__(self) -> None:
        sizes = {
            "min_translation": 3,
            "max_translation": 3,
            "min_rotation": 3,
            "max_rotation": 3,
            "k_gains": 7,
            "d_gains": 7,
            "target_joint_positions": 7,
        }
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in sizes:
                array = np.asarray(value, dtype=float)
                if array.shape != (sizes[f.name],) or not np.all(np.isfinite(array)):
                    raise ValueError(f"{f.name} must be {sizes[f.name]} finite numbers, got {value!r}")
                object.__setattr__(self, f.name, tuple(float(v) for v in array))
                if f.name in ("k_gains", "d_gains") and np.any(array < 0.0):
                    raise ValueError(f"{f.name} must not be negative, got {value!r}")
            else:
                if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0.0):
                    raise ValueError(f"{f.name} must be a finite number >= 0, got {value!r}")
                object.__setattr__(self, f.name, float(value))
        for kind in ("translation", "rotation"):
            low, high = np.array(getattr(self, f"min_{kind}")), np.array(getattr(self, f"max_{kind}"))
            if np.any(low > high):
                raise ValueError(f"min_{kind} {low.tolist()} exceeds max_{kind} {high.tolist()}")


def tf2_rpy(rotation: np.ndarray) -> np.ndarray:
    """(roll, pitch, yaw) as tf2's Matrix3x3::getRPY (solution 1) gives them: R = Rz(yaw) Ry(pitch) Rx(roll),
    pitch in [-pi/2, pi/2]; at gimbal lock (|R[2,0]| >= 1) yaw is 0 and roll is atan2(R[2,1], R[2,2])."""
    r20 = float(rotation[2, 0])
    if abs(r20) >= 1.0:
        pitch = -math.pi / 2.0 if r20 > 0.0 else math.pi / 2.0
        return np.array([math.atan2(rotation[2, 1], rotation[2, 2]), pitch, 0.0])
    pitch = -math.asin(r20)
    cp = math.cos(pitch)  # > 0: dividing by it (as tf2 does) changes no angle; kept for the same rounding
    roll = math.atan2(rotation[2, 1] / cp, rotation[2, 2] / cp)
    yaw = math.atan2(rotation[1, 0] / cp, rotation[0, 0] / cp)
    return np.array([roll, pitch, yaw])


def box_euler_vector(rotation: np.ndarray) -> np.ndarray:
    """The orientation as the original's box test sees it (cpp:222-237): tf2 getRPY, a negative roll
    moved up by 2 pi, then the (roll, pitch, yaw) VECTOR multiplied by a rotation of -pi/4 about z."""
    euler = tf2_rpy(rotation)
    if euler[0] < 0.0:
        euler[0] += 2.0 * math.pi
    return _EULER_ROTATION_MATRIX @ euler


def _duration_ns(seconds: float) -> int:
    """A period as ros::Duration holds it: whole nanoseconds."""
    return int(round(seconds * 1e9))


def _to_sec(ns: int) -> float:
    """ros::Duration::toSec() of a duration of `ns` nanoseconds (its rounding, for the same comparisons)."""
    sec, nsec = divmod(ns, 1_000_000_000)
    return float(sec) + 1e-9 * float(nsec)


class CartesianWrenchController:
    """One instance per arm. Call `start` with the current state, then `update` every tick.

    The target wrench (`set_target_wrench`) is in the base frame, as HIL-SERL's FrankaWrenchEnv sends it;
    `reset` is the original's `reset` topic receiving True (the joint move back to target_joint_positions).
    """

    def __init__(self, params: WrenchControllerParams | None = None) -> None:
        self.params = params or WrenchControllerParams()
        p = self.params
        self.min_translation = np.array(p.min_translation)
        self.max_translation = np.array(p.max_translation)
        self.min_rotation = np.array(p.min_rotation)
        self.max_rotation = np.array(p.max_rotation)
        self.k_gains = np.array(p.k_gains)
        self.d_gains = np.array(p.d_gains)
        self.q_target = np.array(p.target_joint_positions)
        self.wrench_d = np.zeros(6)
        self.dq_filtered = np.zeros(7)
        self.time_since_last_command_ns = 0
        self.time_since_last_reset_call_ns = 0
        self.tau_previous = np.zeros(7)
        # what the last update did, for diagnostics and tests
        self.euler = np.zeros(3)
        self.outside_box = False
        self.mode = "stopped"  # "reset" (joint impedance), "outside" (back into the box), "inside", "wrench"

    def start(
        self, q: np.ndarray, position: np.ndarray, quat: np.ndarray, tau_commanded: np.ndarray | None = None
    ) -> None:
        """A fresh launch of the controller (the original's init() then starting(), as the egg-flip
        server's roslaunch does): target wrench zero, filtered dq zero, both timers zero, so the joint
        impedance move to target_joint_positions runs for the first second spent inside the box.

        `q`, `position` and `quat` are accepted for symmetry with CartesianImpedanceController.start: the
        original's starting() reads the state but keeps nothing of it. `tau_commanded` is the torque the
        robot was last commanded (its tau_J_d), from which the torque-rate limit counts; zero when
        nothing was commanded.
        """
        self.dq_filtered = np.zeros(7)
        self.seed(q, position, quat, tau_commanded)

    def seed(
        self, q: np.ndarray, position: np.ndarray, quat: np.ndarray, tau_commanded: np.ndarray | None = None
    ) -> None:
        """The original's starting() alone (what a restart after error recovery runs): target wrench and
        both timers zero; the filtered dq keeps its value (it is zeroed only in init())."""
        self.wrench_d = np.zeros(6)
        self.time_since_last_command_ns = 0
        self.time_since_last_reset_call_ns = 0
        self.tau_previous = np.zeros(7) if tau_commanded is None else np.array(tau_commanded, dtype=float)
        self.mode = "started"

    def set_target_wrench(self, wrench: np.ndarray) -> None:
        """A new target wrench (fx, fy, fz, tx, ty, tz) in the base frame (cpp:370-379): each force
        component clipped to +-max_force, each torque component to +-max_torque; the command timer restarts.

        Raises ValueError, changing nothing, for anything but 6 finite numbers.
        """
        try:
            wrench = np.array(wrench, dtype=float)
        except (TypeError, ValueError) as e:
            raise ValueError(f"wrench must be 6 finite numbers, got {wrench!r}") from e
        if wrench.shape != (6,) or not np.all(np.isfinite(wrench)):
            raise ValueError(f"wrench must be 6 finite numbers, got {wrench.tolist()}")
        p = self.params
        wrench[:3] = np.clip(wrench[:3], -p.max_force, p.max_force)
        wrench[3:] = np.clip(wrench[3:], -p.max_torque, p.max_torque)
        self.wrench_d = wrench
        self.time_since_last_command_ns = 0

    def reset(self) -> None:
        """The `reset` topic's True (cpp:381-386): the joint impedance move to target_joint_positions runs
        again, for the next second spent inside the box."""
        self.time_since_last_reset_call_ns = 0

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
        dt: float = 0.001,
    ) -> np.ndarray:
        """One tick of `dt` seconds: the commanded joint torques (7), without gravity.

        `rotation` is the end-effector rotation matrix and `quat` the same orientation as (x, y, z, w)
        (unused: the law reads the rotation matrix, which the original round-trips through a quaternion);
        `jacobian` the 6x7 zero Jacobian (linear rows first); `coriolis` the Coriolis torques C(q, dq) dq.
        """
        p = self.params
        if not (math.isfinite(dt) and dt > 0.0):
            raise ValueError(f"dt must be a finite number > 0, got {dt!r}")
        period_ns = _duration_ns(dt)
        self.time_since_last_command_ns += period_ns
        q = np.asarray(q, dtype=float)
        dq = np.asarray(dq, dtype=float)
        position = np.asarray(position, dtype=float)
        euler = box_euler_vector(np.asarray(rotation, dtype=float))
        self.euler = euler
        # box test (cpp:248-252): strict comparisons, the boundary is inside
        outside = bool(
            np.any(position < self.min_translation)
            or np.any(position > self.max_translation)
            or np.any(euler < self.min_rotation)
            or np.any(euler > self.max_rotation)
        )
        self.outside_box = outside
        if not outside:
            self.time_since_last_reset_call_ns += period_ns
        if not outside and _to_sec(self.time_since_last_reset_call_ns) < RESET_DURATION:
            # joint impedance toward the target joints, no task, no null space (cpp:259-271)
            self.dq_filtered = (1.0 - DQ_FILTER_ALPHA) * self.dq_filtered + DQ_FILTER_ALPHA * dq
            spring = np.clip(self.k_gains * (self.q_target - q), -JOINT_TERM_CLIP, JOINT_TERM_CLIP)
            damper = np.clip(self.d_gains * -self.dq_filtered, -JOINT_TERM_CLIP, JOINT_TERM_CLIP)
            tau_d = coriolis + spring + damper
            self.mode = "reset"
        else:
            if outside:
                # P toward the pose clipped into the box with margins (cpp:274-294)
                target_translation = np.minimum(
                    np.maximum(position, self.min_translation + BOX_MARGIN_LOW_TRANSLATION),
                    self.max_translation - BOX_MARGIN_HIGH_TRANSLATION,
                )
                target_rotation = np.minimum(
                    np.maximum(euler, self.min_rotation + BOX_MARGIN_ROTATION),
                    self.max_rotation - BOX_MARGIN_ROTATION,
                )
                p_control = self._p_control(position - target_translation, euler - target_rotation)
                tau_task = jacobian.T @ p_control
                self.mode = "outside"
            else:
                # P toward the box centre, z force and second rotational component free (cpp:295-309)
                target_translation = (self.max_translation + self.min_translation) / 2.0
                target_rotation = (self.max_rotation + self.min_rotation) / 2.0
                p_control = self._p_control(position - target_translation, euler - target_rotation)
                p_control[2] = 0.0
                p_control[4] = 0.0
                if _to_sec(self.time_since_last_command_ns) > p.max_duration_between_commands:
                    tau_task = jacobian.T @ p_control  # stale command: ignored (cpp:312-313)
                    self.mode = "inside"
                else:
                    # the limits are written back into the stored target (cpp:315-317)
                    self.wrench_d[4] = min(self.wrench_d[4], MAX_COMMANDED_TY)
                    self.wrench_d[2] = max(self.wrench_d[2], MIN_COMMANDED_FZ)
                    tau_task = jacobian.T @ (self.wrench_d + p_control)
                    self.mode = "wrench"
            # null space toward the target joints (cpp:324-334)
            qe = self.q_target - q
            qe[0] *= p.joint1_nullspace_stiffness
            dqe = dq.copy()
            dqe[0] *= 2.0 * math.sqrt(p.joint1_nullspace_stiffness)
            projector = IDENTITY7 - jacobian.T @ damped_pinv_of_transpose(jacobian, PINV_DAMPING)
            tau_null = projector @ (p.nullspace_stiffness * qe - 2.0 * math.sqrt(p.nullspace_stiffness) * dqe)
            tau_d = tau_task + tau_null + coriolis
        # torque-rate saturation against the last commanded torque (cpp:341, 357-367)
        step = np.minimum(np.maximum(tau_d - self.tau_previous, -p.delta_tau_max), p.delta_tau_max)
        tau_d = self.tau_previous + step
        self.tau_previous = tau_d
        return tau_d

    def _p_control(self, translation_error: np.ndarray, rotation_error: np.ndarray) -> np.ndarray:
        """-P * error, the error clipped per component (cpp:284-292)."""
        p = self.params
        p_control = np.empty(6)
        p_control[:3] = -p.p_translation * np.clip(translation_error, -TRANSLATION_ERROR_CLIP, TRANSLATION_ERROR_CLIP)
        p_control[3:] = -p.p_rotation * np.clip(rotation_error, -ROTATION_ERROR_CLIP, ROTATION_ERROR_CLIP)
        return p_control
