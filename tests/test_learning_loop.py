"""`scripts/hil_serl.py ram_insertion_state loop`, the learning loop, end to end with small counts, as a user runs it:
its own world (on a free port), the scripted expert, HIL-SERL's unaltered record_demos.py and train_rlpd.py
(learner, then actor), the loop's evaluations while training and its named checkpoint.

What it must hold to (issue: learning a user can rely on), each read from the run's record (loop.json) and logs:
- checkpoints are evaluated while training, with the training paused: the actor parks between two episodes, the
  learner and the expert are stopped; the training minutes leave the pauses out, and the learner's step goes on
  rising after each pause;
- the evaluations' env is the policy alone: no SpaceMouse wrapper, no expert running (asserted by evaluate.py
  and recorded);
- selection and confirmation episodes are disjoint (their seeds and their starts);
- the named checkpoint is the one the selection episodes choose, and its fresh episodes are counted with an
  interval;
- the expert's patience counts from each episode's first step;
- the learner paced (`max_updates_per_transition`) draws no more batches than its pace allows;
- nothing is left running.

Slow (marked `slow`, about 7 minutes on the 2-core machine); `make test` runs it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from harness import free_port
from test_hil_serl_runner import Runner

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import learning_record  # noqa: E402

pytestmark = pytest.mark.slow
PATIENCE = 3.0
GROWN = 4.0  # --patience-grows 0:GROWN: the expert's patience from the first evaluation on
PACE = 4  # the learner's batches per online transition at most (state_agent.pace): 2 learner steps (cta_ratio 2)


@pytest.mark.timeout(900)
def test_the_loop_evaluates_while_training_and_names_a_checkpoint_confirmed_on_fresh_episodes(tmp_path):
    url = f"http://127.0.0.2:{free_port()}"  # a world of the loop's own, beside any other
    # two evaluations while training need the first checkpoint before minute 3.2 - 0.5: it comes after the demos
    # and the learner's start-up (imports, JIT), which the training clock counts (minute 1.9 for checkpoint 200 on
    # a CI runner, 2.06 for checkpoint 100 on the 2-core machine)
    flags = ["loop", "--demos", "2", "--minutes", "3.2", "--eval-every", "0.5", "--select-episodes", "2",
             "--fresh-episodes", "2", "--mode-episodes", "1", "--goal", "0.9", "--patience", str(PATIENCE),
             "--patience-grows", f"0:{GROWN:g}",
             "--train-config", json.dumps({"checkpoint_period": 100, "max_updates_per_transition": PACE})]  # fmt: skip
    runner = Runner(tmp_path, *flags, env={"FRANKA_SIM_URL": url}, task="ram_insertion_state")
    assert runner.finish(840) == 0, runner.output
    assert runner.left_running() == []
    logs = sorted((tmp_path / "logs").glob("loop-*"))[-1]
    record = json.loads((logs / "loop.json").read_text())

    # evaluated while training, paused: at least two selection evaluations before the end, each a pause
    during = [c for c in record["checkpoints"] if c["minutes"] < record["minutes"]]
    assert len(during) >= 2 and len(record["pauses"]) >= 2, record["pauses"]
    assert all(len(c["episodes"]) == 2 for c in record["checkpoints"])
    # the learner went on after each pause: logged learner steps after it beyond those before it
    steps = [(r["time"], r["step"]) for r in learning_record.read_metrics(logs / "learner_metrics.jsonl")
             if "actor/temperature" in r]  # fmt: skip
    for pause in record["pauses"]:
        start, end = pause["wall"]
        before = [s for t, s in steps if t < start]
        after = [s for t, s in steps if t > end + 1.0]
        if before and after:
            assert max(after) > max(before), pause

    # paced: the learner's updates (cta_ratio batches from the online buffer each) within PACE batches of each
    # transition the actor sent to the online buffer (the iterator draws 2 batches ahead)
    online = sum(n["received"] for name, n in record["train"]["transitions"]["by_name"].items()
                 if name.startswith("actor_env@"))  # fmt: skip
    assert 0 < record["train"]["learner_updates"] * 2 <= PACE * online + 2, (record["train"], online)

    # the policy alone: no SpaceMouse wrapper, no expert running, in every evaluation
    outputs = sorted(logs.glob("select-*.json")) + sorted(logs.glob("fresh-*.json")) + sorted(logs.glob("mode-*.json"))
    assert outputs
    for output in outputs:
        evaluation = json.loads(output.read_text())
        assert not {"SpacemouseIntervention", "DualSpacemouseIntervention"} & set(evaluation["wrappers"]), output
        assert evaluation["experts_running"] == [], output

    # selection and confirmation episodes are disjoint
    selection = [e for c in record["checkpoints"] for e in c["episodes"]]
    fresh = [e for c in record["confirmations"] for e in c["episodes"]]
    assert fresh and selection
    assert {tuple(e["start"]) for e in selection}.isdisjoint({tuple(e["start"]) for e in fresh})
    assert {c["seed"] for c in record["checkpoints"]}.isdisjoint({c["seed"] for c in record["confirmations"]})

    # the named checkpoint: chosen on selection episodes, confirmed on fresh ones, with its interval
    assert record["named"]["step"] == learning_record.choose(record["checkpoints"])["step"]
    named_fresh = [c for c in record["confirmations"] if c["step"] == record["named"]["step"]]
    assert named_fresh and record["fresh"]["episodes"] == 2
    assert record["fresh"]["interval"] == list(learning_record.interval(record["fresh"]["successes"], 2))
    assert record["last_fresh"]["episodes"] == 2 and record["mode"]["episodes"] == 1
    assert "the loop names checkpoint_" in runner.output and "fresh episodes (95 % interval" in runner.output

    # the expert's patience counted from each episode's first step; grown after the first evaluation
    # (--patience-grows 0:GROWN), told to the expert after that pause, and the grown one taken from its next episode
    expert = (logs / "expert.log").read_text()
    before, told, after = expert.partition(f"[patience] {GROWN:g} s from the next episode on")
    assert told, expert
    intervened = r"ticks of intervention from ([\d.]+) s on"
    waited, grown = ([float(s) for s in re.findall(intervened, part)] for part in (before, after))
    assert waited and all(w >= PATIENCE - 0.05 for w in waited), waited
    assert grown and all(w >= GROWN - 0.05 for w in grown), grown
    first = record["checkpoints"][0]
    assert record["patience_grows"] == [[0.0, GROWN]], record["patience_grows"]
    assert [(c["step"], c["patience_s"]) for c in record["patience_changes"]] == [(first["step"], GROWN)]
    assert [c["patience_s"] for c in record["checkpoints"]] == [PATIENCE] + [GROWN] * (len(record["checkpoints"]) - 1)
