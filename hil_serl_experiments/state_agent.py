"""HIL-SERL's SAC agent and replay buffers for an experiment without image keys (runs in HIL-SERL's environment).

serl_launcher refuses an experiment whose `image_keys` is empty in three places, each of them for images only:
- `SACAgent.create_pixels` concatenates the encodings of the image keys (none: jnp.concatenate of nothing);
- `MemoryEfficientReplayBuffer` stores frames once and stacks them at sampling; with no image key it has no
  stack size (`range(None)` at the first insert);
- `SACAgent.update` asks whether `image_keys[0]` is in the batch's next observations (IndexError).

`install()` is the smallest way round that keeps everything else of HIL-SERL's as it is (train_rlpd.py's learner
and actor loops, agentlace, RLPD's 50/50 demo sampling, SACAgent and its update): before train_rlpd.py is run
(hil_serl_experiments/launch.py), serl_launcher's `make_sac_pixel_agent` and `MemoryEfficientReplayBufferDataStore`
are replaced by functions that call the originals whenever there are image keys, and otherwise
- build the same SACAgent (`SACAgent.create`, make_sac_pixel_agent's networks and hyperparameters) on
  EncodingWrapper's own proprioception branch (Dense 64, LayerNorm, tanh) instead of image encoders, its
  `image_keys` ("state",): the key `update` checks, which a state batch always has in its next observations;
- store transitions in serl_launcher's plain `ReplayBufferDataStore` (observation and next observation each
  stored whole, which for a state vector costs what frame sharing would save).

An experiment's config may change the agent's hyperparameters (train_rlpd.py passes make_sac_pixel_agent only
seed, observation, action, image keys, encoder and discount): its TrainConfig calls `configure(...)` when it is
made (train_rlpd.py and evaluate.py make exactly one), with make_sac_pixel_agent's `target_entropy` and, for the
state agent, `temperature_init` and SACAgent.create's own arguments; every value is said once at the agent's
creation. $HIL_SERL_AGENT (JSON, `scripts/hil_serl.py --agent`) overrides them for one run (an ablation), as
$HIL_SERL_TRAIN_CONFIG (`--train-config`) overrides the TrainConfig's own attributes (checkpoint_period,
batch_size, cta_ratio, ...: `override`).
"""

from __future__ import annotations

import json
import os
from functools import partial

import flax.linen as nn
import jax
from serl_launcher.agents.continuous.sac import SACAgent
from serl_launcher.data import data_store
from serl_launcher.data.data_store import ReplayBufferDataStore
from serl_launcher.data.replay_buffer import ReplayBuffer
from serl_launcher.networks.actor_critic_nets import Critic, Policy, ensemblize
from serl_launcher.networks.lagrange import GeqLagrangeMultiplier
from serl_launcher.networks.mlp import MLP
from serl_launcher.utils import launcher

STATE_KEYS = ("state",)
AGENT_KWARGS: dict = {}  # the experiment's hyperparameters (configure), given to the factories


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


def configure(**kwargs) -> None:
    """The experiment's agent hyperparameters, for the agents made from now on in this process ($HIL_SERL_AGENT's
    over them)."""
    AGENT_KWARGS.clear()
    AGENT_KWARGS.update(kwargs)
    AGENT_KWARGS.update(json.loads(os.environ.get("HIL_SERL_AGENT") or "{}"))


class ProprioEncoder(nn.Module):
    """EncodingWrapper's proprioception branch alone: the (stacked) state through Dense, LayerNorm and tanh."""

    latent_dim: int = 64  # EncodingWrapper's proprio_latent_dim

    @nn.compact
    def __call__(self, observations, train: bool = False, stop_gradient: bool = False):
        state = observations["state"]
        state = state.reshape(*state.shape[:-2], -1)  # (T, C) -> (T C), (B, T, C) -> (B, T C): enable_stacking
        state = nn.Dense(self.latent_dim, kernel_init=nn.initializers.xavier_uniform())(state)
        return nn.tanh(nn.LayerNorm()(state))


def make_sac_state_agent(
    seed,
    sample_obs,
    sample_action,
    discount=0.97,
    reward_bias=0.0,
    target_entropy=None,
    temperature_init=1e-2,
    critic_ensemble_size=2,
    **create_kwargs,
):
    """make_sac_pixel_agent's SACAgent (its networks, optimizers, temperature and discount) on the state alone;
    `critic_ensemble_size` critics (make_sac_pixel_agent's 2), `create_kwargs` to SACAgent.create (its optimizers'
    learning rates, soft_target_update_rate, critic_subsample_size, ...)."""
    encoder = ProprioEncoder(name="encoder")
    network = {"activations": nn.tanh, "use_layer_norm": True, "hidden_dims": [256, 256], "activate_final": True}
    critic_backbone = ensemblize(partial(MLP, **network), critic_ensemble_size)(name="critic_ensemble")
    critic = Critic(encoder=encoder, network=critic_backbone, name="critic")
    policy = Policy(
        encoder=encoder,
        network=MLP(**network),
        action_dim=sample_action.shape[-1],
        tanh_squash_distribution=True,
        std_parameterization="exp",
        std_min=1e-5,
        std_max=5,
        name="actor",
    )
    temperature = GeqLagrangeMultiplier(
        init_value=temperature_init, constraint_shape=(), constraint_type="geq", name="temperature"
    )
    return SACAgent.create(
        jax.random.PRNGKey(seed),
        sample_obs,
        sample_action,
        actor_def=policy,
        critic_def=critic,
        temperature_def=temperature,
        discount=discount,
        backup_entropy=False,
        critic_ensemble_size=critic_ensemble_size,
        image_keys=STATE_KEYS,
        augmentation_function=None,
        reward_bias=reward_bias,
        target_entropy=target_entropy,
        **{"critic_subsample_size": None, **create_kwargs},
    )


class StateReplayBufferDataStore(ReplayBufferDataStore):
    """serl_launcher's plain replay buffer data store, taking MemoryEfficientReplayBufferDataStore's arguments."""

    def __init__(self, observation_space, action_space, capacity, include_grasp_penalty=False, **_):
        super().__init__(observation_space, action_space, capacity)
        if include_grasp_penalty:  # ReplayBufferDataStore does not pass it on: the buffer again, with it
            ReplayBuffer.__init__(self, observation_space, action_space, capacity, include_grasp_penalty=True)

    def sample(self, *args, pack_obs_and_next_obs: bool = False, **kwargs):
        """Each observation and next observation is stored whole: nothing to pack."""
        return super().sample(*args, **kwargs)


def install() -> None:
    """Route serl_launcher's agent and buffer factories to the state versions where there are no image keys."""
    pixel_agent, efficient_store = launcher.make_sac_pixel_agent, data_store.MemoryEfficientReplayBufferDataStore
    if getattr(pixel_agent, "state_aware", False):
        return

    def make_sac_pixel_agent(seed, sample_obs, sample_action, image_keys=("image",), encoder_type="", **kwargs):
        kwargs = {**AGENT_KWARGS, **kwargs}
        if AGENT_KWARGS:
            print(f"[state agent] the experiment's hyperparameters: {AGENT_KWARGS}", flush=True)
        if image_keys:
            encoder_type = encoder_type or "resnet-pretrained"
            return pixel_agent(seed, sample_obs, sample_action, image_keys, encoder_type, **kwargs)
        return make_sac_state_agent(seed, sample_obs, sample_action, **kwargs)

    def replay_buffer_data_store(observation_space, action_space, capacity, image_keys=("image",), **kwargs):
        if image_keys:
            return efficient_store(observation_space, action_space, capacity, image_keys=image_keys, **kwargs)
        return StateReplayBufferDataStore(observation_space, action_space, capacity, **kwargs)

    make_sac_pixel_agent.state_aware = True
    launcher.make_sac_pixel_agent = make_sac_pixel_agent
    data_store.MemoryEfficientReplayBufferDataStore = replay_buffer_data_store
