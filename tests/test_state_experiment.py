"""hil_serl_experiments/: ram_insertion from proprioception alone (ram_insertion_state) and usb_pickup_insertion with
the stick's privileged pose and a learned gripper (usb_pickup_insertion_state), run by HIL-SERL's own code in its
environment against a launched world of the task without cameras (real launch, HTTP, MuJoCo).

- Its config, as HIL-SERL's train_rlpd.py gets it (`experiments.mappings`), builds RAMEnv and its wrappers; a reset
  and steps give the observation HIL-SERL's agent takes ({"state": (1, 18)}: tcp_pose relative to TARGET_POSE,
  tcp_vel, tcp_force, tcp_torque, in the task's units) and the 6-d action of GripperCloseEnv; the reward is the
  ground truth's.
- HIL-SERL's SACAgent, made by serl_launcher's make_sac_pixel_agent as train_rlpd.py calls it (routed to the
  state encoder by state_agent.install), takes a few updates on a tiny buffer of those real transitions, built
  as train_rlpd.py builds its buffers, sampled as its learner samples them.
- The evaluation (scripts/hil_serl.py ram_insertion_state evaluate, on the running world) scores the scripted
  expert as the policy 100 % and a zero policy 0 %, by the ground truth (each episode's events: the expert's
  gripper closes and opens, none without motion); and a checkpoint of that agent, saved
  after a few hundred learner steps, is restored and acts alone, each episode scored by the ground truth.
- A stick moved in the hand is put back at the next reset, and counted.
- usb_pickup_insertion_state: the same, with train_rlpd.py's hybrid agent (SAC and the grasp critic), the stick's
  pose under a key that says it is privileged, GripperPenaltyWrapper's penalties, and the stick plugged back in
  after an episode without success; the critic probe step (`scripts/hil_serl.py ... probe`) trains that agent
  offline on the transitions kept as train_rlpd.py's actor keeps them, and reports its critics' values.
- object_handover_state: the same for two arms (DualFrankaEnv of HandOffEnvs, the dual hybrid agent, the bar's
  privileged pose); the evaluation puts the bar back where HandOffEnv's reset asks for it, as the runner does, and
  answers once the arms are at rest: every episode starts with both hands at their reset poses.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import hil_serl
import pytest
from test_tasks import task_world

ROOT = Path(__file__).resolve().parent.parent
OWN = ROOT / "hil_serl_experiments"
NO_CAMERAS = "cameras_config:=none"

ENV_AND_AGENT = r"""
import json, os, pickle, sys
sys.path.insert(0, sys.argv[1])
import jax, numpy as np
import state_agent
state_agent.install()
from experiments.mappings import CONFIG_MAPPING
from serl_launcher.data import data_store
from serl_launcher.utils.train_utils import concat_batches
from ground_truth import wrapper_of

config = CONFIG_MAPPING[sys.argv[3]]()
state_agent.pace(None)  # the config's learner pace lifted: 600 batches below from 12 transitions, none coming
env = config.get_environment(fake_env=False, save_video=False, classifier=True)
obs, _ = env.reset()
report = {"keys": sorted(obs), "state": list(obs["state"].shape), "space": list(env.observation_space["state"].shape),
          "action": list(env.action_space.shape), "state_at_reset": obs["state"][0].tolist(),
          "proprio": {k: list(v.shape) for k, v in wrapper_of(env, "SERLObsWrapper").proprio_space.items()}}
# the agent and buffers as train_rlpd.py makes them for the config's setup mode
agent = state_agent.factory(config.setup_mode)(seed=0, sample_obs=env.observation_space.sample(),
    sample_action=env.action_space.sample(), image_keys=config.image_keys, encoder_type=config.encoder_type,
    discount=config.discount)
report["agent"] = type(agent).__name__
learned_gripper = "learned-gripper" in config.setup_mode
buffers = [data_store.MemoryEfficientReplayBufferDataStore(env.observation_space, env.action_space, capacity=100,
           image_keys=config.image_keys, include_grasp_penalty=learned_gripper) for _ in range(2)]
rewards, penalties, kept, rng = [], [], [], np.random.default_rng(0)
for step in range(12):
    action = rng.uniform(-0.5, 0.5, env.action_space.shape)
    if learned_gripper:  # the gripper closed, then opened, then left: grasp penalties
        action[6::7] = -1.0 if step < 4 else (1.0 if step < 8 else 0.0)
    next_obs, reward, done, truncated, info = env.step(action)
    rewards.append([reward, info["succeed"]])
    transition = dict(observations=obs, actions=action, next_observations=next_obs, rewards=reward, masks=1.0 - done,
                      dones=done)
    if learned_gripper:
        transition["grasp_penalty"] = info["grasp_penalty"]  # as train_rlpd.py's actor adds it
        penalties.append(info["grasp_penalty"])
    for buffer in buffers:
        buffer.insert(transition)
    kept.append(transition)
    obs = next_obs
# kept as train_rlpd.py's actor dumps its buffers (for the critic probe): the first 4 steps as the policy's own (the
# gripper closed by it), the others as driven by the expert (demo_buffer/ keeps those too)
for folder, transitions in (("buffer", kept), ("demo_buffer", kept[4:])):
    os.makedirs(f"{sys.argv[2]}/{folder}", exist_ok=True)
    with open(f"{sys.argv[2]}/{folder}/transitions_12.pkl", "wb") as f:
        pickle.dump(transitions, f)
report["rewards"], report["penalties"] = rewards, penalties
iterators = [b.get_iterator(sample_args={"batch_size": 4, "pack_obs_and_next_obs": True}) for b in buffers]
critics = frozenset({"critic", "grasp_critic"} if learned_gripper else {"critic"})
before = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(agent.state.params)]
networks_before = jax.tree_util.tree_map(lambda x: np.asarray(x).copy(), dict(agent.state.params))
for _ in range(300):  # train_rlpd.py's learner step: a critic update, then critics, actor and temperature
    batch = concat_batches(next(iterators[0]), next(iterators[1]), axis=0)
    agent, _ = agent.update(batch, networks_to_update=critics)
    batch = concat_batches(next(iterators[0]), next(iterators[1]), axis=0)
    agent, update = agent.update(batch, networks_to_update=critics | {"actor", "temperature"})
from flax.training import checkpoints
checkpoints.save_checkpoint(sys.argv[2], agent.state, step=300, keep=1)  # as train_rlpd.py's learner saves them
after = [np.asarray(x) for x in jax.tree_util.tree_leaves(agent.state.params)]
report["changed"] = sum(not np.array_equal(a, b) for a, b in zip(before, after)) / len(after)
report["changed_networks"] = sorted(k for k in agent.state.params if not all(np.array_equal(a, b) for a, b in zip(
    jax.tree_util.tree_leaves(agent.state.params[k]), jax.tree_util.tree_leaves(networks_before[k]))))
report["finite"] = all(np.isfinite(a).all() for a in after)
report["critic_loss"] = float(update["critic"]["critic_loss"])
if learned_gripper:
    report["grasp_critic_loss"] = float(update["grasp_critic"]["grasp_critic_loss"])
action = agent.sample_actions(observations=jax.device_put(obs), seed=jax.random.PRNGKey(1), argmax=False)
report["policy_action"] = np.asarray(action).tolist()
if sys.argv[3] == "object_handover_state":  # HandOffEnv's reset asks for Enter (stdin), the bar left where it is
    obs, info = env.reset()
    report["replaced"] = info["replaced"]
elif sys.argv[3] == "ram_insertion_state":
    import requests, time
    requests.post(env.url + "open_gripper", timeout=5).raise_for_status()  # the stick drops out of the hand
    time.sleep(1.5)
    obs, info = env.reset()
    report["replaced"] = info["replaced"]
    report["back_mm"] = 1000 * float(np.linalg.norm(env.in_hand()[0] - env.reference[0]))
else:  # the episode ended without success: the stick back in the port, and USBEnv's reset takes it out again
    obs, info = env.reset()
    report["replaced"] = info["replaced"]
    report["state_after_put_back"] = obs["state"][0].tolist()
print("@@ " + json.dumps(report), flush=True)
"""


def learn_a_little(
    tmp_path: Path, world: str, experiment: str, probe: bool = False, agent: str = ""
) -> tuple[dict, dict]:
    """ENV_AND_AGENT for `experiment` on a launched `world` without cameras, then the evaluation of the checkpoint it
    saved (2 episodes): its report, and the evaluation's summary (with `probe`, the probe step's record of the
    agent trained offline on the transitions it kept, under "probe"); `agent`: the run's --agent (JSON)."""
    saved = tmp_path / "first_run"
    with task_world(world, NO_CAMERAS) as (clients, _):
        urls = [robot.url for robot in clients.values()]
        code, output = hil_serl.run(["-c", ENV_AND_AGENT, str(OWN), str(saved), experiment],
                                    env={**hil_serl.sim_devices(urls), "HIL_SERL_AGENT": agent}, timeout=300,
                                    stdin="\n" * 20)  # fmt: skip
        assert code == 0, output
        flags = ("--checkpoint-path", str(saved), "--eval-steps", "300", "--episodes", "2", "--dir", str(tmp_path),
                 *(("--agent", agent) if agent else ()))  # fmt: skip
        evaluated = runner(urls, experiment, "evaluate", "--policy", "checkpoint", *flags, timeout=420)
        if probe:  # the critic probe step on what the transitions' run kept, in HIL-SERL's environment, no world;
            # its kept transitions also stand in for the expert's demos, which this run has none of
            kept = [a for f in sorted((saved / "buffer").glob("*.pkl")) for a in ("--demo-path", str(f))]
            probed = runner(urls, experiment, "probe", *flags[:2], *flags[6:], "--steps", "4", *kept, timeout=300)
            restored = runner(urls, experiment, "probe", *flags[:2], *flags[6:], "--probe-checkpoint", "300", *kept,
                              timeout=300)  # fmt: skip
    report = hil_serl.reported(output)
    # the checkpoint restored, acting alone, scored by the ground truth
    (run,) = evaluated["evaluation"]
    assert run["step"] == 300 and len(run["episodes"]) == 2, run
    output = json.loads(Path(evaluated["outputs"][0]).read_text())
    assert "SpacemouseIntervention" not in output["wrappers"] and output["experts_running"] == [], output
    if probe:
        run["probe"] = json.loads(Path(probed["outputs"][0]).read_text())
        run["probe_checkpoint"] = json.loads(Path(restored["outputs"][0]).read_text())
    return report, run


@hil_serl.may_build
def test_the_state_config_builds_its_env_and_hil_serls_agent_learns_from_its_transitions(tmp_path):
    report, run = learn_a_little(tmp_path, "ram_insertion", "ram_insertion_state")
    assert report["keys"] == ["state"] and report["state"] == [1, 18] and report["space"] == [1, 18]
    assert report["action"] == [6]
    # RAMEnv's random reset: within RANDOM_XY_RANGE (2 cm) of RESET_POSE, 5 cm above TARGET_POSE, in mm (the state
    # is SERLObsWrapper's flattening of the keys in gymnasium's sorted order: tcp_force, tcp_pose, tcp_torque, tcp_vel;
    # in the task's units: observation.TaskUnits)
    assert list(report["proprio"]) == ["tcp_force", "tcp_pose", "tcp_torque", "tcp_vel"], report["proprio"]
    position = report["state_at_reset"][3:6]
    assert abs(position[0]) < 25 and abs(position[1]) < 25 and 40 < position[2] < 60, position
    assert all(reward == 0 and not succeed for reward, succeed in report["rewards"])  # random motion seats nothing
    assert report["agent"] == "SACAgent" and report["finite"] and report["changed"] > 0.5, report
    assert len(report["policy_action"]) == 6 and all(abs(a) <= 1.0 for a in report["policy_action"])
    # dropped: put back in the hand, counted; back within the 1.5 mm that counts as not moved (GroundTruth.moved_m:
    # the hand's and the objects' readings are not of one instant, 1.04 mm read once in a full run)
    assert report["replaced"] == 1 and report["back_mm"] < 1.5, report
    for episode in run["episodes"]:
        assert isinstance(episode["success"], bool) and 1 <= episode["steps"] <= 100, episode
        assert "ram is" in episode["detail"] and len(episode["start"]) == 7, episode


@hil_serl.may_build
def test_the_learned_gripper_config_gives_the_sticks_privileged_pose_and_the_hybrid_agent_learns(tmp_path):
    """usb_pickup_insertion_state: USBEnv (its reset drops the stick on the platform), the stick's pose from the
    ground truth under a key that says it is privileged, GripperPenaltyWrapper's penalties, and train_rlpd.py's
    `single-arm-learned-gripper` agent (SAC for the arm, the grasp critic for the gripper) updating all its
    networks on real transitions; an episode without success has the stick plugged back in before the next."""
    report, run = learn_a_little(tmp_path, "usb_pickup_insertion", "usb_pickup_insertion_state", probe=True)
    sizes = {"gripper_pose": [1], "privileged_usb_pose": [6], "tcp_force": [3], "tcp_pose": [6], "tcp_torque": [3],
             "tcp_vel": [6]}  # fmt: skip
    assert report["proprio"] == sizes and list(report["proprio"]) == list(sizes), report["proprio"]  # sorted
    assert report["keys"] == ["state"] and report["state"] == [1, 25] and report["space"] == [1, 25]
    assert report["action"] == [7]
    for state in (report["state_at_reset"], report["state_after_put_back"]):
        # USBEnv's reset drops the stick from RESET_POSE (TARGET_POSE + 3 cm in y, 5 cm up; x, y within 1 cm) onto
        # the platform, the gripper open: in mm from where it is plugged (TARGET_POSE's frame), lying there
        gripper, stick = state[0], state[1:4]
        assert gripper > 0.85 and abs(stick[0]) < 20 and 5 < stick[1] < 60 and -20 < stick[2] < -8, state
    assert all(reward == 0 and not succeed for reward, succeed in report["rewards"])
    assert -0.02 in report["penalties"] and set(report["penalties"]) <= {0.0, -0.02}, report["penalties"]
    # the config's agent_kwargs: HIL-SERL's hybrid agent with the expert's actions in its losses and an ensemble of
    # grasp critics (state_agent.DemoLosses, ClippedGraspCritic)
    assert report["agent"] == "DemoLossesClippedGraspCriticSACAgentHybridSingleArm" and report["finite"], report
    networks = ["modules_actor", "modules_critic", "modules_grasp_critic", "modules_temperature"]  # ModuleDict's
    assert report["changed_networks"] == networks, report
    assert len(report["policy_action"]) == 7 and report["policy_action"][6] in (-1.0, 0.0, 1.0), report
    assert report["replaced"] == 1, report  # the random episode left the stick out: plugged back in, counted
    for episode in run["episodes"]:
        assert isinstance(episode["success"], bool) and 1 <= episode["steps"] <= 120, episode
        assert "usb is" in episode["detail"] and len(episode["start"]) == 7, episode
        assert episode["steps"] > 1, episode  # not started with the stick plugged in
    # the probe step: the same agent trained offline on the 12 kept transitions, its critics' values each step
    probe = run["probe"]
    assert probe["exp"] == "usb_pickup_insertion_state" and [f["step"] for f in probe["figures"]] == [1, 2, 3, 4]
    assert all(math.isfinite(f["predicted_qs"]) and math.isfinite(f["predicted_grasp_qs"]) for f in probe["figures"])
    # then the trained agent beside the demos' states, per phase of the gripper, and on the policy's own hold (below)
    rows = probe["imitation"]
    assert sorted(rows) == ["arm0/carry", "arm0/close", "arm0/pick", "own/arm0"], rows
    phases = [r for name, r in rows.items() if name.startswith("arm0/")]
    assert sum(r["steps"] for r in phases) > 0, rows
    assert all(math.isfinite(r["close_margin_median"]) for r in phases if r["steps"]), rows
    assert rows["own/arm0"]["presses"] == 1 and rows["own/arm0"]["steps"] == 3, rows
    # the probe step with --probe-checkpoint: the saved checkpoint beside the demos, and on the policy's own hold among
    # the kept transitions (closed by the policy at step 0, its steps 1-3, then the expert driving)
    restored = run["probe_checkpoint"]
    assert restored["checkpoint"] == 300 and sorted(restored["imitation"]) == sorted(rows), restored
    own = restored["imitation"]["own/arm0"]
    assert own["presses"] == 1 and own["ended"]["expert"] == 1 and own["steps"] == 3, own
    assert own["opened_then"] == 0.0 and math.isfinite(own["open_margin_median"]), own


@hil_serl.may_build
def test_the_two_arm_config_gives_the_bars_privileged_pose_and_the_dual_hybrid_agent_learns(tmp_path):
    """object_handover_state: HandOffEnv per arm inside DualFrankaEnv (each reset's "Press Enter to continue..."
    answered), both arms' proprioception and the bar's pose from the ground truth under a key that says it is
    privileged, GripperPenaltyWrapper's penalties for either gripper, and train_rlpd.py's `dual-arm-learned-gripper`
    agent (SAC for the arms, the grasp critic for both grippers) updating all its networks on real transitions;
    here with two grasp critics (state_agent.ClippedGraspCritic, as its runs since run 4 train it), restored from
    their checkpoint by the evaluation."""
    report, run = learn_a_little(tmp_path, "object_handover", "object_handover_state",
                                 agent='{"grasp_critic_ensemble_size": 2}')  # fmt: skip
    sizes = {"left/gripper_pose": [1], "left/tcp_pose": [6], "left/tcp_vel": [6], "right/gripper_pose": [1],
             "right/tcp_pose": [6], "right/tcp_vel": [6], "world/privileged_bar_pose": [6]}  # fmt: skip
    assert report["proprio"] == sizes and list(report["proprio"]) == list(sizes), report["proprio"]  # sorted
    assert report["keys"] == ["state"] and report["state"] == [1, 32] and report["space"] == [1, 32]
    assert report["action"] == [14]
    state = report["state_at_reset"]
    # both grippers open (HandOffEnv's reset), GripperPenaltyWrapper's state[0, 0] and state[0, 13] after a step
    assert state[0] > 0.85 and state[13] > 0.85, state
    # each hand at its RESET_POSE (its own frame: mm, 0.01 rad), the bar on its posts 11 cm below the left hand
    for hand in (state[1:7], state[14:20]):
        assert max(abs(v) for v in hand[:3]) < 10 and max(abs(v) for v in hand[3:]) < 10, hand
    bar = state[26:29]
    assert abs(bar[0]) < 10 and abs(bar[1] - 10) < 10 and abs(bar[2] + 110) < 10, bar
    assert all(reward == 0 and not succeed for reward, succeed in report["rewards"])
    assert -0.02 in report["penalties"] and set(report["penalties"]) <= {0.0, -0.02, -0.04}, report["penalties"]
    assert report["agent"] == "ClippedGraspCriticSACAgentHybridDualArm" and report["finite"], report
    networks = ["modules_actor", "modules_critic", "modules_grasp_critic", "modules_temperature"]
    assert report["changed_networks"] == networks, report
    action = report["policy_action"]
    assert len(action) == 14 and action[6] in (-1.0, 0.0, 1.0) and action[13] in (-1.0, 0.0, 1.0), report
    assert report["replaced"] == 0, report  # the bar goes back when HandOffEnv's reset asks (the runner's part)
    for episode in run["episodes"]:
        assert isinstance(episode["success"], bool) and 1 <= episode["steps"] <= 200, episode
        assert "bar touches" in episode["detail"] and len(episode["start"]) == 14, episode


def runner(urls: list[str], experiment: str, *args: str, timeout: float) -> dict:
    """scripts/hil_serl.py `experiment` with `args`, against the world at `urls` (each arm's server): its summary."""
    hil_serl.python()  # HIL-SERL's environment built (the runner's first step checks it)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "hil_serl.py"), experiment, *args],
        env=hil_serl.environment(hil_serl.sim_devices(urls)),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(done.stdout[-6000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    summary = done.stdout.rsplit("summary: ", 1)[1].split()[0]
    return json.loads(Path(summary).read_text())


def gripper_move(event: str) -> str | None:
    """An evaluation's event of a gripper's move ("left gripper 0.99 -> 0.41") as "left close" (None: another)."""
    found = re.fullmatch(r"((?:left|right) )?gripper (\d\.\d+) -> (\d\.\d+)", event)
    if not found:
        return None
    return f"{found[1] or ''}{'close' if float(found[3]) < float(found[2]) else 'open'}"


@pytest.mark.parametrize(
    "world, experiment, length",
    [
        ("ram_insertion", "ram_insertion_state", 100),
        ("usb_pickup_insertion", "usb_pickup_insertion_state", 120),
        ("object_handover", "object_handover_state", 200),
    ],
)
@hil_serl.may_build
def test_the_evaluation_scores_the_expert_100_percent_and_no_motion_0_percent(tmp_path, world, experiment, length):
    with task_world(world, NO_CAMERAS) as (clients, _):
        urls = [robot.url for robot in clients.values()]
        common = ("--dir", str(tmp_path), "--episodes")
        expert = runner(urls, experiment, "evaluate", "--policy", "expert", *common, "3", timeout=420)
        zero = runner(urls, experiment, "evaluate", "--policy", "zero", *common, "2", timeout=420)
    (expert_run,) = expert["evaluation"]
    (zero_run,) = zero["evaluation"]
    assert expert_run["success_rate"] == 1.0 and len(expert_run["episodes"]) == 3, expert_run
    assert zero_run["success_rate"] == 0.0 and len(zero_run["episodes"]) == 2, zero_run
    assert all(e["steps"] == length for e in zero_run["episodes"])  # MAX_EPISODE_LENGTH: the env ended them
    # each episode's events: the grippers' moves as the expert made them (none where nothing moved; each hand as
    # its success leaves it), what the object touched as it went, from the start
    held = {"ram_insertion_state": {}, "usb_pickup_insertion_state": {"": "close"},
            "object_handover_state": {"left": "open", "right": "close"}}[experiment]  # fmt: skip
    for episode in expert_run["episodes"]:
        moves = [move for _, what in episode["events"] if (move := gripper_move(what))]
        assert {hand: move for hand, move in (m.rpartition(" ")[::2] for m in moves)} == held, episode["events"]
        assert experiment != "object_handover_state" or moves[0] == "left close", episode["events"]
        assert episode["events"][0][0] == 0 and episode["events"][0][1].startswith("touching"), episode["events"]
    assert all(not any(gripper_move(what) for _, what in e["events"]) for e in zero_run["episodes"]), zero_run
    # where each episode left the objects: the same ones as at the start, and in the expert's one carried more than
    # 5 mm (no-motion episodes are not held to their start: ram_insertion's stick moves with the hand that holds it)
    for episode in expert_run["episodes"] + zero_run["episodes"]:
        assert episode["objects_at_end"].keys() == episode["objects_at_start"].keys(), episode
    for episode in expert_run["episodes"]:
        start, end = episode["objects_at_start"], episode["objects_at_end"]
        assert max(math.dist(end[k][:3], start[k][:3]) for k in start) > 0.005, episode
    if experiment == "object_handover_state":  # RANDOM_RESET off in both arms: wherever an episode left the hands,
        # the next starts with each at its RESET_POSE (the runner answers HandOffEnv's reset at rest, as a person)
        starts = [e["start"] for e in expert_run["episodes"] + zero_run["episodes"]]
        for axis in (0, 1, 2, 7, 8, 9):  # each arm's x, y, z in its base
            along = [start[axis] for start in starts]
            assert max(along) - min(along) < 0.005, (axis, starts)
