"""benchmarks/worlds.py's fault injection, in process: when its faults come and how it times a recovery. The
faults themselves are injected end to end by tests/test_worlds.py (a killed actor and world) and measured by
`make bench-worlds ARGS=--faults`."""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

_path = list(sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import worlds  # noqa: E402

sys.path[:] = _path  # worlds puts benchmarks/ and scripts/ first: the other tests' modules of the same names win


def test_the_faults_come_apart_inside_the_training_and_each_part_as_often_as_planned():
    for seed in range(20):
        plan = worlds.schedule(random.Random(seed), 40.0)
        times = [t for t, _ in plan]
        assert sorted(p for _, p in plan) == sorted(worlds.FAULTS)
        assert 120.0 <= times[0] and times[-1] <= 40 * 60.0 - 300.0
        assert all(b - a >= worlds.FAULT_SPACING_S for a, b in itertools.pairwise(times))


def test_an_evaluations_pause_between_a_kill_and_the_actor_stepping_again_is_not_counted_as_recovery():
    # an expert killed at 1000 s, an evaluation from 1002 s to 1380 s, the actor stepping again at 1390 s (as the
    # second faulted run measured 402 s); a world killed at 3000 s, back at 3020 s, with pauses before and after
    injected = [
        {"part": "expert", "stepping_after_s": 390.0, "wall": [1000.0, 1390.0]},
        {"part": "world", "stepping_after_s": 20.0, "wall": [3000.0, 3020.0]},
    ]
    pauses = [{"wall": [400.0, 800.0]}, {"wall": [1002.0, 1380.0]}, {"wall": [3100.0, 3400.0]}]
    worlds.without_pauses(injected, pauses)
    assert [f["evaluation_pause_s"] for f in injected] == [378.0, 0.0]
    assert [f["stepping_after_s"] for f in injected] == [12.0, 20.0]
    assert "(and 378 s of an evaluation's pause between)" in worlds.paused(injected[0])
    assert worlds.paused(injected[1]) == ""
