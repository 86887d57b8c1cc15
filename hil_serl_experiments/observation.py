"""What a state-based experiment observes (runs in HIL-SERL's environment).

- `TargetFrame`: the hand's pose relative to the config's TARGET_POSE. HIL-SERL's examples see the pose relative
  to the episode's random start (RelativeFrame), and their wrist cameras locate the slot; without images that
  pose says nothing of where the slot is. The pose relative to a fixed TARGET_POSE is the robot's own measured
  pose in a fixed frame (no ground truth): position minus the target's, in the base frame (the actions' frame),
  and the rotation from the target's as a rotation vector (continuous where the Euler angles of a hand pointing
  down jump between +pi and -pi).
- `TaskUnits`: each state value in units of what the task resolves (`UNITS`: 1 mm, 0.01 rad, 1 cm/s, 0.1 rad/s,
  1 N, 0.1 Nm) instead of SI units. In SI units every value the policy sees is of order 0.01 (a position 5 mm
  off is 0.005) beside a constant force reading of 0.2 N, and HIL-SERL's state encoder (Dense, then LayerNorm,
  then tanh) normalises the sum: a millimetre of position, what decides the insertion, reaches the networks as a
  fraction of a percent of the encoder's output. In these units it is one.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from scipy.spatial.transform import Rotation

# per state key, the size of one unit in SI units (after TargetFrame: tcp_pose is position and rotation vector)
UNITS = {
    "tcp_pose": (1e-3, 1e-3, 1e-3, 1e-2, 1e-2, 1e-2),  # 1 mm (the slot's play: 1.25 mm a side), 0.01 rad
    "tcp_vel": (1e-2, 1e-2, 1e-2, 1e-1, 1e-1, 1e-1),  # 1 cm/s (1 mm a step at 10 Hz), 0.1 rad/s
    "tcp_force": (1.0, 1.0, 1.0),  # 1 N
    "tcp_torque": (0.1, 0.1, 0.1),  # 0.1 Nm
}


class TargetFrame(gym.ObservationWrapper):
    """tcp_pose (7: xyz, quaternion) -> (6): position minus the target's, rotation vector from the target's."""

    def __init__(self, env: gym.Env, target: np.ndarray) -> None:
        super().__init__(env)
        self.target_pos = np.asarray(target[:3], dtype=float)
        self.target_rot = Rotation.from_euler("xyz", target[3:6])
        self.observation_space["state"]["tcp_pose"] = gym.spaces.Box(-np.inf, np.inf, shape=(6,))

    def observation(self, observation: dict) -> dict:
        pose = observation["state"]["tcp_pose"]
        turned = (self.target_rot.inv() * Rotation.from_quat(pose[3:7])).as_rotvec()
        observation["state"]["tcp_pose"] = np.concatenate([pose[:3] - self.target_pos, turned])
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
