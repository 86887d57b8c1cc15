"""Offline probe of a state experiment's critics: HIL-SERL's agent for the experiment (state_agent.py, the factory
train_rlpd.py calls for its setup mode) trained on the transitions a run kept (its demo_buffer/ and buffer/
pickles), with train_rlpd.py's learner schedule (RLPD's 50/50 demo and online batches, cta_ratio - 1 critic updates
then one full update; the demo half from the run's demos and its interventions, as train_rlpd.py's learner fills
its demo buffer), no env, no actor. It prints the critics' predicted values every `--every` updates: with
one reward of 1 at an episode's end (mask 0 there) no value can exceed 1, so a predicted Q above 1 is the critics
diverging, not learning. Used to find what made usb_pickup_insertion_state's critics diverge (docs/learning.md).

It is the `probe` step of scripts/hil_serl.py, which runs it in HIL-SERL's environment (.venv-hil-serl, the
stand-ins that HIL-SERL's experiment configs need, the run's `--agent` and `--train-config`):

    scripts/hil_serl.py usb_pickup_insertion_state probe --dir RUN [--checkpoint-path first_run] [--steps 8000] \
        [--train-config '{"discount": 0.95}'] [--agent '{"critic_ensemble_size": 10}'] \
        [--state-scale '{"4": 0.01, "5": 0.01, "6": 0.01}']

`--state-scale` multiplies columns of the stored state (observation and next observation) before training: a probe
of the state's representation without a new run. Record of its uses: benchmarks/learning/ablation/usb-critic-probe.json.

After training, with the expert's demos (`--demos`), it sets the trained agent beside them as `--checkpoint` does
(`imitation`, below), and on the policy's own holds among the run's kept transitions (`own_holds`): what the values
it learned offline would make the policy and the grasp critic do there.

`--checkpoint STEP` trains nothing: it restores the run's learner checkpoint STEP and sets the agent beside the
expert on the states of the expert's demos (`imitation`): per arm and phase (before the expert's first close, its
close presses, after), how closely the policy's mode moves the hand as the expert did, which gripper button the
grasp critic would press and by how much it prefers closing that gripper to staying, and whether the SAC critic
values the expert's arm action above the policy's own. What a run that never learned to grasp leaves open: the
critic that does not prefer the expert, or the actor that does not follow the critic. Where the run kept its
transitions (buffer/, demo_buffer/), it also reads the policy's own holds among them (`own_holds`: after its own
close presses, until it opened, the expert stepped in or the episode ended): whether the grasp critic lets go at
the policy's own states, which the demos' do not show.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hil_serl_experiments"))
from experiments import HIL_SERL_DIR  # noqa: E402  (HIL-SERL's checkout: $HIL_SERL_DIR, else ../shared/hil-serl)

sys.path.insert(1, str(HIL_SERL_DIR / "examples"))


def transitions(paths: list[Path]) -> dict[str, np.ndarray]:
    """The transitions of the pickles at `paths`, stacked per key (observations and next observations: state)."""
    rows = []
    for path in paths:
        with open(path, "rb") as f:
            rows += pickle.load(f)
    out = {k: np.asarray([r[k] for r in rows], dtype=np.float32) for k in ("actions", "rewards", "masks", "dones")}
    out["grasp_penalty"] = np.asarray([r.get("grasp_penalty", 0.0) for r in rows], dtype=np.float32)
    for key in ("observations", "next_observations"):
        out[key] = np.asarray([r[key]["state"] for r in rows], dtype=np.float32)
    return out


def scaled(data: dict[str, np.ndarray], scale: dict[int, float]) -> dict[str, np.ndarray]:
    for key in ("observations", "next_observations"):
        for column, factor in scale.items():
            data[key][..., column] *= factor
    return data


def batch(data: dict[str, np.ndarray], rng: np.random.Generator, size: int) -> dict:
    index = rng.integers(0, len(data["rewards"]), size)
    picked = {k: v[index] for k, v in data.items()}
    for key in ("observations", "next_observations"):
        picked[key] = {"state": picked[key]}
    return picked


PRESSED = 0.5  # a gripper action below -PRESSED is a close press, above PRESSED an open press (FrankaEnv's 0.5)
ARM_STATE = 13  # a two-arm state's values per arm, HIL-SERL's keys sorted: gripper_pose (1), tcp_pose, tcp_vel (6 each)
OPEN = 0.85  # a gripper reading at or above this is open (FrankaEnv's own test before it sends a close)
MOVING = 0.05  # the expert's translation (of the action's [-1, 1]) below this: it holds the hand still there


def arms_of(action_size: int) -> list[tuple[list[int], int | None]]:
    """Per arm, its action's translation columns and its gripper's column (None: the policy has no gripper) in
    HIL-SERL's layouts: 6 (SAC), 7 (an arm and its gripper), 14 (arm, gripper, arm, gripper)."""
    if action_size == 6:
        return [([0, 1, 2], None)]
    return [([a * 7, a * 7 + 1, a * 7 + 2], a * 7 + 6) for a in range(action_size // 7)]


def phases(expert: np.ndarray, dones: np.ndarray, gripper: int | None) -> dict[str, np.ndarray]:
    """Masks of the demo steps in each phase of an arm: `pick` before the expert's first close press of the
    episode, `close` its close presses, `carry` after the first press (the others); `all` without a gripper."""
    if gripper is None:
        return {"all": np.ones(len(expert), bool)}
    pressed = expert[:, gripper] < -PRESSED
    after, seen = np.zeros(len(expert), bool), False
    for i in range(len(expert)):
        after[i] = seen
        seen = (seen or pressed[i]) and not dones[i]
    return {"pick": ~after & ~pressed, "close": pressed, "carry": after & ~pressed}


def close_margin(grasp_qs: np.ndarray, arm: int, arms: int, press: int = -1) -> np.ndarray:
    """The grasp critic's Q of closing arm `arm`'s gripper (`press` 1: opening it), every other gripper staying,
    less its Q of all staying, per state. Its choices are the grippers' joint ones, the first gripper's the most
    significant digit in base 3 (each gripper's close / stay / open, the env's -1 / 0 / 1, is digit 0 / 1 / 2: the
    agents' own `+ 1`)."""
    stay = sum(3**k for k in range(arms))  # every digit 1
    return grasp_qs[:, stay + press * 3 ** (arms - 1 - arm)] - grasp_qs[:, stay]


def driven(kept: dict[str, np.ndarray], demo_kept: dict[str, np.ndarray]) -> np.ndarray:
    """Which of a run's kept transitions (buffer/) the expert drove: train_rlpd.py's actor keeps those in
    demo_buffer/ as well (the same observation)."""
    seen = {o.tobytes() for o in demo_kept["observations"]}
    return np.array([o.tobytes() in seen for o in kept["observations"]], bool)


def holds(actions: np.ndarray, dones: np.ndarray, expert: np.ndarray, gripper: int) -> tuple[np.ndarray, dict]:
    """The policy's own holds of one gripper in a run's kept transitions, in the order it kept them: from each of
    its own close presses (the expert not driving) to its own open press (that step included), the expert stepping
    in, or the episode's end. The mask of its own steps after each press, and how many holds ended each way."""
    mask, ends, holding = np.zeros(len(actions), bool), {"opened": 0, "expert": 0, "episode_end": 0}, False
    for i in range(len(actions)):
        if holding and expert[i]:
            ends["expert"], holding = ends["expert"] + 1, False
        elif holding:
            mask[i] = True
            if actions[i, gripper] > PRESSED:
                ends["opened"], holding = ends["opened"] + 1, False
        elif not expert[i] and actions[i, gripper] < -PRESSED:
            holding = True  # from the next step: this one's state is the gripper's before the press
        if holding and dones[i]:
            ends["episode_end"], holding = ends["episode_end"] + 1, False
    return mask, ends


def open_margins(margins: np.ndarray) -> dict:
    """The median of a critic's margins for opening over staying on a hold's states, and the shares of those states
    where opening wins by more than 0.05 and 0.1: the opens a grasp penalty that much larger (GripperPenaltyWrapper's,
    paid on each change of a gripper's state) would not have turned, had the critic kept its other values."""
    if not margins.size:
        return {"open_margin_median": None, "open_by_0.05": None, "open_by_0.1": None}
    return {
        "open_margin_median": round(float(np.median(margins)), 4),
        **{f"open_by_{gap}": round(float((margins > gap).mean()), 3) for gap in (0.05, 0.1)},
    }


def own_holds(agent, kept: dict[str, np.ndarray], expert: np.ndarray, seed: int) -> dict:
    """The agent on the policy's own holds in a run's kept transitions (`holds`; `expert`: `driven`), per arm with
    a gripper: the policy's own close presses and how their holds ended, its own steps in them, the share of those
    where it had opened the gripper then (the kept action) and where this agent's grasp critic would open it now
    (of two arms': and with the other arm's gripper open, a drop instead of a hand-over: `open_other_open`), and
    that critic's margins for opening over staying (`close_margin` with press 1; `open_margins`). What the
    demos' states cannot tell: whether the critic lets go at the policy's own states."""
    import jax

    arms = arms_of(kept["actions"].shape[1])
    if all(gripper is None for _, gripper in arms):
        return {}
    key = jax.random.PRNGKey(seed)
    grasp_qs = np.asarray(jax.device_get(agent.forward_grasp_critic({"state": kept["observations"]}, rng=key,
                                                                    train=False)))  # fmt: skip
    best = grasp_qs.argmax(axis=-1)
    out = {}
    for index, (_, gripper) in enumerate(arms):
        mask, ends = holds(kept["actions"], kept["dones"], expert, gripper)
        digit = best // 3 ** (len(arms) - 1 - index) % 3  # this gripper's choice: 2 opens (the env's +1)
        opens = digit[mask] == 2
        drops = opens & other_open(kept["observations"][mask], index, len(arms)) if len(arms) == 2 else None
        out[f"own/arm{index}"] = {
            "presses": sum(ends.values()),
            "ended": ends,
            "steps": int(mask.sum()),
            "opened_then": round(float((kept["actions"][mask, gripper] > PRESSED).mean()), 3) if mask.any() else None,
            "grasp_open": round(float(opens.mean()), 3) if mask.any() else None,
            "open_other_open": round(float(drops.mean()), 3) if mask.any() and drops is not None else None,
            **open_margins(close_margin(grasp_qs, index, len(arms), 1)[mask]),
        }
    return out


def other_open(states: np.ndarray, arm: int, arms: int) -> np.ndarray:
    """Per two-arm state, whether the gripper of the arm other than `arm` reads open: an open of `arm`'s gripper
    there lets go of the object instead of handing it over."""
    return states[..., ARM_STATE * (arms - 1 - arm)].reshape(len(states)) >= OPEN


def kept_holds(agent, run: Path, scale: dict[int, float], seed: int) -> dict:
    """`own_holds` on the transitions the run at `run` kept (buffer/, and demo_buffer/ to tell the expert's steps),
    as `scaled`; {} where it kept none."""
    found = {kind: sorted((run / kind).glob("*.pkl")) for kind in ("buffer", "demo_buffer")}
    if not all(found.values()):
        return {}
    kept = scaled(transitions(found["buffer"]), scale)
    return own_holds(agent, kept, driven(kept, scaled(transitions(found["demo_buffer"]), scale)), seed)


def imitation(agent, data: dict[str, np.ndarray], seed: int) -> dict:
    """The agent on the states of the expert's demos `data`, beside the expert's actions there (see the module's
    docstring): per arm and phase, the steps, the median cosine of the policy's (mode) hand translation with the
    expert's where the expert moves, both mean vertical translations, the share of steps where the grasp critic
    presses close and open, the median of its margin for closing (`close_margin`), and the share
    where the critic's (ensemble mean) Q of the expert's arm action is above that of the policy's mode."""
    import jax

    observations = {"state": data["observations"]}
    expert = data["actions"]
    key = jax.random.PRNGKey(seed)
    mode = np.asarray(jax.device_get(agent.sample_actions(observations=observations, seed=key, argmax=True)))
    arms = arms_of(expert.shape[1])
    arm_columns = [c for c in range(expert.shape[1]) if c not in {g for _, g in arms}]

    def q(actions: np.ndarray) -> np.ndarray:
        qs = agent.forward_critic(observations, actions[:, arm_columns], rng=key, train=False)
        return np.asarray(jax.device_get(qs)).mean(axis=0)

    prefers_expert = q(expert) > q(mode)
    hybrid = any(gripper is not None for _, gripper in arms)  # SACAgent (6 values) has no grasp critic
    grasp_qs = (
        np.asarray(jax.device_get(agent.forward_grasp_critic(observations, rng=key, train=False))) if hybrid else None
    )
    out = {}
    for index, (move, gripper) in enumerate(arms):
        for phase, mask in phases(expert, data["dones"], gripper).items():
            e, m = expert[mask][:, move], mode[mask][:, move]
            e_norm = np.linalg.norm(e, axis=1)
            moving = e_norm > MOVING
            cosine = (e * m).sum(1)[moving] / (e_norm * np.linalg.norm(m, axis=1) + 1e-9)[moving]
            row = {
                "steps": int(mask.sum()),
                "cosine_median": round(float(np.median(cosine)), 3) if moving.any() else None,
                "expert_z": round(float(e[:, 2].mean()), 3) if mask.any() else None,
                "policy_z": round(float(m[:, 2].mean()), 3) if mask.any() else None,
                "critic_prefers_expert": round(float(prefers_expert[mask].mean()), 3) if mask.any() else None,
            }
            if gripper is not None and mask.any():
                row["grasp_close"] = round(float((mode[mask][:, gripper] < -PRESSED).mean()), 3)
                row["grasp_open"] = round(float((mode[mask][:, gripper] > PRESSED).mean()), 3)
                margin = close_margin(grasp_qs, index, len(arms))
                row["close_margin_median"] = round(float(np.median(margin[mask])), 4)
            out[f"arm{index}/{phase}"] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="the run's checkpoint folder (with demo_buffer/ and buffer/)")
    parser.add_argument("--exp", default="usb_pickup_insertion_state")
    parser.add_argument(
        "--demos", type=Path, action="append", default=[], help="a demos file of record_demos.py that the run's "
        "learner loaded (train_rlpd.py --demo_path) into its demo buffer beside the interventions"
    )  # fmt: skip
    parser.add_argument("--steps", type=int, default=8000, help="learner steps (each cta_ratio updates)")
    parser.add_argument("--every", type=int, default=0, help="figures every this many steps (default steps / 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--state-scale", default="{}", help="JSON: {column: factor} applied to the stored state")
    parser.add_argument("--record", type=Path, help="write the figures as JSON here")
    parser.add_argument(
        "--checkpoint", type=int, default=0, help="the run's learner checkpoint of this step beside the expert's "
        "demos (imitation), instead of training"
    )  # fmt: skip
    args = parser.parse_args()
    every = args.every or max(1, args.steps // 20)
    agent_json = os.environ.get("HIL_SERL_AGENT") or "{}"  # the run's --agent (state_agent.configure reads it)

    import jax
    import state_agent
    from experiments.mappings import CONFIG_MAPPING
    from serl_launcher.agents.continuous.sac import SACAgent
    from serl_launcher.utils.train_utils import concat_batches

    state_agent.install()
    config = CONFIG_MAPPING[args.exp]()
    scale = {int(k): float(v) for k, v in json.loads(args.state_scale).items()}
    rng = np.random.default_rng(args.seed)
    if args.checkpoint:  # the expert's demos alone (not the run's kept buffers: nothing trains)
        if not args.demos:
            raise SystemExit("--checkpoint needs the expert's demos (--demos)")
        demo = scaled(transitions(args.demos), scale)
    else:
        kept = {kind: sorted((args.run / kind).glob("*.pkl")) for kind in ("demo_buffer", "buffer")}
        demo = scaled(transitions(kept["demo_buffer"] + args.demos), scale)  # as the learner's demo buffer
        online = scaled(transitions(kept["buffer"]), scale)
    sample = batch(demo, rng, 1)
    agent = state_agent.factory(config.setup_mode)(
        seed=args.seed,
        sample_obs=sample["observations"],
        sample_action=sample["actions"],
        image_keys=config.image_keys,
        encoder_type=config.encoder_type,
        discount=config.discount,
    )
    if args.checkpoint:
        from flax.training import checkpoints

        state = checkpoints.restore_checkpoint(str(args.run.resolve()), agent.state, step=args.checkpoint)
        figures = imitation(agent.replace(state=state), demo, args.seed)
        figures.update(kept_holds(agent.replace(state=state), args.run, scale, args.seed))
        print(json.dumps(figures), flush=True)
        if args.record:
            record = {"run": str(args.run), "exp": args.exp, "checkpoint": args.checkpoint, "agent":
                      json.loads(agent_json), "demos": [str(d) for d in args.demos], "imitation": figures}  # fmt: skip
            args.record.write_text(json.dumps(record, indent=1) + "\n")
        return
    hybrid = not isinstance(agent, SACAgent)
    critics = frozenset({"critic", "grasp_critic"} if hybrid else {"critic"})
    everything = critics | {"actor", "temperature"}
    half = config.batch_size // 2
    print(
        f"{args.exp}: {len(demo['rewards'])} demo and {len(online['rewards'])} online transitions; "
        f"agent {type(agent).__name__}, discount {config.discount}, {agent_json}, scale {scale}",
        flush=True,
    )
    figures, started = [], time.monotonic()
    for step in range(1, args.steps + 1):
        for _ in range(config.cta_ratio - 1):
            both = concat_batches(batch(online, rng, half), batch(demo, rng, half), axis=0)
            agent, _ = agent.update(both, networks_to_update=critics)
        both = concat_batches(batch(online, rng, half), batch(demo, rng, half), axis=0)
        agent, info = agent.update(both, networks_to_update=everything)
        if step % every == 0:
            info = jax.device_get(info)
            row = {"step": step, "seconds": round(time.monotonic() - started, 1)}
            for key in ("predicted_qs", "target_qs", "predicted_grasp_qs", "temperature", "entropy", "critic_loss"):
                found = [v for k, v in _flat(info) if k.endswith(key)]
                if found:
                    row[key] = round(float(found[0]), 4)
            figures.append(row)
            print(json.dumps(row), flush=True)
    # the trained agent beside the expert's own demos, as --checkpoint sets a run's checkpoint there
    final = imitation(agent, scaled(transitions(args.demos), scale), args.seed) if args.demos else {}
    final = {**final, **kept_holds(agent, args.run, scale, args.seed)} or None
    if final:
        print(json.dumps({"step": args.steps, "imitation": final}), flush=True)
    if args.record:
        record = {"run": str(args.run), "exp": args.exp, "agent": json.loads(agent_json), "discount": config.discount,
                  "scale": scale, "figures": figures, "imitation": final}  # fmt: skip
        args.record.write_text(json.dumps(record, indent=1) + "\n")


def _flat(tree, prefix=""):
    """(key path, value) of a nested dict of figures."""
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _flat(value, f"{prefix}{key}/")
        else:
            yield f"{prefix}{key}", value


if __name__ == "__main__":
    main()
