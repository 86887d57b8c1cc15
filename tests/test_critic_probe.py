"""benchmarks/critic_probe.py's `imitation` (the `probe` step's --probe-checkpoint), in HIL-SERL's environment, on
HIL-SERL's hybrid agents for one arm and for two, and its plain SACAgent (no world, no training: made-up states;
the demos a run's probe reads are the expert's, recorded by tests/test_state_experiment.py's worlds).

- An expert whose arm actions are the policy's own mode: the hand moves exactly as the policy would (cosine 1),
  and the critic cannot value the expert's action above the policy's (the same action).
- An expert moving the hand the opposite way: cosine -1.
- The grasp critic's margin for closing each arm's gripper (the others staying) over all staying, per arm: the
  joint choices of two grippers read as train_rlpd.py's dual agent numbers them.
- The phases of each arm come from that arm's own gripper presses, episode by episode: before its first close
  press, the presses, after (the next episode starts before a press again).
- The policy's own holds among a run's kept transitions (`own_holds`): from each of its own close presses to its own
  open press, the expert stepping in, or the episode's end; the expert's presses are no hold of the policy's.
- The plain SACAgent (no gripper) has one phase and no grasp critic to ask: the probe's offline training ends with
  `imitation` for ram_insertion_state too.
"""

from __future__ import annotations

import hil_serl

CHECK = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(sys.argv[1]), "benchmarks"))
import jax, numpy as np
import critic_probe, state_agent

critic_probe.MOVING = 0.0  # every step counts (an untrained policy's mode may barely move the hand)
report = {}
rng = np.random.default_rng(0)
for kind, dim, size in (("make_sac_pixel_agent_hybrid_single_arm", 25, 7),
                        ("make_sac_pixel_agent_hybrid_dual_arm", 32, 14)):
    agent = state_agent.make_sac_state_agent(0, {"state": np.zeros((1, dim), np.float32)},
                                             np.zeros(size, np.float32), kind=kind)
    T = 40
    obs = rng.normal(size=(T, 1, dim)).astype(np.float32)
    mode = np.asarray(agent.sample_actions(observations={"state": obs}, seed=jax.random.PRNGKey(0), argmax=True))
    dones = np.zeros(T, bool)
    dones[[19, 39]] = True
    grippers = [g for _, g in critic_probe.arms_of(size)]
    itself = mode.copy()
    itself[:, grippers] = 0.0
    for arm, gripper in enumerate(grippers):  # arm 0 closes at steps 8-9 of each episode, arm 1 at 12
        pressed = [8, 9, 28, 29] if arm == 0 else [12, 32]
        itself[pressed, gripper] = -1.0
        itself[15, gripper] = 1.0  # an open press after the close: still carrying
    opposite = itself.copy()
    opposite[:, [c for c in range(size) if c not in grippers]] *= -1
    report[kind] = {
        "itself": critic_probe.imitation(agent, {"observations": obs, "actions": itself, "dones": dones}, 0),
        "opposite": critic_probe.imitation(agent, {"observations": obs, "actions": opposite, "dones": dones}, 0),
    }
# the policy's own holds among kept transitions (the two-arm agent): the first gripper closed by the policy at step 2
# and opened at 5, closed at 10 with the expert driving from 13 to the episode's end (19), closed at 25 to the end
acts, expert = np.zeros((T, 14), np.float32), np.zeros(T, bool)
expert[13:20] = True
acts[[2, 10, 25], 6], acts[5, 6], acts[15, 6] = -1.0, 1.0, -1.0  # step 15: the expert's press, no hold of the policy's
report["holds"] = critic_probe.own_holds(agent, {"observations": obs, "actions": acts, "dones": dones}, expert, 0)
# the plain SACAgent (one arm, no gripper: its six values): one phase, no grasp critic to ask
sac = state_agent.make_sac_state_agent(0, {"state": np.zeros((1, 18), np.float32)}, np.zeros(6, np.float32))
obs = rng.normal(size=(T, 1, 18)).astype(np.float32)
mode = np.asarray(sac.sample_actions(observations={"state": obs}, seed=jax.random.PRNGKey(0), argmax=True))
report["make_sac_pixel_agent"] = critic_probe.imitation(sac, {"observations": obs, "actions": mode, "dones": dones}, 0)
qs = np.arange(9.0)[None] * 10.0 ** np.arange(9)[None]  # each joint choice its own power of ten
report["margins"] = {"single": [float(critic_probe.close_margin(qs[:, :3], 0, 1)[0])],
                     "dual": [float(critic_probe.close_margin(qs, arm, 2)[0]) for arm in (0, 1)]}
print("@@ " + json.dumps(report), flush=True)
"""


@hil_serl.may_build
def test_imitation_sets_the_policy_beside_the_experts_demos_per_arm_and_phase():
    report = hil_serl.check(CHECK, timeout=600)
    for kind, arms in (("make_sac_pixel_agent_hybrid_single_arm", 1), ("make_sac_pixel_agent_hybrid_dual_arm", 2)):
        itself, opposite = report[kind]["itself"], report[kind]["opposite"]
        assert sorted(itself) == sorted(f"arm{a}/{p}" for a in range(arms) for p in ("pick", "close", "carry"))
        steps = {"arm0": (16, 4, 20), "arm1": (24, 2, 14)}
        for name, row in itself.items():
            arm, phase = name.split("/")
            assert row["steps"] == steps[arm][("pick", "close", "carry").index(phase)], (name, row)
            assert abs(row["cosine_median"] - 1.0) < 1e-3, (name, row)
            assert abs(opposite[name]["cosine_median"] + 1.0) < 1e-3, (name, opposite[name])
            assert row["critic_prefers_expert"] == 0.0, (name, row)  # the same action: never above itself
            assert row["policy_z"] == row["expert_z"] == -opposite[name]["expert_z"], (name, row)
            assert 0.0 <= row["grasp_close"] + row["grasp_open"] <= 1.0, (name, row)
            assert abs(row["close_margin_median"]) < 1e3, (name, row)
    (row,) = report["make_sac_pixel_agent"].values()
    assert list(report["make_sac_pixel_agent"]) == ["arm0/all"] and row["steps"] == 40, report["make_sac_pixel_agent"]
    assert abs(row["cosine_median"] - 1.0) < 1e-3 and "grasp_close" not in row and "close_margin_median" not in row
    # the margin's choices: one arm, close (index 0) less stay (1); two arms (the first gripper's choice * 3 + the
    # second's), the first closing and the second staying (0 * 3 + 1) less both staying (1 * 3 + 1), and the
    # second closing (1 * 3 + 0) less both staying
    assert report["margins"] == {"single": [0.0 - 10.0], "dual": [10.0 - 4e4, 3e3 - 4e4]}
    # own holds: steps 3-5, 11-12 and 26-39 are the policy's own with its first gripper closed (19); one open of its own
    left, right = report["holds"]["own/arm0"], report["holds"]["own/arm1"]
    assert left["ended"] == {"opened": 1, "expert": 1, "episode_end": 1} and left["presses"] == 3, left
    assert left["steps"] == 19 and left["opened_then"] == round(1 / 19, 3) and 0.0 <= left["grasp_open"] <= 1.0, left
    assert abs(left["open_margin_median"]) < 1e3, left
    assert 0.0 <= left["open_by_0.1"] <= left["open_by_0.05"] <= 1.0, left
    assert 0.0 <= left["open_other_open"] <= left["grasp_open"], left  # a drop: an open with the other hand open
    assert right == {"presses": 0, "ended": {"opened": 0, "expert": 0, "episode_end": 0}, "steps": 0,
                     "opened_then": None, "grasp_open": None, "open_other_open": None,
                     "open_margin_median": None, "open_by_0.05": None, "open_by_0.1": None}, right  # fmt: skip
