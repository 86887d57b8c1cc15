"""state_agent's `grasp_cql_weight`: CQL(H)'s term for discrete choices in the grasp critic's loss
(ConservativeGrasp), checked in HIL-SERL's environment on the agent math alone, a made-up batch (no world: the agents
learning from a launched world's transitions are tests/test_state_experiment.py's).

For the single-arm hybrid agent (one grasp critic, HIL-SERL's) and the dual-arm one (two, ClippedGraspCritic):
- the grasp critic's loss is HIL-SERL's (or the ensemble's) plus the weight times the mean over the whole batch of
  logsumexp over choices of Q(s, .) less Q(s, the batch's choice), computed here from the grasp critic's raw outputs
  (the members' mean for the ensemble);
- trained on a batch whose every row makes one choice, with no reward, the grasp critic ranks that choice first at
  every row, and updates stay finite;
- the plain SACAgent refuses the weight (no grasp critic), and no weight at or below 0 or not finite is taken.
"""

from __future__ import annotations

import hil_serl

CHECK = (
    hil_serl.AGENT_MATH
    + r"""

report = {}
rng = np.random.default_rng(0)
C, B = 0.5, 16
for kind, dim, grippers, extra in (("make_sac_pixel_agent_hybrid_single_arm", 25, [6], {}),
                                   ("make_sac_pixel_agent_hybrid_dual_arm", 32, [6, 13],
                                    {"grasp_critic_ensemble_size": 2})):
    size = 7 * len(grippers)
    sample = {"state": np.zeros((1, dim), np.float32)}
    make = lambda **kw: state_agent.make_sac_state_agent(0, sample, np.zeros(size, np.float32), kind=kind,
                                                         discount=0.9, **extra, **kw)
    plain, agent = make(), make(grasp_cql_weight=C)
    batch = made_up_batch(rng, dim, size, B, grippers, penalties=[0.0, -0.02])
    key = jax.random.PRNGKey(2)
    params = agent.state.params
    qs = grasp_values(agent, params, batch["observations"])
    choice = joint_choice(batch["actions"], grippers)
    top = qs.max(axis=-1)
    by_hand = C * float((top + np.log(np.exp(qs - top[:, None]).sum(axis=-1)) - qs[np.arange(B), choice]).mean())
    grasp_loss = lambda a: float(a.grasp_critic_loss_fn(batch, params, key)[0])
    # one choice everywhere (each gripper's stay, the env's 0), no reward, no penalty: only the term tells them apart
    actions = np.asarray(batch["actions"]).copy()
    actions[:, grippers] = 0.0
    quiet = frozen_dict.freeze({**batch, "actions": actions, "rewards": np.zeros(B, np.float32),
                                "grasp_penalty": np.zeros(B, np.float32)})
    for _ in range(200):
        agent, update = agent.update(quiet)
    ranked = grasp_values(agent, agent.state.params, batch["observations"]).argmax(axis=-1)
    maker = lambda **kw: state_agent.make_sac_state_agent(0, sample, np.zeros(size, np.float32), **kw)
    refused = [refusal(maker, kind="make_sac_pixel_agent", grasp_cql_weight=C),
               refusal(maker, kind=kind, grasp_cql_weight=0.0), refusal(maker, kind=kind, grasp_cql_weight=-1.0),
               refusal(maker, kind=kind, grasp_cql_weight=float("nan"))]
    report[kind] = {
        "class": type(agent).__name__, "grasp": [grasp_loss(make(grasp_cql_weight=C)) - grasp_loss(plain), by_hand],
        "ranked": sorted(set(int(c) for c in ranked)), "stay": (3 ** len(grippers) - 1) // 2,
        "finite": bool(np.isfinite(float(update["grasp_critic"]["grasp_cql_loss"]))),
        "config": agent.config["grasp_cql_weight"], "refused": refused,
    }
print("@@ " + json.dumps(report), flush=True)
"""
)


@hil_serl.may_build
def test_the_conservative_term_pushes_the_grasp_choices_the_batch_does_not_make_below_the_one_it_makes():
    report = hil_serl.check(CHECK, timeout=600)
    for kind, cls in (
        ("make_sac_pixel_agent_hybrid_single_arm", "ConservativeGraspSACAgentHybridSingleArm"),
        ("make_sac_pixel_agent_hybrid_dual_arm", "ConservativeGraspClippedGraspCriticSACAgentHybridDualArm"),
    ):
        checked = report[kind]
        assert checked["class"] == cls and checked["config"] == 0.5, checked
        computed, by_hand = checked["grasp"]
        assert by_hand > 0 and abs(computed - by_hand) < 1e-4 * max(1.0, by_hand), checked
        # every gripper staying is the only choice the batch made: ranked first at every row
        assert checked["ranked"] == [checked["stay"]] and checked["finite"], checked
        no_grasp, zero, negative, nan = checked["refused"]
        assert "has no grasp critic" in no_grasp, checked
        assert all("positive weight" in r for r in (zero, negative, nan)), checked
