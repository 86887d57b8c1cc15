"""state_agent.ClippedGraspCritic, the hybrid agents' grasp critic as an ensemble (`grasp_critic_ensemble_size`),
checked against its definition in HIL-SERL's environment: the agent math alone, on a made-up batch (no world: the
agents learning from a launched world's transitions, this critic included, are tests/test_state_experiment.py's).

- Each member has its own parameters (encoder, network, output layer), its kernels initialised apart.
- The loss's target is the members' minimum at the choice their mean ranks first (clipped double Q), computed here
  from the networks' raw outputs; each member is fitted to it at the choice the batch's action made (the dual
  agent: the first gripper's choice * 3 + the second's, as HIL-SERL's SACAgentHybridDualArm reads it).
- The gripper acts on the members' mean; updates stay finite; one member keeps HIL-SERL's class as it is; an
  agent without a grasp critic refuses the hyperparameter, and no agent takes fewer than one grasp critic.
"""

from __future__ import annotations

import hil_serl

CHECK = (
    hil_serl.AGENT_MATH
    + r"""

report = {}
rng = np.random.default_rng(0)
for kind, dim, grippers in (("make_sac_pixel_agent_hybrid_single_arm", 25, [6]),
                            ("make_sac_pixel_agent_hybrid_dual_arm", 32, [6, 13])):
    size = 7 * len(grippers)
    sample = {"state": np.zeros((1, dim), np.float32)}
    one = state_agent.make_sac_state_agent(0, sample, np.zeros(size, np.float32), kind=kind)
    agent = state_agent.make_sac_state_agent(0, sample, np.zeros(size, np.float32), kind=kind,
                                             grasp_critic_ensemble_size=3, discount=0.9)
    B = 16
    batch = made_up_batch(rng, dim, size, B, grippers, penalties=[0.0, -0.02])
    agent, _ = agent.update(batch)  # the target apart from the online networks
    agent, _ = agent.update(batch)
    raw = lambda params, obs: np.asarray(agent.state.apply_fn({"params": params}, obs, name="grasp_critic"))
    online_next = raw(agent.state.params, batch["next_observations"])
    target_next = raw(agent.state.target_params, batch["next_observations"])
    now = raw(agent.state.params, batch["observations"])
    rows = np.arange(B)
    best = online_next.mean(axis=0).argmax(axis=-1)
    target = (batch["rewards"] + batch["grasp_penalty"]
              + 0.9 * batch["masks"] * target_next[:, rows, best].min(axis=0))
    choice = joint_choice(batch["actions"], grippers)
    loss, info = agent.grasp_critic_loss_fn(batch, agent.state.params, jax.random.PRNGKey(0))
    members = jax.tree_util.tree_leaves(agent.state.params["modules_grasp_critic"])
    for _ in range(20):
        agent, update = agent.update(batch)
    obs = jax.device_put({"state": rng.normal(size=(1, dim)).astype(np.float32)})
    acted = np.asarray(agent.sample_actions(observations=obs, seed=jax.random.PRNGKey(1)))
    mean_best = raw(agent.state.params, obs).mean(axis=0).argmax(axis=-1)
    arms_only = lambda **kw: state_agent.make_sac_state_agent(0, sample, np.zeros(size - len(grippers), np.float32),
                                                              **kw)
    # an agent without a grasp critic (the plain SACAgent's action), no grasp critic at all
    refused = [refusal(arms_only, grasp_critic_ensemble_size=2),
               refusal(arms_only, kind=kind, grasp_critic_ensemble_size=0)]
    report[kind] = {
        "classes": [type(one).__name__, type(agent).__name__],
        "members": sorted({leaf.shape[0] for leaf in members}),
        "apart": all(not np.allclose(leaf[0], leaf[1]) for leaf in members if leaf.ndim == 3),  # the kernels
        "shape": list(now.shape),
        "target": [float(info["target_grasp_qs"]), float(target.mean())],
        "predicted": [float(info["predicted_grasp_qs"]), float(now[:, rows, choice].mean())],
        "loss": [float(loss), float(((now[:, rows, choice] - target) ** 2).mean())],
        "finite": bool(np.isfinite(float(update["grasp_critic"]["grasp_critic_loss"]))),
        "acted": acted[grippers].tolist(),
        "mean_best": [int(mean_best) // 3 ** i % 3 - 1 for i in reversed(range(len(grippers)))],
        "refused": refused,
    }
print("@@ " + json.dumps(report), flush=True)
"""
)


@hil_serl.may_build
def test_the_grasp_critic_ensemble_takes_its_members_minimum_at_their_means_choice():
    report = hil_serl.check(CHECK, timeout=600)
    for kind, hil_serls, choices in (
        ("make_sac_pixel_agent_hybrid_single_arm", "SACAgentHybridSingleArm", 3),
        ("make_sac_pixel_agent_hybrid_dual_arm", "SACAgentHybridDualArm", 9),
    ):
        checked = report[kind]
        assert checked["classes"] == [hil_serls, f"ClippedGraspCritic{hil_serls}"], checked
        assert checked["members"] == [3] and checked["apart"], checked
        assert checked["shape"] == [3, 16, choices], checked
        for name in ("target", "predicted", "loss"):
            computed, by_hand = checked[name]
            assert abs(computed - by_hand) < 1e-4 * max(1.0, abs(by_hand)), (name, checked)
        assert checked["finite"] and checked["acted"] == checked["mean_best"], checked
        assert "has no grasp critic" in checked["refused"][0] and "at least 1" in checked["refused"][1], checked
