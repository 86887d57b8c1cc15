"""What a state-based experiment adds to HIL-SERL's env chain from the simulator (runs in HIL-SERL's environment);
what it observes: observation.py.

- `GroundTruth`: the reward from the simulator's ground truth (`GET /task` success) instead of a classifier, and
  the person's part between episodes, counted and said: where the held object has moved in the hand since the
  first reset (slid in the fingers after jams), `POST /task/reset` puts it back as a person would. For a task whose
  env's reset takes the object from where the world starts it (usb_pickup_insertion: USBEnv's reset pulls the
  plugged stick out and drops it), an episode that ended without success left it elsewhere: after the env's reset (the
  hand clear of the scene at the reset pose) it goes back where it started and the env resets again; a reset that
  leaves the task done (the stick still plugged in) is done again, and said. It also says
  when each episode starts (its first step after the reset) and ends, a line each (`EPISODE_START`,
  `EPISODE_END`: scripts/hil_serl.py hands them to the scripted expert, whose patience counts from the start, as
  a person watching the arm sees the policy begin); parks the actor between two episodes while the file named by
  $HIL_SERL_PAUSE exists (the loop evaluates a checkpoint on the same world meanwhile).

How fast the env steps, and what its steps' time goes to: step_period.py.
"""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np
import requests
from scipy.spatial.transform import Rotation

EPISODE_START = "[ground truth] episode starts"  # printed at an episode's first step (the reset has ended)
EPISODE_END = "[ground truth] episode ends"  # printed at its last step, followed by " in success" where it succeeded
PARKED = "[ground truth] parked between episodes"  # while $HIL_SERL_PAUSE exists
PAUSE_VARIABLE = "HIL_SERL_PAUSE"
RESETS_LEFT_DONE = 2  # resets again at most this many times where a reset left the task done (held None)


def server_url(default: str) -> str:
    """The simulator's server: $FRANKA_SIM_URL (each world its own actor), else `default`."""
    return (os.environ.get("FRANKA_SIM_URL") or default).rstrip("/") + "/"


def arm_server_urls(defaults: list[str]) -> list[str]:
    """A two-arm world's servers, left then right: $FRANKA_SIM_URLS (comma-separated), else `defaults`."""
    urls = [u.strip() for u in os.environ.get("FRANKA_SIM_URLS", "").split(",") if u.strip()] or defaults
    if len(urls) != len(defaults):
        raise ValueError(f"FRANKA_SIM_URLS names {len(urls)} server(s); the experiment has {len(defaults)} arms")
    return [url.rstrip("/") + "/" for url in urls]


def wrapper_of(env: gym.Env, name: str) -> gym.Env | None:
    """The wrapper of class `name` in env's chain (None: not there)."""
    while env is not None:
        if type(env).__name__ == name:
            return env
        env = getattr(env, "env", None)
    return None


def arms(env: gym.Env) -> list[gym.Env]:
    """The FrankaEnv of each arm under env's wrappers: one, or DualFrankaEnv's left and right."""
    base = env.unwrapped
    return [base.env_left, base.env_right] if hasattr(base, "env_left") else [base]


def chain(env: gym.Env) -> list[str]:
    """The class names of env's wrappers, outermost first, down to the env itself."""
    names = []
    while env is not None:
        names.append(type(env).__name__)
        env = getattr(env, "env", None)
    return names


def pose_in(frame: np.ndarray, pose: np.ndarray) -> tuple[np.ndarray, Rotation]:
    """`pose` ([x, y, z, qx, qy, qz, qw]) in `frame` (same form): position and rotation."""
    rotation = Rotation.from_quat(frame[3:7])
    return rotation.inv().apply(pose[:3] - frame[:3]), rotation.inv() * Rotation.from_quat(pose[3:7])


class GroundTruth(gym.Wrapper):
    """Reward 1 and the episode's end when the simulator's ground truth says success (info['succeed'], as
    HIL-SERL's classifier wrapper); the object put back: `held` (a name) in the hand where it has moved there, or
    (`held` None) where the world starts it when the reset finds the task undone. `puts_back` False: the env's
    reset asks a person to put it back itself (HandOffEnv's "Press Enter to continue...", which scripts/hil_serl.py
    answers after POST /task/reset), and this wrapper only rewards and says where episodes start and end."""

    def __init__(
        self,
        env: gym.Env,
        url: str,
        held: str | None,
        moved_m: float = 0.0015,
        moved_rad: float = 0.035,
        puts_back: bool = True,
    ) -> None:
        super().__init__(env)
        self.url, self.held, self.puts_back = url, held, puts_back
        self.moved_m, self.moved_rad = moved_m, moved_rad
        self.session = requests.Session()
        # an observation of the ground truth inside the chain (observation.PrivilegedPose): its GET /task of this
        # step gives the step's success too (one request a step, not two)
        self.privileged = wrapper_of(env, "PrivilegedPose")
        self.reference: tuple[np.ndarray, Rotation] | None = None
        self.replaced = 0
        self.task: dict = {}  # the ground truth of the last step (GET /task)

    def get(self, route: str, method: str = "GET") -> dict:
        response = self.session.request(method, self.url + route, timeout=5.0)
        response.raise_for_status()
        return response.json()

    def put_back(self) -> None:
        self.session.post(self.url + "task/reset", timeout=10.0).raise_for_status()

    def in_hand(self, samples: int = 3, period: float = 0.12) -> tuple[np.ndarray, Rotation]:
        """The held object's pose in the hand: the median of a few readings (the hand's state at 500 Hz and the
        objects' at 10 Hz are not taken at one instant, which reads as up to 1.5 mm while the arm settles)."""
        readings = []
        for i in range(samples):
            time.sleep(period if i else 0.0)
            hand = np.asarray(self.get("getstate", "POST")["pose"], dtype=float)
            position, rotation = pose_in(hand, np.asarray(self.get("task")["objects_in_base"][self.held], dtype=float))
            readings.append(np.concatenate([position, rotation.as_rotvec()]))
        median = np.median(readings, axis=0)
        return median[:3], Rotation.from_rotvec(median[3:])

    def step(self, action):
        observation, _, done, truncated, info = self.env.step(action)
        self.task = self.privileged.task if self.privileged is not None else self.get("task")
        success = bool(self.task["success"])
        info["succeed"] = success
        if done or truncated or success:
            print(EPISODE_END + (" in success" if success else ""), flush=True)
        return observation, int(success), done or success, truncated, info

    def reset(self, **kwargs):
        self._park()
        observation, info = self._reset(**kwargs)
        print(EPISODE_START, flush=True)
        return observation, info

    def _park(self) -> None:
        """Between two episodes, while the file $HIL_SERL_PAUSE names exists: wait (the loop evaluates)."""
        pause = os.environ.get(PAUSE_VARIABLE)
        if not pause or not os.path.exists(pause):
            return
        print(f"{PARKED} ({pause} exists)", flush=True)
        while os.path.exists(pause):
            time.sleep(0.2)
        print("[ground truth] resumed", flush=True)

    def _said_put_back(self, what: str) -> None:
        self.replaced += 1
        print(f"[ground truth] {what}: put back (POST /task/reset), {self.replaced} time(s) so far", flush=True)
        self.put_back()

    def _reset(self, **kwargs):
        if not self.puts_back:
            observation, info = self.env.reset(**kwargs)
            info["replaced"] = self.replaced
            return observation, info
        if self.held is None:  # the object where the world starts it (the task done) before the env's reset
            if not self.get("task")["success"]:
                observation, info = self.env.reset(**kwargs)  # the hand clear of the scene, at the reset pose
                self._said_put_back("the episode before ended without success")
            observation, info = self.env.reset(**kwargs)
            for _ in range(RESETS_LEFT_DONE):  # an episode starts with the task to do
                truth = self.get("task")
                if not truth["success"]:
                    break
                gripper = self.get("getstate", "POST")["gripper_pos"]
                print(f"[ground truth] the reset left the task done ({truth['detail']}; the gripper reads "
                      f"{gripper:.2f}): the env resets again", flush=True)  # fmt: skip
                observation, info = self.env.reset(**kwargs)
            info["replaced"] = self.replaced
            return observation, info
        if self.reference is None:  # the object as the task starts it: the reference for the episodes after
            self.put_back()
        observation, info = self.env.reset(**kwargs)
        position, rotation = self.in_hand()
        if self.reference is None:
            self.reference = position, rotation
        else:
            moved = float(np.linalg.norm(position - self.reference[0]))
            turned = float((rotation * self.reference[1].inv()).magnitude())
            if moved > self.moved_m or turned > self.moved_rad:
                self._said_put_back(
                    f"the {self.held} had moved {1000 * moved:.1f} mm and {np.degrees(turned):.1f} deg in the hand"
                )
                observation, info = self.env.reset(**kwargs)
        info["replaced"] = self.replaced
        return observation, info
