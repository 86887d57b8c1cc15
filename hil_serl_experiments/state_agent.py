"""HIL-SERL's SAC agent and replay buffers for an experiment without image keys (runs in HIL-SERL's environment).

serl_launcher refuses an experiment whose `image_keys` is empty in three places, each of them for images only:
- `SACAgent.create_pixels` concatenates the encodings of the image keys (none: jnp.concatenate of nothing);
- `MemoryEfficientReplayBuffer` stores frames once and stacks them at sampling; with no image key it has no
  stack size (`range(None)` at the first insert);
- `SACAgent.update` asks whether `image_keys[0]` is in the batch's next observations (IndexError).

The hybrid agents (SACAgentHybridSingleArm, SACAgentHybridDualArm: SAC for the arms, a DQN grasp critic for the
grippers) have the same three image-only steps in `create_pixels` and `update`.

`install()` is the smallest way round that keeps everything else of HIL-SERL's as it is (train_rlpd.py's learner
and actor loops, agentlace, RLPD's 50/50 demo sampling, the agents and their updates): before train_rlpd.py is run
(hil_serl_experiments/launch.py), serl_launcher's three agent factories (`make_sac_pixel_agent`,
`make_sac_pixel_agent_hybrid_single_arm`, `make_sac_pixel_agent_hybrid_dual_arm`: train_rlpd.py's setup modes
single/dual-arm-fixed-gripper, single-arm-learned-gripper, dual-arm-learned-gripper) and
`MemoryEfficientReplayBufferDataStore` are replaced by functions that call the originals whenever there are image
keys, and otherwise
- build the same agent (its class's `create`, the factory's networks and hyperparameters) on EncodingWrapper's own
  proprioception branch (Dense 64, LayerNorm, tanh) instead of image encoders, its `image_keys` ("state",): the key
  `update` checks, which a state batch always has in its next observations;
- store transitions in serl_launcher's plain `ReplayBufferDataStore` (observation and next observation each
  stored whole, which for a state vector costs what frame sharing would save).

An experiment's config may change the agent's hyperparameters (train_rlpd.py passes make_sac_pixel_agent only
seed, observation, action, image keys, encoder and discount): its TrainConfig calls `configure(...)` when it is
made (train_rlpd.py and evaluate.py make exactly one), with make_sac_pixel_agent's `target_entropy` and, for the
state agent, `temperature_init` and SACAgent.create's own arguments; every value is said once at the agent's
creation. $HIL_SERL_AGENT (JSON, `scripts/hil_serl.py --agent`) overrides them for one run (an ablation), as
$HIL_SERL_TRAIN_CONFIG (`--train-config`) overrides the TrainConfig's own attributes (checkpoint_period,
batch_size, cta_ratio, ...: `override`).

`grasp_critic_ensemble_size` (an agent hyperparameter, default 1: HIL-SERL's grasp critic as it is) gives a hybrid
agent that many independent grasp critics (`ClippedGraspCritic`): its target takes their minimum at the action
their mean picks, as SAC's critics take the minimum of two; the gripper acts on their mean. HIL-SERL's one DQN
network with a double-Q target overestimated on every usb_pickup_insertion_state and object_handover_state run
(docs/learning.md); `grasp_critic_loss_fn` is written to be overridden by a subclass ("classes that inherit this
class can change this function"), and that is all this changes.

More agent hyperparameters are this repository's own, each off by default: `temperature_min` keeps SAC's
temperature at or above a floor (`FlooredTemperature`), `critic_target_max` bounds the next values in SAC's critic
target (`BoundedTarget`, mixed in as ClippedGraspCritic is), `demo_bc_weight` and `demo_grasp_margin` add the
expert's actions to the actor's and the grasp critic's losses on the demo half of each batch (`DemoLosses`: TD3+BC's
term and DQfD's large margin; `demo_grasp_balanced` weighs the margin's rare expert choices as its common one),
`target_entropy_anneal` moves SAC's target entropy linearly to a final value between two learner steps
(`AnnealedEntropy`), `grasp_cql_weight` adds CQL's conservative term to the grasp critic's loss (`ConservativeGrasp`).
`composed` makes the agent class from HIL-SERL's and the mixins a run asks for.

`pace` holds train_rlpd.py's learner to at most N critic updates per transition the actors send (the TrainConfig's
`max_updates_per_transition`; None, the default: as fast as it can, as train_rlpd.py's learner runs): the state
store's online buffer waits before a batch while the learner is ahead.
"""

from __future__ import annotations

import json
import math
import os
import threading
from functools import cache, partial

import flax.linen as nn
import jax
import jax.numpy as jnp
from serl_launcher.agents.continuous.sac import SACAgent
from serl_launcher.agents.continuous.sac_hybrid_dual import SACAgentHybridDualArm
from serl_launcher.agents.continuous.sac_hybrid_single import SACAgentHybridSingleArm
from serl_launcher.data import data_store
from serl_launcher.data.data_store import ReplayBufferDataStore
from serl_launcher.data.replay_buffer import ReplayBuffer
from serl_launcher.networks.actor_critic_nets import Critic, GraspCritic, Policy, ensemblize
from serl_launcher.networks.lagrange import GeqLagrangeMultiplier
from serl_launcher.networks.mlp import MLP
from serl_launcher.utils import launcher

STATE_KEYS = ("state",)
AGENT_KWARGS: dict = {}  # the experiment's hyperparameters (configure), given to the factories
LEARNER: dict = {"updates_per_step": 1}  # agent updates per learner step (configure)


def override(config) -> None:
    """The TrainConfig's attributes that $HIL_SERL_TRAIN_CONFIG (JSON) sets for this run; an unknown one is refused."""
    values = json.loads(os.environ.get("HIL_SERL_TRAIN_CONFIG") or "{}")
    unknown = sorted(k for k in values if not hasattr(config, k))
    if unknown:
        raise ValueError(f"$HIL_SERL_TRAIN_CONFIG: {type(config).__name__} has no {', '.join(unknown)}")
    for key, value in values.items():
        setattr(config, key, value)
    if values:
        print(f"[state agent] this run's TrainConfig values: {values}", flush=True)


def configure(*, updates_per_step: int = 1, **kwargs) -> None:
    """The experiment's agent hyperparameters, for the agents made from now on in this process ($HIL_SERL_AGENT's
    over them), and how many agent updates its learner makes per learner step (the TrainConfig's cta_ratio: the
    unit of a schedule given in learner steps, `target_entropy_anneal`)."""
    LEARNER["updates_per_step"] = updates_per_step
    AGENT_KWARGS.clear()
    AGENT_KWARGS.update(kwargs)
    AGENT_KWARGS.update(json.loads(os.environ.get("HIL_SERL_AGENT") or "{}"))
    if "updates_per_step" in AGENT_KWARGS:
        raise ValueError("updates_per_step: the TrainConfig's cta_ratio sets it (--train-config), not the agent's")


class ProprioEncoder(nn.Module):
    """EncodingWrapper's proprioception branch alone: the (stacked) state through Dense, LayerNorm and tanh."""

    latent_dim: int = 64  # EncodingWrapper's proprio_latent_dim

    @nn.compact
    def __call__(self, observations, train: bool = False, stop_gradient: bool = False):
        state = observations["state"]
        state = state.reshape(*state.shape[:-2], -1)  # (T, C) -> (T C), (B, T, C) -> (B, T C): enable_stacking
        state = nn.Dense(self.latent_dim, kernel_init=nn.initializers.xavier_uniform())(state)
        return nn.tanh(nn.LayerNorm()(state))


class GraspChoice:
    """An agent's gripper values in its env action (`GRIPPERS`, set per class by `composed`)."""

    GRIPPERS: tuple = ()

    def grasp_choice(self, actions):
        """The grasp choice of each env action, as the hybrid classes' own losses read it (0 <= choice < choices)."""
        grippers = jnp.round(actions[..., list(self.GRIPPERS)]).astype(jnp.int32) + 1  # -1, 0, 1 -> 0, 1, 2
        return (grippers * 3 ** jnp.arange(len(self.GRIPPERS))[::-1]).sum(axis=-1)  # dual: first gripper * 3 + second

    def arm_actions(self, actions):
        """The env actions without the gripper values: what the policy outputs and SAC's critics take."""
        grippers = {g % actions.shape[-1] for g in self.GRIPPERS}
        return actions[..., [i for i in range(actions.shape[-1]) if i not in grippers]]


class ClippedGraspCritic(GraspChoice):
    """A hybrid agent's grasp critic as an ensemble (its module `ensemblize`d: the grasp critic's outputs are
    (members, batch, choices)): the gripper's choice and the target's next choice are the argmax of the members'
    mean, the target the members' minimum there (clipped double Q), each member fitted to it; the loss's figures
    are HIL-SERL's (grasp_critic_loss, predicted_grasp_qs, target_grasp_qs, grasp_rewards). Mixed in before
    SACAgentHybridSingleArm or SACAgentHybridDualArm."""

    def grasp_qs(self, observations, rng, *, grad_params=None, train: bool = True):
        """Each member's values of the grasp choices: (members, batch, choices)."""
        return super().forward_grasp_critic(observations, rng, grad_params=grad_params, train=train)

    def forward_grasp_critic(self, observations, rng, *, grad_params=None, train: bool = True):
        """The members' mean (what `sample_actions` takes the argmax of)."""
        return self.grasp_qs(observations, rng, grad_params=grad_params, train=train).mean(axis=0)

    def grasp_critic_loss_fn(self, batch, params, rng):
        rows = jnp.arange(batch["rewards"].shape[0])
        best_next = self.forward_grasp_critic(batch["next_observations"], rng=rng).argmax(axis=-1)
        target_next = self.grasp_qs(batch["next_observations"], rng, grad_params=self.state.target_params)
        grasp_rewards = batch["rewards"] + batch["grasp_penalty"]
        target = grasp_rewards + self.config["discount"] * batch["masks"] * target_next[:, rows, best_next].min(axis=0)
        predicted = self.grasp_qs(batch["observations"], rng, grad_params=params)[:, rows, self.grasp_choice(
            batch["actions"])]  # fmt: skip
        loss = jnp.mean((predicted - jax.lax.stop_gradient(target)) ** 2)
        return loss, {"grasp_critic_loss": loss, "predicted_grasp_qs": predicted.mean(),
                      "target_grasp_qs": target.mean(), "grasp_rewards": grasp_rewards.mean()}  # fmt: skip


def demo_half(batch):
    """The demo half of a learner's batch: train_rlpd.py's learner (and the probe) concatenates an online batch and
    a demo batch of half the batch size each, in that order (`concat_batches(batch, demo_batch)`); the demo buffer
    holds the demos and every intervention, so each of these rows is the expert's action."""
    return jax.tree_util.tree_map(lambda x: x[x.shape[0] // 2 :], batch)


class DemoLosses(GraspChoice):
    """Losses on the expert's actions beside the agent's own, on the demo half of each batch (`demo_half`):
    - `demo_bc_weight` (the config's key; None: off): the actor's loss gains that weight times the mean squared
      difference between the policy's mode and the expert's arm action (TD3+BC's term, at a fixed weight);
    - `demo_grasp_margin` (None: off): the grasp critic's loss gains DQfD's large-margin term, the mean of
      max over choices of (Q(s, a) + margin where a is not the expert's choice) - Q(s, expert's choice): at the
      expert's states its choice is valued at least `margin` above the others;
    - `demo_grasp_balanced` (False: off): that term's mean taken over each expert choice's rows, then over the
      choices in the demo half, so that a rare choice (a close press, one row in dozens) weighs as much as the
      common one (stay), not in proportion to its rows.
    Mixed in before an agent class (and before ClippedGraspCritic: the margin is on the members' mean, what the
    gripper acts on)."""

    def policy_loss_fn(self, batch, params, rng):
        loss, info = super().policy_loss_fn(batch, params, rng)
        if self.config["demo_bc_weight"] is None:
            return loss, info
        demo = demo_half(batch)
        mode = self.forward_policy(demo["observations"], rng=rng, grad_params=params).mode()
        imitation = jnp.mean((mode - self.arm_actions(demo["actions"])) ** 2)
        return loss + self.config["demo_bc_weight"] * imitation, {**info, "demo_bc_loss": imitation}

    def grasp_critic_loss_fn(self, batch, params, rng):
        loss, info = super().grasp_critic_loss_fn(batch, params, rng)
        if self.config["demo_grasp_margin"] is None:
            return loss, info
        demo = demo_half(batch)
        qs = self.forward_grasp_critic(demo["observations"], rng=rng, grad_params=params)
        expert = jax.nn.one_hot(self.grasp_choice(demo["actions"]), qs.shape[-1])
        expert_q = (qs * expert).sum(axis=-1)
        rows = (qs + self.config["demo_grasp_margin"] * (1.0 - expert)).max(axis=-1) - expert_q
        if self.config["demo_grasp_balanced"]:  # each row weighs 1 / (its choice's rows x the choices present)
            counts = expert.sum(axis=0)
            weights = (expert / jnp.maximum(counts, 1.0)).sum(axis=-1) / (counts > 0).sum()
            margin = (rows * weights).sum()
        else:
            margin = rows.mean()
        return loss + margin, {**info, "demo_grasp_margin_loss": margin}


class ConservativeGrasp(GraspChoice):
    """The grasp critic's loss plus `grasp_cql_weight` (the config's key) times CQL(H)'s term for discrete choices
    (Kumar et al., 2020), over the whole batch: the mean of logsumexp over choices of Q(s, .) less Q(s, the batch's
    choice). A choice the buffer seldom makes at a state (an open while the policy carries the object: 3 % of its
    own hold steps in object_handover_state's run 16) is pushed below the ones it makes, instead of left to the
    network's extrapolation, which the gripper's argmax picks whenever it overshoots. Mixed in before an agent class
    (and before ClippedGraspCritic: on the members' mean, what the gripper acts on)."""

    def grasp_critic_loss_fn(self, batch, params, rng):
        loss, info = super().grasp_critic_loss_fn(batch, params, rng)
        qs = self.forward_grasp_critic(batch["observations"], rng=rng, grad_params=params)
        taken = jnp.take_along_axis(qs, self.grasp_choice(batch["actions"])[:, None], axis=-1)[:, 0]
        conservative = jnp.mean(jax.nn.logsumexp(qs, axis=-1) - taken)
        return loss + self.config["grasp_cql_weight"] * conservative, {**info, "grasp_cql_loss": conservative}


class BoundedTarget:
    """SAC's critics with their target's next values at most `critic_target_max` (the config's key): the target
    r + discount * mask * min(next Qs) then stays within the task's returns (1: a sparse reward of 1 at the episode's
    end), however far the critics extrapolate at the policy's next actions. Only `forward_target_critic`, which the
    agents' own `critic_loss_fn` calls for the next values alone, changes. Mixed in before an agent class."""

    def forward_target_critic(self, observations, actions, rng):
        return jnp.minimum(super().forward_target_critic(observations, actions, rng), self.config["critic_target_max"])


class AnnealedEntropy:
    """SAC's target entropy moved from `target_entropy` to a final value, linearly between two of the agent's update
    counts (the config's `target_entropy_anneal`: first, last, final; `state.step`, which train_rlpd.py's learner
    advances `cta_ratio` times per learner step), held at each end: the temperature's Lagrange penalty is
    HIL-SERL's with that target in place of the fixed one. Mixed in before an agent class."""

    def temperature_lagrange_penalty(self, entropy, *, grad_params=None):
        first, last, final = self.config["target_entropy_anneal"]
        start = self.config["target_entropy"]
        target = jnp.interp(self.state.step, jnp.array([first, last]), jnp.array([start, final]))
        params = grad_params or self.state.params
        return self.state.apply_fn({"params": params}, lhs=entropy, rhs=target, name="temperature")


# each agent class's gripper values in its env action (GraspChoice)
GRIPPERS = {SACAgent: (), SACAgentHybridSingleArm: (-1,), SACAgentHybridDualArm: (6, 13)}  # dual: each arm's 7th


@cache
def composed(agent_class, mixins: tuple):
    """`agent_class` with `mixins` mixed in before it, in that order (one class each, made once)."""
    if not mixins:
        return agent_class
    name = "".join(mixin.__name__ for mixin in mixins) + agent_class.__name__
    return type(name, (*mixins, agent_class), {"GRIPPERS": GRIPPERS[agent_class]})


# train_rlpd.py's setup modes and the serl_launcher.utils.launcher factory it calls for each
SETUP_MODES = {
    "single-arm-fixed-gripper": "make_sac_pixel_agent",
    "dual-arm-fixed-gripper": "make_sac_pixel_agent",
    "single-arm-learned-gripper": "make_sac_pixel_agent_hybrid_single_arm",
    "dual-arm-learned-gripper": "make_sac_pixel_agent_hybrid_dual_arm",
}
# per factory: its agent class, how many of the action's values the policy outputs (the others are the grippers',
# which the grasp critic picks) and the grasp critic's outputs (None: the policy outputs the whole action, no
# grasp critic)
AGENT_KINDS = {
    "make_sac_pixel_agent": (SACAgent, None, None),
    "make_sac_pixel_agent_hybrid_single_arm": (SACAgentHybridSingleArm, 6, 3),  # close, stay, open
    "make_sac_pixel_agent_hybrid_dual_arm": (SACAgentHybridDualArm, 12, 9),  # both arms' 3 x 3
}


class FlooredTemperature(nn.Module):
    """SAC's temperature, `floor` + a softplus Lagrange multiplier (GeqLagrangeMultiplier's own: its penalty and
    so its gradient are unchanged): the multiplier's own part goes to 0 while the policy's entropy stays above its
    target, the temperature never below `floor`. floor 0 is HIL-SERL's temperature as it is."""

    init_value: float
    floor: float = 0.0

    @nn.compact
    def __call__(self, *, lhs=None, rhs=None):
        multiplier = GeqLagrangeMultiplier(init_value=self.init_value - self.floor, constraint_shape=())
        if lhs is None:
            return self.floor + multiplier()
        return multiplier(lhs=lhs, rhs=rhs)


def factory(setup_mode: str):
    """The agent factory train_rlpd.py calls for `setup_mode` (the state-aware one once `install`ed)."""
    return getattr(launcher, SETUP_MODES[setup_mode])


def make_sac_state_agent(
    seed,
    sample_obs,
    sample_action,
    discount=0.97,
    reward_bias=0.0,
    target_entropy=None,
    temperature_init=1e-2,
    temperature_min=0.0,
    critic_ensemble_size=2,
    grasp_critic_ensemble_size=1,
    critic_target_max=None,
    demo_bc_weight=None,
    demo_grasp_margin=None,
    demo_grasp_balanced=False,
    target_entropy_anneal=None,
    grasp_cql_weight=None,
    updates_per_step=1,
    kind="make_sac_pixel_agent",
    **create_kwargs,
):
    """The agent of HIL-SERL's factory `kind` (AGENT_KINDS): its networks, optimizers, temperature and discount,
    on the state alone; `critic_ensemble_size` critics (the factories' 2), `grasp_critic_ensemble_size` grasp
    critics (1: HIL-SERL's; more: ClippedGraspCritic), SAC's temperature never below `temperature_min`
    (FlooredTemperature; 0: HIL-SERL's), SAC's critic targets' next values at most `critic_target_max` (BoundedTarget;
    None: HIL-SERL's), the expert's actions in the actor's and the grasp critic's losses at `demo_bc_weight` and
    `demo_grasp_margin` (DemoLosses; None: HIL-SERL's), the margin's mean balanced over the expert's choices with
    `demo_grasp_balanced`, SAC's target entropy moved to `target_entropy_anneal`'s final value between its first
    and last learner step (AnnealedEntropy, [first, last, final]; the agent updates `updates_per_step` times per
    learner step, the TrainConfig's cta_ratio; None: HIL-SERL's fixed target), CQL's term in the grasp critic's loss
    at `grasp_cql_weight` (ConservativeGrasp; None: HIL-SERL's), `create_kwargs` to the class's
    `create` (its optimizers' learning rates, soft_target_update_rate, critic_subsample_size, ...)."""
    agent_class, policy_dim, grasp_outputs = AGENT_KINDS[kind]
    if grasp_critic_ensemble_size < 1:
        raise ValueError(f"grasp_critic_ensemble_size {grasp_critic_ensemble_size}: at least 1 grasp critic")
    if grasp_critic_ensemble_size != 1 and not grasp_outputs:
        raise ValueError(f"grasp_critic_ensemble_size: {agent_class.__name__} has no grasp critic")
    if not 0.0 <= temperature_min < temperature_init:
        raise ValueError(f"temperature_min {temperature_min}: at least 0 and below temperature_init {temperature_init}")
    if critic_target_max is not None and not math.isfinite(critic_target_max):
        raise ValueError(f"critic_target_max {critic_target_max}: a finite bound, or None for HIL-SERL's target")
    if demo_bc_weight is not None and not (math.isfinite(demo_bc_weight) and demo_bc_weight > 0):
        raise ValueError(f"demo_bc_weight {demo_bc_weight}: a positive weight, or None for HIL-SERL's actor loss")
    if demo_grasp_margin is not None and not (math.isfinite(demo_grasp_margin) and demo_grasp_margin > 0):
        raise ValueError(f"demo_grasp_margin {demo_grasp_margin}: a positive margin, or None for HIL-SERL's loss")
    if demo_grasp_margin is not None and not grasp_outputs:
        raise ValueError(f"demo_grasp_margin: {agent_class.__name__} has no grasp critic")
    if not isinstance(demo_grasp_balanced, bool) or (demo_grasp_balanced and demo_grasp_margin is None):
        raise ValueError(
            f"demo_grasp_balanced {demo_grasp_balanced!r}: true or false, true only with a demo_grasp_margin"
        )
    if grasp_cql_weight is not None and not (math.isfinite(grasp_cql_weight) and grasp_cql_weight > 0):
        raise ValueError(f"grasp_cql_weight {grasp_cql_weight}: a positive weight, or None for HIL-SERL's loss")
    if grasp_cql_weight is not None and not grasp_outputs:
        raise ValueError(f"grasp_cql_weight: {agent_class.__name__} has no grasp critic")
    if target_entropy_anneal is not None:
        first, last, final = target_entropy_anneal  # a wrong length raises here
        if not (0 <= first < last and math.isfinite(last) and math.isfinite(final)):
            raise ValueError(f"target_entropy_anneal {target_entropy_anneal}: [first step, a later last step, a "
                             "finite final target entropy], or None for HIL-SERL's fixed target")  # fmt: skip
        target_entropy_anneal = tuple(float(v) for v in (first * updates_per_step, last * updates_per_step, final))
    encoder = ProprioEncoder(name="encoder")
    network = {"activations": nn.tanh, "use_layer_norm": True, "hidden_dims": [256, 256]}
    critic_backbone = ensemblize(partial(MLP, **network, activate_final=True), critic_ensemble_size)(
        name="critic_ensemble"
    )
    networks = {
        "critic_def": Critic(encoder=encoder, network=critic_backbone, name="critic"),
        "actor_def": Policy(
            encoder=encoder,
            network=MLP(**network, activate_final=True),
            action_dim=policy_dim or sample_action.shape[-1],
            tanh_squash_distribution=True,
            std_parameterization="exp",
            std_min=1e-5,
            std_max=5,
            name="actor",
        ),
        "temperature_def": FlooredTemperature(init_value=temperature_init, floor=temperature_min, name="temperature")
        if temperature_min
        else GeqLagrangeMultiplier(
            init_value=temperature_init, constraint_shape=(), constraint_type="geq", name="temperature"
        ),
    }
    if grasp_outputs:  # create_pixels' grasp critic: the factory's network, without a final activation
        grasp_critic = partial(GraspCritic, encoder=encoder, network=MLP(**network), output_dim=grasp_outputs)
        if grasp_critic_ensemble_size > 1:  # each member its own encoder, network and output layer
            grasp_critic = ensemblize(grasp_critic, grasp_critic_ensemble_size)
        networks["grasp_critic_def"] = grasp_critic(name="grasp_critic")
    mixins = (
        *([DemoLosses] if demo_bc_weight is not None or demo_grasp_margin is not None else []),
        *([ConservativeGrasp] if grasp_cql_weight is not None else []),
        *([BoundedTarget] if critic_target_max is not None else []),
        *([ClippedGraspCritic] if grasp_critic_ensemble_size > 1 else []),
        *([AnnealedEntropy] if target_entropy_anneal is not None else []),
    )
    agent_class = composed(agent_class, mixins)
    agent = agent_class.create(
        jax.random.PRNGKey(seed),
        sample_obs,
        sample_action,
        **networks,
        discount=discount,
        backup_entropy=False,
        critic_ensemble_size=critic_ensemble_size,
        image_keys=STATE_KEYS,
        augmentation_function=None,
        reward_bias=reward_bias,
        target_entropy=target_entropy,
        **{"critic_subsample_size": None, **create_kwargs},
    )
    extra = {"critic_target_max": critic_target_max, "demo_bc_weight": demo_bc_weight,
             "demo_grasp_margin": demo_grasp_margin, "grasp_cql_weight": grasp_cql_weight}  # fmt: skip
    extra = {k: v if v is None else float(v) for k, v in extra.items()}
    extra |= {"demo_grasp_balanced": demo_grasp_balanced, "target_entropy_anneal": target_entropy_anneal}
    return agent.replace(config={**agent.config, **extra})


# the learner's pace (`pace`): at most `updates` batches drawn from the online buffer per transition put in it
PACE: dict = {"updates": None, "online": None}


def pace(updates_per_transition: float | None) -> None:
    """Let the learner draw at most `updates_per_transition` batches (critic updates: train_rlpd.py draws one from
    each buffer per update, `cta_ratio` per learner step) from its online buffer per transition the actors put in
    it, waiting for more when it is ahead; None: as fast as it can, as train_rlpd.py's learner runs. The online
    buffer is the first buffer made from now on in this process: train_rlpd.py's learner makes it before the demo
    buffer, whose draws follow the online one's (one of each per update)."""
    if updates_per_transition is not None and not updates_per_transition > 0:
        raise ValueError(f"max_updates_per_transition {updates_per_transition}: a positive number, or None")
    PACE.update(updates=updates_per_transition, online=None)


class StateReplayBufferDataStore(ReplayBufferDataStore):
    """serl_launcher's plain replay buffer data store, taking MemoryEfficientReplayBufferDataStore's arguments; the
    online buffer paced (`pace`)."""

    def __init__(self, observation_space, action_space, capacity, include_grasp_penalty=False, **_):
        super().__init__(observation_space, action_space, capacity)
        if include_grasp_penalty:  # ReplayBufferDataStore does not pass it on: the buffer again, with it
            ReplayBuffer.__init__(self, observation_space, action_space, capacity, include_grasp_penalty=True)
        self.inserted = self.drawn = 0
        self.more = threading.Condition()
        if PACE["updates"] is not None and PACE["online"] is None:
            PACE["online"] = self
            print(f"[state agent] the learner draws at most {PACE['updates']} batches per online transition",
                  flush=True)  # fmt: skip

    def insert(self, *args, **kwargs):
        super().insert(*args, **kwargs)
        with self.more:
            self.inserted += 1
            self.more.notify_all()

    def sample(self, *args, pack_obs_and_next_obs: bool = False, **kwargs):
        """A batch (each observation and next observation is stored whole: nothing to pack); the online buffer's
        training batches wait while the learner is ahead of its pace (a download by index does not)."""
        if PACE["online"] is self and "indx" not in kwargs:
            with self.more:
                self.more.wait_for(lambda: self.drawn < PACE["updates"] * self.inserted)
                self.drawn += 1
        return super().sample(*args, **kwargs)


def _state_aware(factory, kind: str):
    """`factory` where there are image keys (its own default encoder), else make_sac_state_agent of `kind`."""

    def make(seed, sample_obs, sample_action, image_keys=("image",), encoder_type="", **kwargs):
        if passed := sorted(set(AGENT_KWARGS) & set(kwargs)):  # the caller's value would win unseen
            raise ValueError(f"{', '.join(passed)}: the script passes the agent factory its own (train_rlpd.py: the "
                             "TrainConfig's discount): set it there, not as an agent hyperparameter")  # fmt: skip
        kwargs = {**AGENT_KWARGS, **kwargs}
        if AGENT_KWARGS:
            print(f"[state agent] the experiment's hyperparameters: {AGENT_KWARGS}", flush=True)
        if image_keys:
            encoder_type = encoder_type or "resnet-pretrained"
            return factory(seed, sample_obs, sample_action, image_keys, encoder_type, **kwargs)
        return make_sac_state_agent(seed, sample_obs, sample_action, kind=kind, **LEARNER, **kwargs)

    make.state_aware = True
    make.__name__ = factory.__name__
    return make


def install() -> None:
    """Route serl_launcher's agent and buffer factories to the state versions where there are no image keys."""
    if getattr(launcher.make_sac_pixel_agent, "state_aware", False):
        return
    for name in AGENT_KINDS:
        setattr(launcher, name, _state_aware(getattr(launcher, name), name))
    efficient_store = data_store.MemoryEfficientReplayBufferDataStore

    def replay_buffer_data_store(observation_space, action_space, capacity, image_keys=("image",), **kwargs):
        if image_keys:
            return efficient_store(observation_space, action_space, capacity, image_keys=image_keys, **kwargs)
        return StateReplayBufferDataStore(observation_space, action_space, capacity, **kwargs)

    data_store.MemoryEfficientReplayBufferDataStore = replay_buffer_data_store
