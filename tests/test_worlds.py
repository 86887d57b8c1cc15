"""`scripts/hil_serl.py ram_insertion_state train` with several worlds and its supervisor, end to end as a user
runs it: the experiment's demos, then HIL-SERL's unaltered train_rlpd.py (one learner, an actor per world), the
scripted expert on every world.

- Two worlds (127.0.0.2 and 127.0.0.3, one port), two actors, one learner reached at another loopback address
  (`--ip`, as a learner on another host): every transition an actor sent is received once, under that actor's
  own store names (counted at both ends: hil_serl_experiments/actors.py), and each actor dumps its own buffers.
- The supervisor (in the loop): a killed actor, then a killed world, each started again (the world with a fresh
  actor and expert), the learner's updates going on; Ctrl-C stops it all, nothing left running.

Slow (marked `slow`); `make test` runs it.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from harness import free_port
from test_hil_serl_runner import Runner, summary

pytestmark = pytest.mark.slow
TASK = "ram_insertion_state"


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """An experiment directory with one demo, and the environment that puts its worlds on a free port."""
    directory = tmp_path_factory.mktemp("worlds")
    env = {"FRANKA_SIM_URL": f"http://127.0.0.2:{free_port()}"}
    runner = Runner(directory, "demos", "--demos", "1", env=env, task=TASK)
    assert runner.finish(400) == 0, runner.output
    return directory, env


def updates(output: str) -> list[int]:
    """The learner's update counts in the runner's progress lines, in order."""
    return [int(n) for n in re.findall(r"learner (\d+) updates", output)]


@pytest.mark.timeout(900)
def test_two_worlds_feed_one_learner_and_each_transition_arrives_once(demos):
    directory, env = demos
    # 500 steps (about 40 s): each actor's share, even where an actor dies at its first reset and is started again
    # (two worlds, two actors and a learner on two cores: a world's state can go stale for a moment, a 503 without
    # "pose", and HIL-SERL's actor dies on it, as on the real robot)
    flags = ["--worlds", "2", "--steps", "500", "--ip", "127.0.0.5", "--train-config", '{"buffer_period": 50}']
    runner = Runner(directory, "train", *flags, "--checkpoint-path", "two_worlds", env=env, task=TASK)
    assert runner.finish(840) == 0, runner.output
    assert runner.left_running() == []
    port = env["FRANKA_SIM_URL"].rsplit(":", 1)[1]
    assert f"the world answers at http://127.0.0.3:{port}/" in runner.output  # the second world at its address
    result = summary(directory, "train")
    assert result["worlds"] == 2 and result["actor_steps"] >= 500
    counts = result["transitions"]
    assert counts["sent"] == counts["received"] > 0, counts
    assert all(n["sent"] == n["received"] for n in counts["by_name"].values()), counts
    senders = {name.split("@")[1].split(".")[0] for name, n in counts["by_name"].items() if n["received"]}
    assert senders == {"1", "2"}, counts  # both actors, each under names of its own
    path = directory / "two_worlds"
    assert list((path / "buffer").glob("*.pkl")) and list((path / "actors" / "2.1" / "buffer").glob("*.pkl"))


@pytest.mark.timeout(900)
def test_a_killed_actor_and_a_killed_world_are_started_again_and_training_goes_on(demos):
    """In the loop, whose world is the one its demos started (a world kill once stopped it: no restart was
    registered for a world the training found running)."""
    directory, env = demos
    flags = ["--demos", "1", "--minutes", "60", "--eval-every", "60", "--checkpoint-path", "restarts"]
    runner = Runner(directory, "loop", *flags, env=env, task=TASK)
    try:
        runner.wait_for(" updates; ", 400)  # the learner updates
        # below the world and the actor on a shared machine (--learner-nice's default), they as any process
        assert runner.started("--learner").nice() == 10 and runner.started("--actor").nice() == 0
        os.killpg(runner.started("--actor").pid, signal.SIGKILL)
        runner.wait_for("the runner starts actor again", 60)
        runner.wait_for("actor is running again", 120)
        before = max(updates(runner.output))
        os.killpg(runner.started("sim.launch.py").pid, signal.SIGKILL)
        runner.wait_for("the runner starts world again", 60)
        runner.wait_for("world is running again", 300)
        deadline = time.monotonic() + 300.0
        while max(updates(runner.output)) <= before + 50:  # the learner kept everything and goes on
            assert runner.popen.poll() is None and time.monotonic() < deadline, runner.output
            time.sleep(2.0)
        os.kill(runner.popen.pid, signal.SIGINT)
        assert runner.finish(120) == 130, runner.output
    finally:
        runner.kill()
    assert runner.left_running() == []
    restarts = summary(directory, "loop")["restarts"]
    assert [r["part"] for r in restarts] == ["actor", "world"], restarts
    assert all(r["recovery_s"] < 240 for r in restarts), restarts
