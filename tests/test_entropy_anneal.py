"""state_agent's `target_entropy_anneal`: SAC's target entropy moved linearly from `target_entropy` to a final value
between two learner steps (AnnealedEntropy), checked in HIL-SERL's environment on the agent math alone, a made-up
batch (no world: the agents learning from a launched world's transitions are tests/test_state_experiment.py's).

- The temperature's penalty is GeqLagrangeMultiplier's (the multiplier times entropy minus target) with the target
  of the agent's update count: `target_entropy` up to the first step, the final value from the last, linear between;
  the steps are learner steps, `updates_per_step` agent updates each (the TrainConfig's cta_ratio).
- The dual-arm hybrid agent (object_handover's) updates with it: its update count advances and the temperature
  moves; without an anneal the agent's class and penalty are HIL-SERL's.
- The TrainConfig path: `configure` takes the learner's updates per step, and refuses them as an agent
  hyperparameter; a wrong anneal (the last step not after the first, a target not finite, a wrong length) is
  refused.
"""

from __future__ import annotations

import hil_serl

CHECK = (
    hil_serl.AGENT_MATH
    + r"""
import os

rng = np.random.default_rng(0)
dim, size = 10, 14  # the dual-arm agent's action: two arms' 6 values and a gripper each
sample = {"state": np.zeros((1, dim), np.float32)}
kind = "make_sac_pixel_agent_hybrid_dual_arm"
make = lambda **kw: state_agent.make_sac_state_agent(0, sample, np.zeros(size, np.float32), target_entropy=2.0,
                                                     temperature_init=0.1, kind=kind, **kw)
annealed, plain = make(target_entropy_anneal=[10, 20, -4.0], updates_per_step=2), make()
at = lambda agent, step: agent.replace(state=agent.state.replace(step=step))
entropy = np.float32(3.0)
penalty = {step: float(at(annealed, step).temperature_lagrange_penalty(entropy)) for step in (0, 20, 30, 40, 90)}
batch = made_up_batch(rng, dim, size, grippers=(6, 13), penalties=(0.0, -0.02))
trained = annealed
for _ in range(3):
    trained, info = trained.update(batch)
refused = [refusal(make, target_entropy_anneal=wrong) for wrong in ([20, 10, 0.0], [5, 5, 0.0], [0, 10, float("nan")],
                                                                     [-1, 10, 0.0])]
short = refusal(make, target_entropy_anneal=[0, 10])
state_agent.configure(updates_per_step=3, target_entropy_anneal=[1, 2, 0.0])
learner = dict(state_agent.LEARNER)
os.environ["HIL_SERL_AGENT"] = json.dumps({"updates_per_step": 5})
agent_refused = refusal(state_agent.configure)
print("@@ " + json.dumps({
    "penalty": penalty, "plain_penalty": float(plain.temperature_lagrange_penalty(entropy)),
    "classes": [type(annealed).__name__, type(plain).__name__], "anneal": annealed.config["target_entropy_anneal"],
    "steps": int(trained.state.step), "temperature": [float(annealed.forward_temperature()),
                                                      float(trained.forward_temperature())],
    "finite": all(bool(np.isfinite(np.asarray(x)).all()) for x in jax.tree_util.tree_leaves(info)),
    "refused": refused, "short": short,
    "learner": learner, "agent_refused": agent_refused}), flush=True)
"""
)


@hil_serl.may_build
def test_the_target_entropy_moves_linearly_between_two_learner_steps_in_hil_serl_s_penalty():
    report = hil_serl.check(CHECK, timeout=600)
    # learner steps 10 and 20 at 2 updates each: agent updates 20 and 40; the multiplier 0.1 times (3 - target)
    assert report["anneal"] == [20.0, 40.0, -4.0], report
    expected = {"0": 2.0, "20": 2.0, "30": -1.0, "40": -4.0, "90": -4.0}
    for step, target in expected.items():
        assert abs(report["penalty"][step] - 0.1 * (3.0 - target)) < 1e-5, (step, report)
    assert abs(report["plain_penalty"] - 0.1 * (3.0 - 2.0)) < 1e-5, report
    assert report["classes"] == ["AnnealedEntropySACAgentHybridDualArm", "SACAgentHybridDualArm"], report
    assert report["steps"] == 3 and report["finite"], report  # updates through the jitted penalty
    assert report["temperature"][1] != report["temperature"][0], report
    assert all("target_entropy_anneal" in r for r in report["refused"]), report
    assert report["short"], report  # two values, not three
    assert report["learner"] == {"updates_per_step": 3}, report
    assert "cta_ratio" in report["agent_refused"], report
