"""franka_ros2's robot state as the contract's state (pure: no ROS import, any object with the fields).

franka_robot_state_broadcaster publishes franka_msgs/msg/FrankaRobotState (franka_ros2 >= 2.0 on
`franka_robot_state_broadcaster/robot_state`). What the contract's topics need of it:

| contract | FrankaRobotState |
|---|---|
| joint_states (q, dq, tau_J) | measured_joint_state (position, velocity, effort) |
| O_T_EE | o_t_ee (pose of the end effector in the base frame) |
| K_F_ext_hat_K | k_f_ext_hat_k (estimated external wrench, stiffness frame) |
| franka_jacobian | none: computed from q and f_t_ee (kinematics.py) |
| O_dP_EE | none measured (o_dp_ee_d/_c are desired/commanded): J dq, as HIL-SERL's server computes vel |
| franka_control/robot_mode | robot_mode, current_errors |

All of one message go out with the message's header stamp, so the server assembles one tick.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from .kinematics import N_JOINTS, end_effector_pose, zero_jacobian

# FrankaRobotState.robot_mode values (libfranka's RobotMode)
ROBOT_MODES = {
    0: "other",
    1: "idle",
    2: "move",
    3: "guiding",
    4: "reflex",
    5: "user_stopped",
    6: "automatic_error_recovery",
}
MODE_MOVE, MODE_REFLEX = 2, 4


@dataclass(frozen=True)
class ContractState:
    sec: int
    nanosec: int
    joint_names: tuple[str, ...]
    q: np.ndarray  # (7,)
    dq: np.ndarray
    tau: np.ndarray
    position: np.ndarray  # (3,) O_T_EE translation
    quaternion: np.ndarray  # (4,) x, y, z, w
    twist: np.ndarray  # (6,) J dq: linear, angular
    wrench: np.ndarray  # (6,) K_F_ext_hat_K: force, torque
    jacobian: np.ndarray  # (6, 7)
    kinematics_error: float  # [m] |O_T_EE from q and F_T_EE - O_T_EE measured|: the model's check


def pose_matrix(pose) -> np.ndarray:
    """4x4 of a geometry_msgs/Pose (position, orientation x, y, z, w)."""
    p, o = pose.position, pose.orientation
    quat = np.array([o.x, o.y, o.z, o.w], dtype=float)
    norm = np.linalg.norm(quat)
    if not np.isfinite(norm) or norm < 1e-9:
        raise ValueError("a pose with a zero or non-finite quaternion")
    matrix = np.eye(4)
    matrix[:3, :3] = Rotation.from_quat(quat / norm).as_matrix()
    matrix[:3, 3] = (p.x, p.y, p.z)
    return matrix


def _seven(values, what: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.shape != (N_JOINTS,):
        raise ValueError(f"{what} has {array.size} values, expected {N_JOINTS}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} holds a non-finite value")
    return array


def convert(msg) -> ContractState:
    """The contract's state of one FrankaRobotState; ValueError says what is wrong with a malformed one."""
    joints = msg.measured_joint_state
    q = _seven(joints.position, "measured_joint_state.position")
    dq = _seven(joints.velocity, "measured_joint_state.velocity")
    tau = _seven(joints.effort, "measured_joint_state.effort") if len(joints.effort) else np.zeros(N_JOINTS)
    o_t_ee = pose_matrix(msg.o_t_ee.pose)
    f_t_ee = pose_matrix(msg.f_t_ee.pose)
    jacobian = zero_jacobian(q, f_t_ee)
    w = msg.k_f_ext_hat_k.wrench
    wrench = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z], dtype=float)
    if not np.all(np.isfinite(wrench)) or not np.all(np.isfinite(o_t_ee)):
        raise ValueError("o_t_ee or k_f_ext_hat_k holds a non-finite value")
    modelled = end_effector_pose(q, f_t_ee)
    p, o = msg.o_t_ee.pose.position, msg.o_t_ee.pose.orientation
    quat = np.array([o.x, o.y, o.z, o.w], dtype=float)
    names = tuple(joints.name) if len(joints.name) == N_JOINTS else tuple(f"joint{i + 1}" for i in range(N_JOINTS))
    return ContractState(
        sec=int(msg.header.stamp.sec),
        nanosec=int(msg.header.stamp.nanosec),
        joint_names=names,
        q=q,
        dq=dq,
        tau=tau,
        position=np.array([p.x, p.y, p.z], dtype=float),
        quaternion=quat / np.linalg.norm(quat),
        twist=jacobian @ dq,
        wrench=wrench,
        jacobian=jacobian,
        kinematics_error=float(np.linalg.norm(modelled[:3, 3] - o_t_ee[:3, 3])),
    )


def jacobian_column_major(jacobian: np.ndarray) -> list[float]:
    """The 42 values of franka_jacobian: 6x7, column-major (libfranka's and the original's order)."""
    return [float(v) for v in np.asarray(jacobian).reshape((6, 7)).flatten(order="F")]


def active_errors(errors) -> list[str]:
    """Names of the flags set in a franka_msgs/Errors (or anything with boolean fields)."""
    if errors is None:
        return []
    fields = errors.get_fields_and_field_types() if hasattr(errors, "get_fields_and_field_types") else vars(errors)
    return [name.lstrip("_") for name in fields if getattr(errors, name.lstrip("_"), False) is True]


def robot_mode_text(mode: int, errors=None, controller_active: bool = True, joint_reset: bool = False) -> str:
    """The contract's franka_control/robot_mode text of the robot's mode.

    As the simulator says it: `impedance` while the impedance controller drives the arm, `idle`, `joint_reset`,
    `reflex: <errors>`; other modes of the real robot by name (`guiding`, `user_stopped`, ...).
    """
    if joint_reset:
        return "joint_reset"
    if mode == MODE_REFLEX:
        which = active_errors(errors)
        return f"reflex: {', '.join(which) if which else 'no error flag set'}"
    if mode == MODE_MOVE:
        return "impedance" if controller_active else "move"
    return ROBOT_MODES.get(int(mode), f"unknown mode {mode}")
