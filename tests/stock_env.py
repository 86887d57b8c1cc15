"""The HTTP call sequence of HIL-SERL's stock FrankaEnv, written from the facts of contract.md section 1
(not copied): constructor, reset() with its interpolated move, step() at 10 Hz. Tests play it against
the real server and simulator; experiment configs are plain dicts of the values their config.py sets."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

HZ = 10


def euler_to_quat(euler) -> np.ndarray:
    return Rotation.from_euler("xyz", euler).as_quat()


@dataclass
class ExperimentConfig:
    """The values of an experiment's EnvConfig that the env's HTTP traffic depends on."""

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


class StockEnv:
    """What FrankaEnv sends, in its order; `robot` is the tests' HTTP client (conftest.Robot)."""

    def __init__(self, robot, config: ExperimentConfig, rng: np.random.Generator | None = None) -> None:
        self.robot, self.config = robot, config
        self.rng = rng or np.random.default_rng(0)
        self.resetpos = np.concatenate([config.reset_pose[:3], euler_to_quat(config.reset_pose[3:])])
        self.state = self._getstate()  # the constructor reads every key once
        self.currpos = np.array(self.state["pose"])

    # ------------------------------------------------------------------ the env's HTTP helpers
    def _getstate(self) -> dict:
        state = self.robot.state()
        assert set(state) == {"pose", "vel", "force", "torque", "q", "dq", "jacobian", "gripper_pos"}
        assert np.array(state["jacobian"]).reshape((6, 7)).shape == (6, 7)
        return state

    def _update_currpos(self) -> None:
        self.state = self._getstate()
        self.currpos = np.array(self.state["pose"])

    def _send_pos_command(self, pose: np.ndarray) -> None:
        self.robot.post("clearerr")
        # float32, as the env sends it; the env never reads the answer, the test does
        assert self.robot.ok("pose", {"arr": np.asarray(pose).astype(np.float32).tolist()}) == "Moved"

    def _update_param(self, params: dict) -> None:
        assert self.robot.ok("update_param", params) == "Updated compliance parameters"

    def interpolate_move(self, goal: np.ndarray, timeout: float) -> None:
        if goal.shape == (6,):
            goal = np.concatenate([goal[:3], euler_to_quat(goal[3:])])
        self._update_currpos()
        for pose in np.linspace(self.currpos, goal, int(timeout * HZ)):  # non-unit quaternions on the way
            self._send_pos_command(pose)
            time.sleep(1.0 / HZ)
        self._update_currpos()

    # ------------------------------------------------------------------ reset() and step()
    def reset_target(self) -> np.ndarray:
        """The reset pose, randomised as the env does when RANDOM_RESET is set."""
        pose = self.resetpos.copy()
        if self.config.random_reset:
            pose[:2] += self.rng.uniform(-self.config.random_xy_range, self.config.random_xy_range, 2)
            euler = self.config.reset_pose[3:].copy()
            euler[-1] += self.rng.uniform(-self.config.random_rz_range, self.config.random_rz_range)
            pose[3:] = euler_to_quat(euler)
        return pose

    def reset(self, joint_reset: bool = False) -> np.ndarray:
        """FrankaEnv.reset(): returns the reset pose it aimed for."""
        self._update_param(self.config.compliance_param)
        self.robot.ok("clearerr")
        # go_to_reset()
        self._update_currpos()
        self._send_pos_command(self.currpos)
        time.sleep(0.3)
        self._update_param(self.config.precision_param)
        time.sleep(0.5)
        if joint_reset:
            assert self.robot.ok("jointreset") == "Reset Joint"
            time.sleep(0.5)
        target = self.reset_target()
        self.interpolate_move(target, timeout=1.0)
        self._update_param(self.config.compliance_param)
        self.robot.ok("clearerr")
        self._update_currpos()
        return target

    def clip_safety_box(self, pose: np.ndarray) -> np.ndarray:
        low, high = self.config.abs_pose_limit_low, self.config.abs_pose_limit_high
        if low is None:
            return pose
        pose[:3] = np.clip(pose[:3], low[:3], high[:3])
        euler = Rotation.from_quat(pose[3:]).as_euler("xyz")
        euler[0] = np.sign(euler[0]) * np.clip(np.abs(euler[0]), low[3], high[3])
        euler[1:] = np.clip(euler[1:], low[4:], high[4:])
        pose[3:] = euler_to_quat(euler)
        return pose

    def step(self, action: np.ndarray, gripper_route: str | None = None) -> dict:
        """FrankaEnv.step(): a relative move scaled by ACTION_SCALE, clipped to the safety box; then the
        period's rest; then the state. `gripper_route`: a binary gripper command sent first (0.6 s sleep)."""
        start = time.monotonic()
        action = np.clip(action, -1.0, 1.0)
        nextpos = self.currpos.copy()
        nextpos[:3] += action[:3] * self.config.action_scale[0]
        nextpos[3:] = (
            Rotation.from_euler("xyz", action[3:6] * self.config.action_scale[1]) * Rotation.from_quat(self.currpos[3:])
        ).as_quat()
        if gripper_route is not None:
            self.robot.ok(gripper_route)
            time.sleep(0.6)
        self._send_pos_command(self.clip_safety_box(nextpos))
        time.sleep(max(0.0, 1.0 / HZ - (time.monotonic() - start)))
        self._update_currpos()
        return self.state


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
        **{f"translational_clip_{s}{a}": 0.1 for s in ("", "neg_") for a in "xyz"},
        **{f"rotational_clip_{s}{a}": 0.1 for s in ("", "neg_") for a in "xyz"},
        "rotational_Ki": 0.0,
    },
)


def send_gripper_command(env: StockEnv, pos: float) -> None:
    """FrankaEnv._send_gripper_command (binary): close below -0.5 when open (> 0.85), open above 0.5 when
    closed (< 0.85), each followed by a 0.6 s sleep (the env's time since the last command is ignored)."""
    opening = env.state["gripper_pos"]
    if pos <= -0.5 and opening > 0.85:
        env.robot.ok("close_gripper")
        time.sleep(0.6)
    elif pos >= 0.5 and opening < 0.85:
        env.robot.ok("open_gripper")
        time.sleep(0.6)


def ram_reset(env: StockEnv) -> np.ndarray:
    """RAMEnv.reset() (examples/experiments/ram_insertion/wrapper.py): recover, pull up 4 cm above the reset
    height under the precision parameters, the (random) reset pose, the compliance parameters. Returns
    the reset pose it aimed for."""
    env.robot.ok("clearerr")
    env._update_currpos()
    env._send_pos_command(env.currpos)
    time.sleep(0.3)
    env._update_param(env.config.precision_param)
    env._update_currpos()
    pulled_up = env.currpos.copy()
    pulled_up[2] = env.resetpos[2] + 0.04
    env.interpolate_move(pulled_up, timeout=1.0)
    target = env.reset_target()
    env._send_pos_command(target)
    time.sleep(0.5)
    env._update_param(env.config.compliance_param)
    env.robot.ok("clearerr")
    env._update_currpos()
    return target


def usb_reset(env: StockEnv) -> None:
    """USBEnv.reset() (examples/experiments/usb_pickup_insertion/wrapper.py): open, grasp the stick at
    TARGET_POSE, pull it 4 cm out along +y, FrankaEnv.reset() to the (random) reset pose, open (it drops)."""
    config = env.config
    target = np.concatenate([config.target_pose[:3], euler_to_quat(config.target_pose[3:])])

    def move(goal: np.ndarray, timeout: float) -> None:  # USBEnv.interpolate_move: one pose, then wait
        env._send_pos_command(goal)
        time.sleep(timeout)
        env._update_currpos()

    env.robot.ok("clearerr")
    env._update_currpos()
    env._send_pos_command(env.currpos)
    time.sleep(0.1)
    env._update_param(config.precision_param)
    send_gripper_command(env, 1.0)
    above = env.currpos.copy()
    above[2] = config.target_pose[2] + 0.05
    move(above, 0.5)
    time.sleep(0.5)
    move(target, 0.5)
    time.sleep(0.5)
    env._update_currpos()
    send_gripper_command(env, -1.0)
    env._update_currpos()
    pulled = target.copy()
    pulled[1] += 0.04
    move(pulled, 0.5)
    # FrankaEnv.reset() with USBEnv.go_to_reset(): the (random) reset pose, 1 s, the compliance parameters
    env._update_param(config.compliance_param)
    env.robot.ok("clearerr")
    move(env.reset_target(), 1.0)
    env._update_param(config.compliance_param)
    env.robot.ok("clearerr")
    env._update_currpos()
    send_gripper_command(env, 1.0)
    time.sleep(1.0)
    env._update_currpos()


# HIL-SERL examples/experiments/object_handover/config.py: LeftEnvConfig and RightEnvConfig (the values their
# HTTP traffic depends on); HandOffEnv (its wrapper.py) clips the yaw as it clips the roll, by magnitude
def _handover_param(clips: tuple[float, float, float, float, float, float], rot_clip: float) -> dict:
    cx, cy, cz, nx, ny, nz = clips
    return {
        "translational_stiffness": 2000,
        "translational_damping": 89,
        "rotational_stiffness": 120,
        "rotational_damping": 5,
        "translational_Ki": 0,
        "translational_clip_x": cx,
        "translational_clip_y": cy,
        "translational_clip_z": cz,
        "translational_clip_neg_x": nx,
        "translational_clip_neg_y": ny,
        "translational_clip_neg_z": nz,
        **{f"rotational_clip_{s}{a}": rot_clip if rot_clip else {"x": 0.02, "y": 0.03, "z": 0.02}[a]
           for s in ("", "neg_") for a in "xyz"},
        "rotational_Ki": 0,
    }  # fmt: skip


HANDOVER_LEFT = ExperimentConfig(
    reset_pose=np.array([0.6, -0.02, 0.42, np.pi, 0.0, 0.0]),
    abs_pose_limit_low=np.array([0.4, -0.03, 0.3, np.pi - 0.01, -0.3, 0.0]),
    abs_pose_limit_high=np.array([0.67, -0.01, 0.42, np.pi + 0.01, 0.0, 0.01]),
    action_scale=(0.04, 0.2, 1.0),
    compliance_param=_handover_param((0.0085, 0.005, 0.005, 0.01, 0.005, 0.006), 0.0),
    precision_param=_handover_param((0.01, 0.01, 0.01, 0.01, 0.01, 0.01), 0.04),
)
HANDOVER_RIGHT = ExperimentConfig(
    reset_pose=np.array([0.4, 0.0, 0.5, np.pi, 0.0, np.pi]),
    abs_pose_limit_low=np.array([0.32, -0.01, 0.36, np.pi - 0.01, 0.0, np.pi - 0.01]),
    abs_pose_limit_high=np.array([0.67, 0.01, 0.5, np.pi + 0.01, 0.3, np.pi + 0.01]),
    action_scale=(0.04, 0.2, 1.0),
    compliance_param=_handover_param((0.0085, 0.005, 0.005, 0.007, 0.005, 0.006), 0.0),
    precision_param=_handover_param((0.02, 0.01, 0.01, 0.02, 0.01, 0.01), 0.04),
)
HANDOVER_GRIPPER_SLEEP = 1.0  # GRIPPER_SLEEP of both configs
HANDOVER_GRIPPER_INTERVAL = 2.0  # HandOffEnv._send_gripper_command: at least this long between gripper commands


def handoff_clip_safety_box(env: StockEnv, pose: np.ndarray) -> np.ndarray:
    """HandOffEnv.clip_safety_box: the position box, |roll| and |yaw| into their ranges (sign kept), pitch."""
    low, high = env.config.abs_pose_limit_low, env.config.abs_pose_limit_high
    pose[:3] = np.clip(pose[:3], low[:3], high[:3])
    euler = Rotation.from_quat(pose[3:]).as_euler("xyz")
    euler[0] = np.sign(euler[0]) * np.clip(np.abs(euler[0]), low[3], high[3])
    euler[2] = np.sign(euler[2]) * np.clip(np.abs(euler[2]), low[5], high[5])
    euler[1] = np.clip(euler[1], low[4], high[4])
    pose[3:] = euler_to_quat(euler)
    return pose


def handover_reset(env: StockEnv) -> None:
    """HandOffEnv.reset() of one arm (FrankaEnv.reset with HandOffEnv.go_to_reset): recover, up to at least
    the reset height under the precision parameters (1 s), /open_gripper, the reset pose (0.5 s), the
    compliance parameters. (The original then waits for a person to press Enter.)"""
    env._update_param(env.config.compliance_param)
    env.robot.ok("clearerr")
    env._update_currpos()
    env._send_pos_command(env.currpos)
    time.sleep(0.1)
    env._update_param(env.config.precision_param)
    time.sleep(0.1)
    up = env.currpos.copy()
    up[2] = max(up[2], env.config.reset_pose[2])
    env.interpolate_move(up, timeout=1.0)
    env.robot.ok("open_gripper")
    time.sleep(0.5)
    env.interpolate_move(env.resetpos.copy(), timeout=0.5)
    time.sleep(0.5)
    env._update_param(env.config.compliance_param)
    env.robot.ok("clearerr")
    env._update_currpos()


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
