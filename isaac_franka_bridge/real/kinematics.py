"""Kinematics of the Franka arm (FR3 and Panda share them) from its Denavit-Hartenberg parameters.

FrankaRobotState carries the measured end-effector pose but no Jacobian and no measured twist; the
contract publishes both (`franka_jacobian`, `O_dP_EE = J dq`), so they are computed here from the
joint angles and the robot's flange-to-end-effector transform (F_T_EE, which is in the message).
The parameters are those Franka Robotics publish for the arm (modified DH convention, Craig):
frame i is reached from frame i-1 by a rotation alpha about x, a shift a along x, a rotation
theta_i (the joint angle) about z and a shift d along z; the flange is a fixed frame after joint 7.
"""

from __future__ import annotations

import numpy as np

# (a [m], d [m], alpha [rad]) of joints 1..7, then the flange (theta 0)
DH = (
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -np.pi / 2),
    (0.0, 0.316, np.pi / 2),
    (0.0825, 0.0, np.pi / 2),
    (-0.0825, 0.384, -np.pi / 2),
    (0.0, 0.0, np.pi / 2),
    (0.088, 0.0, np.pi / 2),
)
FLANGE = (0.0, 0.107, 0.0)
N_JOINTS = 7


def dh_transform(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    """The 4x4 transform from frame i-1 to frame i (modified DH)."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array(
        [
            [ct, -st, 0.0, a],
            [st * ca, ct * ca, -sa, -d * sa],
            [st * sa, ct * sa, ca, d * ca],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def joint_frames(q) -> list[np.ndarray]:
    """Base-frame poses of the frames of joints 1..7 (each joint turns about its frame's z) and the flange."""
    q = np.asarray(q, dtype=float)
    if q.shape != (N_JOINTS,):
        raise ValueError(f"expected {N_JOINTS} joint angles, got {q.shape}")
    frames, pose = [], np.eye(4)
    for (a, d, alpha), theta in zip(DH, q, strict=True):
        pose = pose @ dh_transform(a, d, alpha, theta)
        frames.append(pose)
    frames.append(pose @ dh_transform(*FLANGE, 0.0))
    return frames


def flange_pose(q) -> np.ndarray:
    """O_T_F: the flange in the base frame."""
    return joint_frames(q)[-1]


def end_effector_pose(q, f_t_ee: np.ndarray) -> np.ndarray:
    """O_T_EE = O_T_F F_T_EE."""
    return flange_pose(q) @ f_t_ee


def zero_jacobian(q, f_t_ee: np.ndarray) -> np.ndarray:
    """The 6x7 zero Jacobian of the end effector: rows linear then angular velocity, base frame (as
    libfranka's zeroJacobian(kEndEffector))."""
    frames = joint_frames(q)
    p_ee = (frames[-1] @ f_t_ee)[:3, 3]
    jacobian = np.zeros((6, N_JOINTS))
    for i, frame in enumerate(frames[:N_JOINTS]):
        axis, origin = frame[:3, 2], frame[:3, 3]
        jacobian[:3, i] = np.cross(axis, p_ee - origin)
        jacobian[3:, i] = axis
    return jacobian
