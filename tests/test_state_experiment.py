"""hil_serl_experiments/: ram_insertion from proprioception alone (ram_insertion_state), run by HIL-SERL's own code
in its environment against a launched ram_insertion world without cameras (real launch, HTTP, MuJoCo).

- Its config, as HIL-SERL's train_rlpd.py gets it (`experiments.mappings`), builds RAMEnv and its wrappers; a reset
  and steps give the observation HIL-SERL's agent takes ({"state": (1, 18)}: tcp_pose relative to TARGET_POSE,
  tcp_vel, tcp_force, tcp_torque, in the task's units) and the 6-d action of GripperCloseEnv; the reward is the
  ground truth's.
- HIL-SERL's SACAgent, made by serl_launcher's make_sac_pixel_agent as train_rlpd.py calls it (routed to the
  state encoder by state_agent.install), takes a few updates on a tiny buffer of those real transitions, built
  as train_rlpd.py builds its buffers, sampled as its learner samples them.
- The evaluation (scripts/hil_serl.py ram_insertion_state evaluate, on the running world) scores the scripted
  expert as the policy 100 % and a zero policy 0 %, by the ground truth; and a checkpoint of that agent, saved
  after a few hundred learner steps, is restored and acts alone, each episode scored by the ground truth.
- A stick moved in the hand is put back at the next reset, and counted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import hil_serl
from test_tasks import task_world

ROOT = Path(__file__).resolve().parent.parent
OWN = ROOT / "hil_serl_experiments"
NO_CAMERAS = "cameras_config:=none"

ENV_AND_AGENT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import jax, numpy as np
import state_agent
state_agent.install()
from experiments.mappings import CONFIG_MAPPING
from serl_launcher.agents.continuous.sac import SACAgent
from serl_launcher.data import data_store
from serl_launcher.utils import launcher
from serl_launcher.utils.train_utils import concat_batches

config = CONFIG_MAPPING["ram_insertion_state"]()
env = config.get_environment(fake_env=False, save_video=False, classifier=True)
obs, _ = env.reset()
report = {"keys": sorted(obs), "state": list(obs["state"].shape), "space": list(env.observation_space["state"].shape),
          "action": list(env.action_space.shape), "pose_at_reset": obs["state"][0, 3:9].tolist()}
agent = launcher.make_sac_pixel_agent(seed=0, sample_obs=env.observation_space.sample(),
    sample_action=env.action_space.sample(), image_keys=config.image_keys, encoder_type=config.encoder_type,
    discount=config.discount)
report["agent"] = type(agent).__name__ if isinstance(agent, SACAgent) else None
buffers = [data_store.MemoryEfficientReplayBufferDataStore(env.observation_space, env.action_space, capacity=100,
           image_keys=config.image_keys, include_grasp_penalty=False) for _ in range(2)]
rewards, rng = [], np.random.default_rng(0)
for _ in range(12):
    action = rng.uniform(-0.5, 0.5, 6)
    next_obs, reward, done, truncated, info = env.step(action)
    rewards.append([reward, info["succeed"]])
    transition = dict(observations=obs, actions=action, next_observations=next_obs, rewards=reward, masks=1.0 - done,
                      dones=done)
    for buffer in buffers:
        buffer.insert(transition)
    obs = next_obs
report["rewards"] = rewards
iterators = [b.get_iterator(sample_args={"batch_size": 4, "pack_obs_and_next_obs": True}) for b in buffers]
before = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(agent.state.params)]
for _ in range(300):  # train_rlpd.py's learner step: a critic update, then critic, actor and temperature
    batch = concat_batches(next(iterators[0]), next(iterators[1]), axis=0)
    agent, _ = agent.update(batch, networks_to_update=frozenset({"critic"}))
    batch = concat_batches(next(iterators[0]), next(iterators[1]), axis=0)
    agent, update = agent.update(batch, networks_to_update=frozenset({"critic", "actor", "temperature"}))
from flax.training import checkpoints
checkpoints.save_checkpoint(sys.argv[2], agent.state, step=300, keep=1)  # as train_rlpd.py's learner saves them
after = [np.asarray(x) for x in jax.tree_util.tree_leaves(agent.state.params)]
report["changed"] = sum(not np.array_equal(a, b) for a, b in zip(before, after)) / len(after)
report["finite"] = all(np.isfinite(a).all() for a in after)
report["critic_loss"] = float(update["critic"]["critic_loss"])
action = agent.sample_actions(observations=jax.device_put(obs), seed=jax.random.PRNGKey(1), argmax=False)
report["policy_action"] = np.asarray(action).tolist()
import requests, time
requests.post(env.url + "open_gripper", timeout=5).raise_for_status()  # the stick drops out of the hand
time.sleep(1.5)
obs, info = env.reset()
report["replaced"] = info["replaced"]
report["back_mm"] = 1000 * float(np.linalg.norm(env.in_hand()[0] - env.reference[0]))
print("@@ " + json.dumps(report), flush=True)
"""


@hil_serl.may_build
def test_the_state_config_builds_its_env_and_hil_serls_agent_learns_from_its_transitions(tmp_path):
    saved = tmp_path / "first_run"
    with task_world("ram_insertion", NO_CAMERAS) as (clients, _):
        url = clients[""].url
        code, output = hil_serl.run(["-c", ENV_AND_AGENT, str(OWN), str(saved)], env=hil_serl.sim_devices([url]),
                                    timeout=300)  # fmt: skip
        assert code == 0, output
        flags = ("--checkpoint-path", str(saved), "--eval-steps", "300", "--episodes", "2", "--dir", str(tmp_path))
        evaluated = runner(url, "evaluate", "--policy", "checkpoint", *flags, timeout=300)
    report = json.loads(output.split("@@ ", 1)[1].splitlines()[0])
    assert report["keys"] == ["state"] and report["state"] == [1, 18] and report["space"] == [1, 18]
    assert report["action"] == [6]
    # RAMEnv's random reset: within RANDOM_XY_RANGE (2 cm) of RESET_POSE, 5 cm above TARGET_POSE, in mm (the state
    # is SERLObsWrapper's flattening of the keys in gymnasium's sorted order: tcp_force, tcp_pose, tcp_torque, tcp_vel;
    # in the task's units: observation.TaskUnits)
    position = report["pose_at_reset"][:3]
    assert abs(position[0]) < 25 and abs(position[1]) < 25 and 40 < position[2] < 60, position
    assert all(reward == 0 and not succeed for reward, succeed in report["rewards"])  # random motion seats nothing
    assert report["agent"] == "SACAgent" and report["finite"] and report["changed"] > 0.5, report
    assert len(report["policy_action"]) == 6 and all(abs(a) <= 1.0 for a in report["policy_action"])
    # dropped: put back in the hand, counted; back within the 1.5 mm that counts as not moved (GroundTruth.moved_m:
    # the hand's and the objects' readings are not of one instant, 1.04 mm read once in a full run)
    assert report["replaced"] == 1 and report["back_mm"] < 1.5, report
    # the checkpoint restored, acting alone, scored by the ground truth
    (run,) = evaluated["evaluation"]
    assert run["step"] == 300 and len(run["episodes"]) == 2, run
    for episode in run["episodes"]:
        assert isinstance(episode["success"], bool) and 1 <= episode["steps"] <= 100, episode
        assert "ram is" in episode["detail"] and len(episode["start"]) == 7, episode
    output = json.loads(Path(evaluated["outputs"][0]).read_text())
    assert "SpacemouseIntervention" not in output["wrappers"] and output["experts_running"] == [], output


def runner(url: str, *args: str, timeout: float) -> dict:
    """scripts/hil_serl.py ram_insertion_state with `args`, against the world at `url`: its summary."""
    hil_serl.python()  # HIL-SERL's environment built (the runner's first step checks it)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "hil_serl.py"), "ram_insertion_state", *args],
        env=hil_serl.environment({"FRANKA_SIM_URL": url}),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(done.stdout[-6000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    summary = done.stdout.rsplit("summary: ", 1)[1].split()[0]
    return json.loads(Path(summary).read_text())


@hil_serl.may_build
def test_the_evaluation_scores_the_expert_100_percent_and_no_motion_0_percent(tmp_path):
    with task_world("ram_insertion", NO_CAMERAS) as (clients, _):
        robot = clients[""]
        common = ("--dir", str(tmp_path), "--episodes")
        expert = runner(robot.url, "evaluate", "--policy", "expert", *common, "3", timeout=300)
        zero = runner(robot.url, "evaluate", "--policy", "zero", *common, "2", timeout=300)
    (expert_run,) = expert["evaluation"]
    (zero_run,) = zero["evaluation"]
    assert expert_run["success_rate"] == 1.0 and len(expert_run["episodes"]) == 3, expert_run
    assert zero_run["success_rate"] == 0.0 and len(zero_run["episodes"]) == 2, zero_run
    assert all(e["steps"] == 100 for e in zero_run["episodes"])  # MAX_EPISODE_LENGTH: the env ended them
