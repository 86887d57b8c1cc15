"""How fast an experiment's env steps, where a step's time goes, and a step period held at FrankaEnv's own
(runs in HIL-SERL's environment).

FrankaEnv.step sends the pose, then sleeps until 1/hz (100 ms) after the step began, then asks for the robot's
state. What comes after its sleep (the state request, the ground truth's request, the SpaceMouse wrapper, the
policy's inference and train_rlpd.py's own work between two steps) adds to the period: 15-20 ms on this 2-core
machine beside a learner, so that the actor ran at 8-8.5 env steps per second, not the robot's 10 Hz.

`StepPeriod` (the outermost wrapper of this repository's experiments) measures each step's period and its parts,
and holds the period at 1/hz by shortening FrankaEnv's sleep by what the rest of the period took: its `hz`
attribute, which that sleep is computed from, is set during each step from the median overhead of the recent
steps, and back to 10 for everything else (its resets' moves included); HIL-SERL's class is untouched. The
observation still comes after the sleep and the action after the observation, as before: only the time between two
actions is what FrankaEnv meant it to be. `hold=False` measures without holding.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque

import gymnasium as gym
import numpy as np
from ground_truth import arms

SPACEMOUSE_WRAPPERS = ("SpacemouseIntervention", "DualSpacemouseIntervention")
WINDOW = 50  # steps whose overhead sets the sleep


class StepPeriod(gym.Wrapper):
    def __init__(self, env: gym.Env, hold: bool = True, report_every: int = 20) -> None:
        super().__init__(env)
        self.arms = arms(env)  # each arm's FrankaEnv (DualFrankaEnv steps both at once, each sleeping to 1/hz)
        self.hz = float(self.arms[0].hz)  # FrankaEnv's own rate (10), as its resets keep using it
        self.period = 1.0 / self.hz
        self.step_hz = self.hz  # the rate FrankaEnv's step sleeps to (held: above hz by the overhead)
        self.hold, self.report_every = hold, report_every
        self.periods: deque[float] = deque(maxlen=2000)  # [s] call to call within an episode (the actor's loop)
        self.resets: deque[float] = deque(maxlen=200)  # [s] each reset
        self.overheads: deque[float] = deque(maxlen=WINDOW)  # [s] each period beyond FrankaEnv's sleep target
        self.parts: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=2000))  # [s] each step's parts
        self.episodes, self.last_call, self.returned = 0, None, None
        self._time_parts()

    def _time_parts(self) -> None:
        """Time the parts of a step in FrankaEnv, its SpaceMouse wrapper and the ground truth (instance attributes:
        their classes are untouched)."""
        timed = [
            (arm, method, part)
            for arm in self.arms
            for method, part in (("_send_pos_command", "pose command"), ("_update_currpos", "state request"))
        ]
        wrapper = self.env
        while isinstance(wrapper, gym.Wrapper):
            if type(wrapper).__name__ in SPACEMOUSE_WRAPPERS:
                timed.append((wrapper, "action", "SpaceMouse"))
            if type(wrapper).__name__ == "GroundTruth":
                timed.append((wrapper, "get", "ground truth"))
            if type(wrapper).__name__ == "PrivilegedPose":  # its GET /task is the step's ground-truth request
                timed.append((wrapper, "observation", "ground truth"))
            wrapper = wrapper.env
        for owner, name, part in timed:
            if hasattr(owner, name):
                setattr(owner, name, self._timer(getattr(owner, name), part))

    def _timer(self, function, part: str):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.parts[part].append(time.perf_counter() - started)

        return timed

    def step(self, action):
        now = time.perf_counter()
        if self.last_call is not None:
            period = now - self.last_call
            self.periods.append(period)
            self.parts["between steps"].append(now - self.returned)
            self.overheads.append(max(0.0, period - 1.0 / self.step_hz))
            if self.hold:  # FrankaEnv sleeps to 1/hz from its step's start: shorten that by the overhead
                self.step_hz = 1.0 / max(self.period / 2, self.period - float(np.median(self.overheads)))
        self.last_call = now
        self._set_hz(self.step_hz)
        try:
            result = self.env.step(action)
        finally:
            self._set_hz(self.hz)  # the rest of FrankaEnv (its resets' interpolated moves) as it was
        self.returned = time.perf_counter()
        self.parts["env step"].append(self.returned - now)
        return result

    def _set_hz(self, hz: float) -> None:
        for arm in self.arms:
            arm.hz = hz

    def reset(self, **kwargs):
        started, self.last_call = time.perf_counter(), None
        observation, info = self.env.reset(**kwargs)
        self.resets.append(time.perf_counter() - started)
        self.episodes += 1
        if self.episodes % self.report_every == 0:
            self.report()
        return observation, info

    def pace(self) -> dict:
        """Env steps/s within episodes, the period's p50/p99, the resets' p50 and each part's p50 [ms]."""
        if not self.periods:
            return {}
        periods = 1000 * np.array(self.periods)
        parts = {part: 1000 * float(np.median(times)) for part, times in self.parts.items() if times}
        return {
            "env_steps_per_s": 1000 / float(np.mean(periods)),
            "period_p50_ms": float(np.median(periods)),
            "period_p99_ms": float(np.percentile(periods, 99)),
            "reset_p50_s": float(np.median(self.resets)) if self.resets else None,
            "sleep_target_ms": 1000 / self.step_hz,
            "parts_p50_ms": parts,
        }

    def report(self) -> None:
        pace = self.pace()
        if not pace:
            return
        parts = pace["parts_p50_ms"]
        shown = ", ".join(f"{part} {ms:.1f}" for part, ms in parts.items() if part != "env step")
        print(
            f"[step period] pace after {self.episodes} resets: {pace['env_steps_per_s']:.2f} env steps/s within "
            f"episodes (step period p50 {pace['period_p50_ms']:.0f} ms, p99 {pace['period_p99_ms']:.0f} ms; "
            f"FrankaEnv's sleep to {pace['sleep_target_ms']:.0f} ms{' held' if self.hold else ''}); reset p50 "
            f"{pace['reset_p50_s']:.1f} s; a step's parts, ms p50: {shown}",
            flush=True,
        )
