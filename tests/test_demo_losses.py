"""state_agent.DemoLosses (`demo_bc_weight`, `demo_grasp_margin`, `demo_grasp_balanced`): the expert's actions in
the actor's and the grasp critic's losses, on the demo half of each batch (train_rlpd.py's learner concatenates its
online batch, then its demo batch). Checked in HIL-SERL's environment on the agent math alone, a made-up batch (no
world: the agents learning from a launched world's transitions are tests/test_state_experiment.py's).

For the single-arm hybrid agent (one grasp critic, HIL-SERL's) and the dual-arm one (two, ClippedGraspCritic):
- the actor's loss is HIL-SERL's plus the weight times the mean squared difference between the policy's mode and
  the expert's arm actions (the gripper values left out) over the demo half, computed here from the networks;
- the grasp critic's loss is HIL-SERL's (or the ensemble's) plus DQfD's margin term over the demo half, computed
  here from the grasp critic's raw outputs; with `demo_grasp_balanced`, the term's mean over each expert choice's
  rows, then over the choices (a rare close press weighing as much as the common stay);
- trained on the batch, the grasp critic ranks the expert's choice first at every demo row, and updates stay
  finite; the plain SACAgent refuses the margin (no grasp critic), no weight or margin is taken below 0, and no
  balancing without a margin.
"""

from __future__ import annotations

import hil_serl

CHECK = (
    hil_serl.AGENT_MATH
    + r"""

report = {}
rng = np.random.default_rng(0)
W, M, B = 0.5, 0.1, 16
for kind, dim, grippers, extra in (("make_sac_pixel_agent_hybrid_single_arm", 25, [6], {}),
                                   ("make_sac_pixel_agent_hybrid_dual_arm", 32, [6, 13],
                                    {"grasp_critic_ensemble_size": 2})):
    size = 7 * len(grippers)
    sample = {"state": np.zeros((1, dim), np.float32)}
    make = lambda **kw: state_agent.make_sac_state_agent(0, sample, np.zeros(size, np.float32), kind=kind,
                                                         discount=0.9, **extra, **kw)
    plain, agent = make(), make(demo_bc_weight=W, demo_grasp_margin=M)
    batch = made_up_batch(rng, dim, size, B, grippers, penalties=[0.0, -0.02])
    key = jax.random.PRNGKey(2)
    params = agent.state.params
    demo = {"state": batch["observations"]["state"][B // 2:]}
    arm = np.delete(np.asarray(batch["actions"]), grippers, axis=1)[B // 2:]
    mode = np.asarray(agent.forward_policy(demo, rng=key, grad_params=params).mode())
    actor = [float(agent.policy_loss_fn(batch, params, key)[0] - plain.policy_loss_fn(batch, params, key)[0]),
             W * float(((mode - arm) ** 2).mean())]
    qs = grasp_values(agent, params, demo)
    choice = joint_choice(np.asarray(batch["actions"])[B // 2:], grippers)
    expert = np.eye(qs.shape[-1])[choice]
    rows = (qs + M * (1 - expert)).max(axis=-1) - (qs * expert).sum(axis=-1)
    grasp_loss = lambda a: float(a.grasp_critic_loss_fn(batch, params, key)[0])
    grasp = [grasp_loss(agent) - grasp_loss(plain), float(rows.mean())]
    per_choice = [rows[choice == c].mean() for c in sorted(set(choice.tolist()))]  # each choice's mean, then theirs
    balanced = make(demo_bc_weight=W, demo_grasp_margin=M, demo_grasp_balanced=True)
    balance = [grasp_loss(balanced) - grasp_loss(plain), float(np.mean(per_choice)), len(per_choice),
               [int(n) for n in np.bincount(choice)]]
    for _ in range(300):
        agent, update = agent.update(batch)
    ranked = grasp_values(agent, agent.state.params, demo).argmax(axis=-1)
    maker = lambda **kw: state_agent.make_sac_state_agent(0, sample, np.zeros(size, np.float32), **kw)
    refused = [refusal(maker, kind="make_sac_pixel_agent", demo_grasp_margin=M),
               refusal(maker, kind=kind, demo_bc_weight=0.0), refusal(maker, kind=kind, demo_grasp_margin=-1.0),
               refusal(maker, kind=kind, demo_grasp_balanced=True)]
    report[kind] = {
        "class": type(agent).__name__, "actor": actor, "grasp": grasp, "balanced": balance,
        "ranked": [int(c) for c in ranked], "expert": [int(c) for c in choice],
        "finite": bool(np.isfinite(float(update["actor"]["demo_bc_loss"]))
                       and np.isfinite(float(update["grasp_critic"]["demo_grasp_margin_loss"]))),
        "refused": refused,
    }
print("@@ " + json.dumps(report), flush=True)
"""
)


@hil_serl.may_build
def test_demo_losses_add_the_experts_imitation_and_margin_on_the_demo_half():
    report = hil_serl.check(CHECK, timeout=600)
    for kind, cls in (
        ("make_sac_pixel_agent_hybrid_single_arm", "DemoLossesSACAgentHybridSingleArm"),
        ("make_sac_pixel_agent_hybrid_dual_arm", "DemoLossesClippedGraspCriticSACAgentHybridDualArm"),
    ):
        checked = report[kind]
        assert checked["class"] == cls, checked
        for name in ("actor", "grasp"):
            computed, by_hand = checked[name]
            assert by_hand > 0 and abs(computed - by_hand) < 1e-4 * max(1.0, by_hand), (name, checked)
        computed, by_hand, choices, rows = checked["balanced"]
        # the made-up demo half has several choices in unequal numbers, so the balanced mean is not the plain one
        assert choices > 1 and len(set(n for n in rows if n)) > 1 and abs(by_hand - checked["grasp"][1]) > 1e-3, checked
        assert by_hand > 0 and abs(computed - by_hand) < 1e-4 * max(1.0, by_hand), checked
        assert checked["ranked"] == checked["expert"] and checked["finite"], checked
        no_grasp, weight, margin, balanced = checked["refused"]
        assert "has no grasp critic" in no_grasp and "positive weight" in weight and "positive margin" in margin
        assert "only with a demo_grasp_margin" in balanced
