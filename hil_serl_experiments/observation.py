"""What a state-based experiment observes (runs in HIL-SERL's environment).

- `TargetFrame`: the hand's pose relative to the config's TARGET_POSE. HIL-SERL's examples see the pose relative
  to the episode's random start (RelativeFrame), and their wrist cameras locate the slot; without images that
  pose says nothing of where the slot is. The pose relative to a fixed TARGET_POSE is the robot's own measured
  pose in a fixed frame (no ground truth): position minus the target's, in the base frame (the actions' frame),
  and the rotation from the target's as a rotation vector (continuous where the Euler angles of a hand pointing
  down jump between +pi and -pi).
- `PrivilegedPose`: an object's pose from the simulator's ground truth (GET /task), in the same frame as the hand's
  (TargetFrame), under the state key `privileged_<object>_pose`. Privileged: no sensor of the real set-up gives it
  (HIL-SERL's policies locate the object in their camera images); a state-based experiment on the simulator
  needs it where the object starts somewhere the hand's pose does not tell (usb_pickup_insertion: where the
  stick fell). The name says so in every observation, config and figure.
- `TaskUnits`: each state value in units of what the task resolves (`UNITS`: 1 mm, 0.01 rad, 1 cm/s, 0.1 rad/s,
  1 N, 0.1 Nm) instead of SI units. In SI units every value the policy sees is of order 0.01 (a position 5 mm
  off is 0.005) beside a constant force reading of 0.2 N, and HIL-SERL's state encoder (Dense, then LayerNorm,
  then tanh) normalises the sum: a millimetre of position, what decides the insertion, reaches the networks as a
  fraction of a percent of the encoder's output. In these units it is one.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import requests
from scipy.spatial.transform import Rotation

# per state key, the size of one unit in SI units (after TargetFrame: tcp_pose is position and rotation vector)
UNITS = {
    "tcp_pose": (1e-3, 1e-3, 1e-3, 1e-2, 1e-2, 1e-2),  # 1 mm (the slot's play: 1.25 mm a side), 0.01 rad
    "tcp_vel": (1e-2, 1e-2, 1e-2, 1e-1, 1e-1, 1e-1),  # 1 cm/s (1 mm a step at 10 Hz), 0.1 rad/s
    "tcp_force": (1.0, 1.0, 1.0),  # 1 N
    "tcp_torque": (0.1, 0.1, 0.1),  # 0.1 Nm
}
PRIVILEGED = "privileged_{}_pose"  # the state key of an object's pose from the ground truth (PrivilegedPose)


def arm_units(arms: tuple[str, ...]) -> dict[str, tuple[float, ...]]:
    """UNITS for the state keys of each of `arms` in a DualFrankaEnv ("left/tcp_pose", ...)."""
    return {f"{arm}/{key}": unit for arm in arms for key, unit in UNITS.items()}


class InTarget:
    """A pose [x, y, z, qx, qy, qz, qw] in the frame of `target` (the config's [x, y, z, rx, ry, rz]) as 6 values:
    position minus the target's (base frame), rotation vector from the target's."""

    def __init__(self, target: np.ndarray) -> None:
        self.pos = np.asarray(target[:3], dtype=float)
        self.rot = Rotation.from_euler("xyz", target[3:6])

    def __call__(self, pose: np.ndarray) -> np.ndarray:
        return np.concatenate([pose[:3] - self.pos, (self.rot.inv() * Rotation.from_quat(pose[3:7])).as_rotvec()])


class TargetFrame(gym.ObservationWrapper):
    """tcp_pose (7: xyz, quaternion) -> (6): position minus the target's, rotation vector from the target's. `key`:
    the state key of the pose (an arm's of two: "left/tcp_pose", "right/tcp_pose", each with its own target)."""

    def __init__(self, env: gym.Env, target: np.ndarray, key: str = "tcp_pose") -> None:
        super().__init__(env)
        self.in_target, self.key = InTarget(target), key
        self.observation_space["state"][key] = gym.spaces.Box(-np.inf, np.inf, shape=(6,))

    def observation(self, observation: dict) -> dict:
        observation["state"][self.key] = self.in_target(observation["state"][self.key])
        return observation


class PrivilegedPose(gym.ObservationWrapper):
    """Adds `privileged_<name>_pose` (6, in TargetFrame's frame) to the state: object `name`'s pose from the
    simulator's ground truth (GET /task at `url`), read at each observation; the answer stays in `task` (the
    GroundTruth outside it reads the step's success there instead of asking again). `prefix` goes before the key
    (a two-arm env's "world/": its place in the state's sorted keys, after both arms')."""

    def __init__(self, env: gym.Env, target: np.ndarray, url: str, name: str, prefix: str = "") -> None:
        super().__init__(env)
        self.in_target = InTarget(target)
        self.url, self.name, self.key = url.rstrip("/") + "/task", name, prefix + PRIVILEGED.format(name)
        self.session = requests.Session()
        self.observation_space["state"][self.key] = gym.spaces.Box(-np.inf, np.inf, shape=(6,))

    def observation(self, observation: dict) -> dict:
        response = self.session.get(self.url, timeout=5.0)
        response.raise_for_status()
        self.task = response.json()
        pose = np.asarray(self.task["objects_in_base"][self.name], dtype=float)
        observation["state"][self.key] = self.in_target(pose)
        return observation


class TaskUnits(gym.ObservationWrapper):
    """The state's values in `UNITS` (those of its keys that UNITS names)."""

    def __init__(self, env: gym.Env, units: dict[str, tuple[float, ...]] | None = None) -> None:
        super().__init__(env)
        state = self.observation_space["state"]
        self.units = {k: np.asarray(v, dtype=float) for k, v in (units or UNITS).items() if k in state.spaces}
        for key, unit in self.units.items():
            if state[key].shape != unit.shape:
                raise ValueError(f"{key}: {state[key].shape} values, {unit.shape} units")

    def observation(self, observation: dict) -> dict:
        for key, unit in self.units.items():
            observation["state"][key] = observation["state"][key] / unit
        return observation
