"""state_agent's `critic_target_max`: SAC's critic target with its next values at most a bound (BoundedTarget),
checked in HIL-SERL's environment on the agent math alone, a made-up batch (no world: the agents learning from a
launched world's transitions are tests/test_state_experiment.py's).

For the plain SACAgent and the dual-arm hybrid agent with its grasp critic ensemble:
- a bound below every next value gives the target r + discount * mask * bound, computed here by hand;
- a bound above every next value gives HIL-SERL's target, the unbounded agent's (the same seed, batch and rng);
- the agent's class is HIL-SERL's (or with ClippedGraspCritic) with BoundedTarget mixed in first, and updates
  stay finite;
- a bound that is not a finite number is refused.
"""

from __future__ import annotations

import hil_serl

CHECK = (
    hil_serl.AGENT_MATH
    + r"""

report = {}
rng = np.random.default_rng(0)
for kind, dim, size, extra in (("make_sac_pixel_agent", 10, 6, {}),
                               ("make_sac_pixel_agent_hybrid_dual_arm", 32, 14, {"grasp_critic_ensemble_size": 2})):
    sample = {"state": np.zeros((1, dim), np.float32)}
    make = lambda **kw: state_agent.make_sac_state_agent(0, sample, np.zeros(size, np.float32), kind=kind,
                                                         discount=0.9, **extra, **kw)
    batch = made_up_batch(rng, dim, size, grippers=[6, 13] if extra else [], penalties=[0.0] if extra else [])
    key = jax.random.PRNGKey(3)
    target = lambda agent: float(agent.critic_loss_fn(batch, agent.state.params, key)[1]["target_qs"])
    plain, low, high = make(), make(critic_target_max=-5.0), make(critic_target_max=1e6)
    low_target = target(low)
    for _ in range(3):
        low, update = low.update(batch)
    report[kind] = {
        "classes": [type(plain).__name__, type(low).__name__, [c.__name__ for c in type(low).__mro__[:2]]],
        "low": [low_target, float(np.mean(batch["rewards"] + 0.9 * batch["masks"] * -5.0))],
        "high": [target(high), target(plain)],
        "finite": bool(np.isfinite(float(update["critic"]["critic_loss"]))),
    }
    report[kind]["refused"] = refusal(make, critic_target_max=float("nan"))
print("@@ " + json.dumps(report), flush=True)
"""
)


@hil_serl.may_build
def test_the_critic_target_bound_caps_the_next_values_and_else_is_hil_serl_s_target():
    report = hil_serl.check(CHECK, timeout=600)
    for kind, hil_serls in (
        ("make_sac_pixel_agent", "SACAgent"),
        ("make_sac_pixel_agent_hybrid_dual_arm", "ClippedGraspCriticSACAgentHybridDualArm"),
    ):
        checked = report[kind]
        bounded = f"BoundedTarget{hil_serls}"
        assert checked["classes"] == [hil_serls, bounded, [bounded, "BoundedTarget"]], checked
        computed, by_hand = checked["low"]
        assert abs(computed - by_hand) < 1e-5, checked
        bounded, plain = checked["high"]
        assert abs(bounded - plain) < 1e-6, checked
        assert checked["finite"] and "a finite bound" in checked["refused"], checked
