"""Evaluate a policy on an experiment's env, alone, scored by the simulator's ground truth (HIL-SERL's environment).

    python hil_serl_experiments/evaluate.py --exp_name=ram_insertion_state --policy=checkpoint \
        --checkpoint_path=runs/ram_insertion_state/first_run --steps=all --episodes=20 --out=eval.json

Each episode starts from the experiment's own reset (RAMEnv's random reset) and runs the policy alone: the env is
built without SpacemouseIntervention, so nothing but the policy moves the arm, until the ground truth says success
or the env ends the episode (MAX_EPISODE_LENGTH). `--seed` seeds the random resets (numpy's generator, which
RAMEnv draws them from) and the policy's samples: an evaluation with another seed plays other episodes, each
recorded with where it started (`start`: the hand's offset from TARGET_POSE, x, y, z in m and its rotation vector
in rad, at the first observation). Policies:
- checkpoint: HIL-SERL's agent as train_rlpd.py builds it, restored from a learner checkpoint (each of --steps),
  actions sampled as train_rlpd.py's own evaluation does (--argmax: the distribution's mode);
- expert: the scripted expert's action each step (what it would send through the SpaceMouse), as a policy;
- zero: no motion.
Prints a line per episode and per policy, and writes the results as JSON (--out).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import jax
import numpy as np
import state_agent
from experiments.mappings import CONFIG_MAPPING
from flax.training import checkpoints
from ground_truth import chain, wrapper_of

# the state vector's tcp_pose (relative to TARGET_POSE: position, rotation vector), SERLObsWrapper's flattening in
# gymnasium's sorted key order: tcp_force (3), tcp_pose (6), tcp_torque (3), tcp_vel (6)
START = slice(3, 9)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hil_serl_experiments/evaluate.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--exp_name", default="ram_insertion_state", choices=sorted(CONFIG_MAPPING))
    parser.add_argument("--policy", choices=("checkpoint", "expert", "zero"), default="checkpoint")
    parser.add_argument("--checkpoint_path", type=Path, help="checkpoint: the learner's checkpoint folder")
    parser.add_argument("--steps", default="latest", help="checkpoint: learner steps, comma-separated, 'all', 'latest'")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--argmax", action="store_true", help="checkpoint: the mode instead of a sample")
    parser.add_argument("--expert_task", default="ram_insertion", help="expert: its task (scripted_expert --task)")
    parser.add_argument("--seed", type=int, default=0, help="the random resets' and the policy's samples' seed")
    parser.add_argument("--out", type=Path, help="the results as JSON")
    return parser.parse_args()


def checkpoint_steps(path: Path, which: str) -> list[int]:
    found = sorted(int(p.name.split("_")[-1]) for p in path.glob("checkpoint_*") if p.name.split("_")[-1].isdigit())
    if not found:
        raise SystemExit(f"no checkpoint_* in {path}")
    if which == "all":
        return found
    if which == "latest":
        return found[-1:]
    steps = [int(s) for s in which.split(",")]
    missing = sorted(set(steps) - set(found))
    if missing:
        raise SystemExit(f"no checkpoint_{missing[0]} in {path} (there: {found})")
    return steps


def checkpoint_policy(config, env, path: Path, step: int, argmax: bool, seed: int):
    """HIL-SERL's agent (train_rlpd.py's factory and arguments), restored from the checkpoint of `step`."""
    from serl_launcher.utils import launcher

    agent = launcher.make_sac_pixel_agent(
        seed=seed,
        sample_obs=env.observation_space.sample(),
        sample_action=env.action_space.sample(),
        image_keys=config.image_keys,
        encoder_type=config.encoder_type,
        discount=config.discount,
    )
    agent = agent.replace(state=checkpoints.restore_checkpoint(str(path.resolve()), agent.state, step=step))
    rng = jax.random.PRNGKey(seed)

    def act(observation):
        nonlocal rng
        rng, key = jax.random.split(rng)
        return np.asarray(jax.device_get(agent.sample_actions(observations=observation, seed=key, argmax=argmax)))

    return act


def expert_policy(task: str):
    """The scripted expert's action of each tick, taken where it would deflect the SpaceMouse (exactly what
    SpaceMouseExpert would make of it), given to the env as the policy's."""
    from scripted_expert.experts import EXPERTS
    from scripted_expert.motion import action_of, axes_for

    expert = EXPERTS[task]([os.environ.get("FRANKA_SIM_URL", "http://127.0.0.2:5000")], log=lambda message: None)
    arm, taken = expert.arms[0], {}

    def command(action=None, gripper=None) -> None:
        taken["action"] = action_of(axes_for(np.zeros(6) if action is None else action))

    arm.command = command

    def act(observation):
        taken["action"] = np.zeros(6)
        truth = expert.truth()
        if not expert.finished(truth):
            arm.read()
            expert.tick(truth)
        return taken["action"]

    return act


def experts_running() -> list[int]:
    """The scripted experts running on this machine (not stopped: a loop stops its expert while it evaluates)."""
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if b"scripted_expert" in command and state not in ("T", "t", "Z"):
            running.append(int(stat.parent.name))
    return running


def evaluate(env, act, episodes: int, name: str) -> dict:
    truth = wrapper_of(env, "GroundTruth")
    results = []
    for episode in range(episodes):
        observation, _ = env.reset()
        start = [round(float(v), 5) for v in np.asarray(observation["state"]).reshape(-1)[START]]
        started, steps, done, truncated, info = time.monotonic(), 0, False, False, {}
        while not (done or truncated):
            observation, _, done, truncated, info = env.step(act(observation))
            steps += 1
        success = bool(info.get("succeed"))
        where = truth.get("task")  # where the episode left the stick (GroundTruth's route to the simulator)
        results.append(
            {
                "success": success,
                "start": start,
                "steps": steps,
                "seconds": round(time.monotonic() - started, 2),
                "detail": where.get("detail", ""),
                "values": where.get("values", {}),
            }
        )
        wins = sum(r["success"] for r in results)
        print(f"[evaluate] {name} episode {episode + 1}: {'success' if success else 'no success'} after {steps} steps "
              f"({wins}/{episode + 1}): {results[-1]['detail']}", flush=True)  # fmt: skip
    wins = sum(r["success"] for r in results)
    rate = wins / max(1, episodes)
    print(f"[evaluate] {name}: success rate {rate:.2f} ({wins}/{episodes})", flush=True)
    period = wrapper_of(env, "StepPeriod")
    return {"policy": name, "success_rate": rate, "episodes": results, "pace": period.pace() if period else {}}


def main() -> None:
    args = parse()
    state_agent.install()
    config = CONFIG_MAPPING[args.exp_name]()
    env = config.get_environment(fake_env=False, save_video=False, classifier=True, intervention=False)
    wrappers, experts = chain(env), experts_running()
    print(f"[evaluate] the env: {' > '.join(wrappers)}; scripted experts running: {len(experts)}", flush=True)
    if any(w in ("SpacemouseIntervention", "DualSpacemouseIntervention") for w in wrappers):
        raise SystemExit("the evaluation's env reads a SpaceMouse: it would not be the policy alone")
    runs = []
    if args.policy == "checkpoint":
        if args.checkpoint_path is None:
            raise SystemExit("--policy=checkpoint needs --checkpoint_path")
        for step in checkpoint_steps(args.checkpoint_path, args.steps):
            np.random.seed(args.seed)  # the same episodes for each checkpoint of this evaluation
            act = checkpoint_policy(config, env, args.checkpoint_path, step, args.argmax, args.seed)
            runs.append({"step": step, **evaluate(env, act, args.episodes, f"checkpoint_{step}")})
            if args.out:  # as it goes: an evaluation stopped early keeps what it measured
                partial = {"exp_name": args.exp_name, "argmax": args.argmax, "runs": runs}
                args.out.write_text(json.dumps(partial, indent=1) + "\n")
    else:
        np.random.seed(args.seed)
        act = expert_policy(args.expert_task) if args.policy == "expert" else (lambda observation: np.zeros(6))
        runs.append(evaluate(env, act, args.episodes, args.policy))
    replaced = wrapper_of(env, "GroundTruth").replaced
    print(f"[evaluate] the held object was put back in the hand {replaced} time(s)", flush=True)
    if args.out:
        results = {"exp_name": args.exp_name, "argmax": args.argmax, "seed": args.seed, "runs": runs}
        results.update(replaced=replaced, wrappers=wrappers, experts_running=experts)
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
