"""scripts/learning_record.py, in process: the figures a learning loop's record states (its intervals, the checkpoint
it names, its training clock). The loop itself runs end to end in tests/test_learning_loop.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import learning_record as lr  # noqa: E402


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    # Clopper-Pearson 95 % intervals (scipy.stats.binomtest(k, n).proportion_ci(method="exact"))
    [
        (19, 20, 0.7513, 0.9987),
        (45, 50, 0.7819, 0.9667),
        (0, 10, 0.0, 0.3085),
        (10, 10, 0.6915, 1.0),
        (1, 2, 0.0126, 0.9874),
    ],
)
def test_the_interval_is_clopper_pearsons(successes, n, low, high):
    got = lr.interval(successes, n)
    assert got == pytest.approx((low, high), abs=2e-4)


def test_the_named_checkpoint_is_the_best_on_selection_episodes_the_latest_of_equals():
    def checkpoint(step: int, wins: int, n: int = 10) -> dict:
        return {"step": step, "episodes": [{"success": i < wins} for i in range(n)]}

    assert lr.choose([checkpoint(2000, 3), checkpoint(4000, 9), checkpoint(6000, 7)])["step"] == 4000
    assert lr.choose([checkpoint(2000, 9), checkpoint(4000, 10), checkpoint(6000, 10)])["step"] == 6000
    assert lr.choose([]) is None


def test_the_training_clock_leaves_out_the_pauses():
    clock = lr.Clock(first_demo=1000.0)
    clock.pauses = [(1060.0, 1120.0), (1300.0, 1330.0)]  # a minute, then half a minute of evaluation
    assert clock.minutes(1060.0) == pytest.approx(1.0)
    assert clock.minutes(1090.0) == pytest.approx(1.0)  # within a pause the clock stands
    assert clock.minutes(1180.0) == pytest.approx(2.0)
    assert clock.minutes(1400.0) == pytest.approx(400 / 60 - 1.5)


def test_the_training_bins_count_interventions_and_the_policys_own_successes():
    clock = lr.Clock(first_demo=0.0)
    records = [
        {
            "time": 30.0,
            "environment/episode/l": 40,
            "environment/episode/intervention_steps": 20,
            "environment/succeed": 1,
        },
        {
            "time": 90.0,
            "environment/episode/l": 30,
            "environment/episode/intervention_steps": 0,
            "environment/succeed": 1,
        },
        {"time": 100.0, "step": 500, "actor/temperature": 0.01, "actor/entropy": -3.0, "critic/predicted_qs": 0.5},
        {
            "time": 400.0,
            "environment/episode/l": 100,
            "environment/episode/intervention_steps": 0,
            "environment/succeed": 0,
        },
    ]
    first, second = lr.training_bins(records, clock, width=5.0)
    assert first["minutes"] == [0.0, 5.0] and first["episodes"] == 2 and first["env_steps"] == 70
    assert first["intervention_rate"] == pytest.approx(20 / 70, abs=1e-4) and first["policy_alone_successes"] == 1
    assert first["temperature"] == 0.01 and first["learner_step"] == 500
    assert second["minutes"] == [5.0, 10.0] and second["policy_alone_successes"] == 0


def test_the_table_says_where_the_named_checkpoints_fresh_episodes_left_a_placed_object(tmp_path):
    """benchmarks/run.py's row of end poses (placed_offsets), from a committed record: usb run 14's named checkpoint
    on 50 fresh episodes, 22 failures and 28 successes, each axis's span and median offset (no '|': it is a table
    cell) and the object's turn from where the task file places it; '-' for a task that is not placed
    (object_handover: held) and for episodes without end poses. Run in a process of its own: benchmarks/run.py
    chooses a ROS domain as it is imported."""
    record = Path(__file__).resolve().parent.parent / "benchmarks" / "learning" / "usb_pickup_insertion_state-14.json"
    code = f"""
import json, sys
sys.path.insert(0, "benchmarks")
import run
record = json.load(open({str(record)!r}))
print(run.placed_offsets(record))
print(run.placed_offsets({{**record, "experiment": "object_handover_state"}}))
for confirmation in record["confirmations"]:
    for episode in confirmation["episodes"]:
        episode.pop("objects_at_end")
print(run.placed_offsets(record))
"""
    ran = subprocess.run([sys.executable, "-c", code], cwd=record.parents[2], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    usb, handover, without = ran.stdout.splitlines()[-3:]
    failures = r"failures \(22\): x -6\.4\.\.\+3\.6 \(median 2\.0 off\), y \+2\.7\.\.\+9\.8 .* mm, turned 15\.2 deg"
    successes = r"at most; successes \(28\): x -1\.1\.\.\+1\.5 \(median 0\.7 off\)"
    assert re.match(failures + " " + successes, usb), usb
    assert handover == "-" and without == "-", (handover, without)


def test_the_table_counts_the_experts_training_episodes_where_the_record_keeps_them():
    """benchmarks/run.py's row of the expert's training episodes (training_episodes): its successes, the policy's
    own, and with --stalled the turns a stall ended; no row for a record from before the runner kept them. Run in a
    process of its own, as above."""
    code = """
import json, sys
sys.path.insert(0, "benchmarks")
import run
train = {"expert_episodes": 40, "expert_successes": 37, "policy_alone_successes": 2, "stalled_turns": 9,
         "stalled_episodes": 7}
for record in ({"seed": 3, "train": train, "stalled_s": 1.0}, {"seed": 3, "train": train},
               {"seed": 3, "train": {"expert_episodes": 40}}):
    print(json.dumps(run.training_episodes(record)))
"""
    root = Path(__file__).resolve().parent.parent
    ran = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    stalled, plain, old = (json.loads(line) for line in ran.stdout.splitlines()[-3:])
    name = "seed 3: training episodes (the expert's)"
    assert stalled == [[name, "37/40 to success, 2 by the policy alone; a stall ended the policy's turn 9 times, in 7"]]
    assert plain == [[name, "37/40 to success, 2 by the policy alone"]] and old == [], (plain, old)


def test_the_table_says_a_loop_stopped_where_fresh_episodes_confirmed_until():
    """benchmarks/run.py's row of training minutes (training_minutes), from committed records: usb run 19 met
    --until 0.9 (50 of 50 fresh at checkpoint 18,000), so it trained until its confirming evaluation began, not
    the 80 minutes it was given; run 18 (0 of 50) trained all 80. Run in a process of its own, as above."""
    root = Path(__file__).resolve().parent.parent
    code = """
import json, sys
sys.path.insert(0, "benchmarks")
import run
for seed in (19, 18):
    print(run.training_minutes(json.load(open(f"benchmarks/learning/usb_pickup_insertion_state-{seed}.json"))))
"""
    ran = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    met, full = ran.stdout.splitlines()[-2:]
    assert met == "75.86 of 80, --until met (110)" and re.fullmatch(r"80 \(\d+\)", full), (met, full)
