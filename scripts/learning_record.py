"""The record of a learning loop (scripts/hil_serl.py TASK loop): what a run measured, in a form anyone can check.

Standard library only (the runner's Python). A run's record (`loop.json`, and benchmarks/learning/<exp>-<seed>.json
for `make bench-learning`) holds:
- `checkpoints`: each evaluated checkpoint with its *selection* episodes (the episodes that choose the checkpoint);
- `confirmations`: a checkpoint on *fresh* episodes (other seeds: they played no part in choosing it);
- `named`: the checkpoint the loop hands the user, chosen on selection episodes alone (the best rate; of equal
  rates the latest), and `fresh`, its rate on fresh episodes with the 95 % interval;
- `last_fresh`: the same for the run's last checkpoint; `minutes_to_goal`: the training minutes from the first demo
  to the first checkpoint whose selection rate reached the goal and whose fresh episodes then confirmed it;
- `training`: the actor's episodes (interventions, the policy's own successes) and SAC's figures (temperature,
  entropy, Q, critic loss) in bins of training minutes, from the learner's metrics (hil_serl_experiments/metrics.py).

Training minutes exclude the evaluations: the loop pauses the actor between two episodes and stops the learner
while it evaluates (`Clock`).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

Z95 = 0.975  # the two-sided 95 % interval's upper quantile


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return sum(math.comb(n, i) * p**i * (1.0 - p) ** (n - i) for i in range(k + 1))


def interval(successes: int, episodes: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson (exact) interval of a success rate: the rates not rejected at 1 - confidence, two-sided."""
    if episodes <= 0:
        return 0.0, 1.0
    tail = (1.0 - confidence) / 2.0

    def solve(f, target: float) -> float:  # f increasing in p on [0, 1]: bisection
        low, high = 0.0, 1.0
        for _ in range(60):
            mid = (low + high) / 2.0
            low, high = (mid, high) if f(mid) < target else (low, mid)
        return (low + high) / 2.0

    low = 0.0 if successes == 0 else solve(lambda p: 1.0 - binomial_cdf(successes - 1, episodes, p), tail)
    high = 1.0 if successes == episodes else solve(lambda p: 1.0 - binomial_cdf(successes, episodes, p), 1.0 - tail)
    return round(low, 4), round(high, 4)


def rate(episodes: list[dict]) -> dict:
    """{episodes, successes, rate, interval} of a list of evaluation episodes."""
    n, wins = len(episodes), sum(bool(e["success"]) for e in episodes)
    return {"episodes": n, "successes": wins, "rate": round(wins / n, 4) if n else 0.0, "interval": interval(wins, n)}


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": model or platform.processor(), "system": platform.platform()}


@dataclass
class Clock:
    """Training minutes from the first demo, without the pauses of the evaluations."""

    first_demo: float  # time.time() of the first demo
    pauses: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of each pause, time.time()
    paused_at: float | None = None

    def pause(self) -> None:
        self.paused_at = time.time()

    def resume(self) -> None:
        if self.paused_at is not None:
            self.pauses.append((self.paused_at, time.time()))
            self.paused_at = None

    def minutes(self, at: float | None = None) -> float:
        """Training minutes at wall-clock time `at` (default now)."""
        at = time.time() if at is None else at
        if self.paused_at is not None:
            at = min(at, self.paused_at)
        paused = sum(max(0.0, min(end, at) - start) for start, end in self.pauses if start < at)
        return (at - self.first_demo - paused) / 60.0


def choose(checkpoints: list[dict]) -> dict | None:
    """The checkpoint to name, from selection episodes alone: the best rate; of equal rates the latest."""
    scored = [c for c in checkpoints if c.get("episodes")]
    if not scored:
        return None
    return max(scored, key=lambda c: (rate(c["episodes"])["rate"], c["step"]))


def read_metrics(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:  # the line being written when the learner was stopped
            continue
    return records


AGENT_KEYS = {  # SAC's update info as train_rlpd.py logs it (critic/..., actor/..., temperature/...)
    "temperature": "actor/temperature",
    "entropy": "actor/entropy",
    "q": "critic/predicted_qs",
    "target_q": "critic/target_qs",
    "critic_loss": "critic/critic_loss",
    "actor_loss": "actor/actor_loss",
}


def median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def training_bins(records: list[dict], clock: Clock, width: float = 5.0) -> list[dict]:
    """The run in bins of `width` training minutes: the actor's episodes (steps, intervened steps and their rate,
    episodes the policy finished alone) and SAC's figures (medians), with the learner's step at the bin's end."""
    bins: dict[int, dict] = {}

    def at(record: dict) -> dict:
        index = int(clock.minutes(record["time"]) // width)
        return bins.setdefault(index, {"episodes": 0, "steps": 0, "intervened": 0, "alone": 0, "learner_step": 0,
                                       **{k: [] for k in AGENT_KEYS}})  # fmt: skip

    for record in records:
        if "time" not in record:
            continue
        if "environment/episode/l" in record:
            b = at(record)
            b["episodes"] += 1
            b["steps"] += int(record["environment/episode/l"])
            intervened = int(record.get("environment/episode/intervention_steps", 0))
            b["intervened"] += intervened
            b["alone"] += int(intervened == 0 and record.get("environment/succeed", 0) > 0)
        elif AGENT_KEYS["temperature"] in record:
            b = at(record)
            b["learner_step"] = max(b["learner_step"], int(record.get("step") or 0))
            for key, name in AGENT_KEYS.items():
                if name in record:
                    b[key].append(float(record[name]))
    out = []
    for index in sorted(bins):
        b = bins[index]
        row = {"minutes": [index * width, (index + 1) * width], "learner_step": b["learner_step"],
               "episodes": b["episodes"], "env_steps": b["steps"], "intervened_steps": b["intervened"],
               "intervention_rate": round(b["intervened"] / b["steps"], 4) if b["steps"] else None,
               "policy_alone_successes": b["alone"]}  # fmt: skip
        row.update({k: (round(v, 5) if (v := median(b[k])) is not None else None) for k in AGENT_KEYS})
        out.append(row)
    return out


def learner_rate(records: list[dict], clock: Clock) -> float | None:
    """Learner steps per training second, from the first to the last logged update."""
    updates = [(r["time"], r["step"]) for r in records if AGENT_KEYS["temperature"] in r and r.get("step")]
    if len(updates) < 2:
        return None
    (t0, s0), (t1, s1) = updates[0], updates[-1]
    seconds = 60.0 * (clock.minutes(t1) - clock.minutes(t0))
    return round((s1 - s0) / seconds, 2) if seconds > 0 else None
