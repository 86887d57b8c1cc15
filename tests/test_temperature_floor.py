"""state_agent's `temperature_min`: SAC's temperature with a floor (FlooredTemperature), checked in HIL-SERL's
environment on the agent math alone, a made-up batch (no world: the agents learning from a launched world's
transitions are tests/test_state_experiment.py's).

- The temperature starts at `temperature_init`, with and without a floor.
- It is the floor plus the softplus of its Lagrange parameter: a parameter driven far down gives the floor, never
  less; a target entropy far below the policy's drives it down through updates, and it stays above the floor.
- Its penalty is GeqLagrangeMultiplier's own (the multiplier times entropy minus target), so its gradient is
  HIL-SERL's; a floor of 0 keeps HIL-SERL's module as it is; a floor at or above the initial value, or below 0,
  is refused.
"""

from __future__ import annotations

import hil_serl

CHECK = (
    hil_serl.AGENT_MATH
    + r"""

rng = np.random.default_rng(0)
dim, size, B = 10, 6, 16
sample = {"state": np.zeros((1, dim), np.float32)}
make = lambda **kw: state_agent.make_sac_state_agent(0, sample, np.zeros(size, np.float32), target_entropy=-100.0,
                                                     temperature_init=0.1, **kw)
plain, floored = make(), make(temperature_min=0.05)
param = lambda agent: agent.state.params["modules_temperature"]
lagrange = lambda agent: float(jax.tree_util.tree_leaves(param(agent))[0])
softplus = lambda x: float(np.log1p(np.exp(x)))
batch = made_up_batch(rng, dim, size, B)
start = [float(plain.forward_temperature()), float(floored.forward_temperature())]
trained = floored
for _ in range(30):
    trained, _ = trained.update(batch)
down = jax.tree_util.tree_map(lambda leaf: leaf * 0 - 50.0, param(floored))  # softplus(-50): about 2e-22
low = float(floored.forward_temperature(grad_params={**floored.state.params, "modules_temperature": down}))
entropy = np.float32(3.0)
penalty = [float(plain.temperature_lagrange_penalty(entropy)), float(floored.temperature_lagrange_penalty(entropy))]
refused = [refusal(make, temperature_min=wrong) for wrong in (0.1, 0.2, -0.01)]
print("@@ " + json.dumps({
    "start": start, "low": low, "trained": float(trained.forward_temperature()),
    "trained_by_hand": 0.05 + softplus(lagrange(trained)), "penalty": penalty,
    "params": [sorted(param(plain)), sorted(param(floored))],
    "refused": refused}), flush=True)
"""
)


@hil_serl.may_build
def test_the_temperature_floor_keeps_sac_s_temperature_at_or_above_it_with_hil_serl_s_penalty():
    report = hil_serl.check(CHECK, timeout=600)
    assert abs(report["start"][0] - 0.1) < 1e-6 and abs(report["start"][1] - 0.1) < 1e-6, report
    assert abs(report["low"] - 0.05) < 1e-7, report  # the parameter far down: the floor, not less
    # through updates with the entropy far above its target: down from 0.1, above the floor, floor + softplus
    assert 0.05 < report["trained"] < 0.1 and abs(report["trained"] - report["trained_by_hand"]) < 1e-6, report
    # the penalty at the start: the multiplier (0.1 - 0.05 with the floor, 0.1 without) times (3 - -100)
    assert abs(report["penalty"][0] - 0.1 * 103) < 1e-3 and abs(report["penalty"][1] - 0.05 * 103) < 1e-3, report
    assert report["params"] == [["lagrange"], ["LagrangeMultiplier_0"]], report  # floor 0: HIL-SERL's module
    assert all("below temperature_init" in r for r in report["refused"]), report
