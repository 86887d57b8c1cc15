"""The values of HIL-SERL's example configs that tests aim with (a target pose, an action scale, a parameter set),
and two small policies. The stock client itself is HIL-SERL's own code, run unaltered in its environment
(tests/hil_serl.py); tests/test_example_configs.py checks these values against HIL-SERL's configs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

HZ = 10


def euler_to_quat(euler) -> np.ndarray:
    return Rotation.from_euler("xyz", euler).as_quat()


@dataclass
class ExperimentConfig:
    """Values of an experiment's EnvConfig."""

    reset_pose: np.ndarray  # (6,) x, y, z, euler xyz
    compliance_param: dict
    precision_param: dict
    action_scale: tuple = (0.01, 0.06, 1.0)
    abs_pose_limit_low: np.ndarray | None = None
    abs_pose_limit_high: np.ndarray | None = None
    random_reset: bool = False
    random_xy_range: float = 0.0
    random_rz_range: float = 0.0
    target_pose: np.ndarray = field(default_factory=lambda: np.zeros(6))


# HIL-SERL examples/experiments/ram_insertion/config.py
RAM_TARGET_POSE = np.array([0.5881241235410154, -0.03578590131997776, 0.27843494179085326, np.pi, 0.0, 0.0])
RAM_INSERTION = ExperimentConfig(
    target_pose=RAM_TARGET_POSE,
    reset_pose=RAM_TARGET_POSE + np.array([0, 0, 0.05, 0, 0.05, 0]),
    abs_pose_limit_low=RAM_TARGET_POSE - np.array([0.03, 0.02, 0.01, 0.01, 0.1, 0.4]),
    abs_pose_limit_high=RAM_TARGET_POSE + np.array([0.03, 0.02, 0.05, 0.01, 0.1, 0.4]),
    random_reset=True,
    random_xy_range=0.02,
    random_rz_range=0.05,
    action_scale=(0.01, 0.06, 1.0),
    compliance_param={
        "translational_stiffness": 2000,
        "translational_damping": 89,
        "rotational_stiffness": 150,
        "rotational_damping": 7,
        "translational_Ki": 0,
        "translational_clip_x": 0.0075,
        "translational_clip_y": 0.0016,
        "translational_clip_z": 0.0055,
        "translational_clip_neg_x": 0.002,
        "translational_clip_neg_y": 0.0016,
        "translational_clip_neg_z": 0.005,
        "rotational_clip_x": 0.01,
        "rotational_clip_y": 0.025,
        "rotational_clip_z": 0.005,
        "rotational_clip_neg_x": 0.01,
        "rotational_clip_neg_y": 0.025,
        "rotational_clip_neg_z": 0.005,
        "rotational_Ki": 0,
    },
    precision_param={
        "translational_stiffness": 2000,
        "translational_damping": 89,
        "rotational_stiffness": 250,
        "rotational_damping": 9,
        "translational_Ki": 0.0,
        **{f"translational_clip_{s}{a}": 0.1 for s in ("", "neg_") for a in "xyz"},
        **{f"rotational_clip_{s}{a}": 0.5 for s in ("", "neg_") for a in "xyz"},  # above the 0.1 maximum
        "rotational_Ki": 0.0,
    },
)


def pose_error(pose: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """(position error [m], rotation angle [rad]) between two (x, y, z, qx, qy, qz, qw) poses."""
    angle = (Rotation.from_quat(pose[3:]).inv() * Rotation.from_quat(target[3:])).magnitude()
    return float(np.linalg.norm(pose[:3] - target[:3])), float(angle)


def proportional_action(pose: np.ndarray, target: np.ndarray, scale: tuple) -> np.ndarray:
    """A policy that steps straight toward `target`, as far as one action allows."""
    action = np.zeros(7)
    action[:3] = (target[:3] - pose[:3]) / scale[0]
    action[3:6] = (Rotation.from_quat(target[3:]) * Rotation.from_quat(pose[3:]).inv()).as_rotvec() / scale[1]
    return np.clip(action, -1.0, 1.0)


# HIL-SERL examples/experiments/usb_pickup_insertion/config.py (the values its HTTP traffic depends on)
USB_TARGET_POSE = np.array([0.553, 0.1769683108549487, 0.25097833796596336, np.pi, 0.0, -np.pi / 2])
USB_PICKUP_INSERTION = ExperimentConfig(
    target_pose=USB_TARGET_POSE,
    reset_pose=USB_TARGET_POSE + np.array([0, 0.03, 0.05, 0, 0, 0]),
    abs_pose_limit_low=USB_TARGET_POSE - np.array([0.03, 0.01, 0.03, 0.1, 0.1, 0.3]),
    abs_pose_limit_high=USB_TARGET_POSE + np.array([0.03, 0.06, 0.05, 0.1, 0.1, 0.3]),
    random_reset=True,
    random_xy_range=0.01,
    random_rz_range=0.1,
    action_scale=(0.015, 0.1, 1.0),
    compliance_param={
        "translational_stiffness": 2000,
        "translational_damping": 89,
        "rotational_stiffness": 150,
        "rotational_damping": 7,
        "translational_Ki": 0,
        "translational_clip_x": 0.006,
        "translational_clip_y": 0.0059,
        "translational_clip_z": 0.0035,
        "translational_clip_neg_x": 0.005,
        "translational_clip_neg_y": 0.005,
        "translational_clip_neg_z": 0.0035,
        "rotational_clip_x": 0.02,
        "rotational_clip_y": 0.02,
        "rotational_clip_z": 0.015,
        "rotational_clip_neg_x": 0.02,
        "rotational_clip_neg_y": 0.02,
        "rotational_clip_neg_z": 0.015,
        "rotational_Ki": 0,
    },
    precision_param={
        "translational_stiffness": 2000,
        "translational_damping": 89,
        "rotational_stiffness": 150,
        "rotational_damping": 7,
        "translational_Ki": 0.0,
        **{f"translational_clip_{s}{a}": 0.01 for s in ("", "neg_") for a in "xyz"},
        **{f"rotational_clip_{s}{a}": 0.03 for s in ("", "neg_") for a in "xyz"},
        "rotational_Ki": 0.0,
    },
)


# pick_cube is this project's default task, not a HIL-SERL experiment: a config in the style of theirs, made
# here (DefaultEnvConfig's empty parameter sets, so the server's default compliance; the jaws square to the
# cube at the reset pose)
PICK_CUBE = ExperimentConfig(
    reset_pose=np.array([0.55, 0.0, 0.30, np.pi, 0.0, np.pi / 4]),
    abs_pose_limit_low=np.array([0.35, -0.25, 0.0, np.pi - 0.2, -0.2, np.pi / 4 - 0.8]),
    abs_pose_limit_high=np.array([0.75, 0.25, 0.45, np.pi + 0.2, 0.2, np.pi / 4 + 0.8]),
    action_scale=(0.02, 0.1, 1.0),
    compliance_param={},
    precision_param={},
)
