"""Evaluate a policy on an experiment's env, alone, scored by the simulator's ground truth (HIL-SERL's environment).

    python hil_serl_experiments/evaluate.py --exp_name=ram_insertion_state --policy=checkpoint \
        --checkpoint_path=runs/ram_insertion_state/first_run --steps=all --episodes=20 --out=eval.json

Each episode starts from the experiment's own reset (RAMEnv's random reset) and runs the policy alone: the env is
built without SpacemouseIntervention, so nothing but the policy moves the arm, until the ground truth says success
or the env ends the episode (MAX_EPISODE_LENGTH). `--seed` seeds the random resets (numpy's generator, which
RAMEnv draws them from) and the policy's samples: an evaluation with another seed plays other episodes, each
recorded with where it started (`start`: the hand's pose after the reset, x, y, z, qx, qy, qz, qw in the robot's
base frame). Policies:
- checkpoint: HIL-SERL's agent as train_rlpd.py builds it, restored from a learner checkpoint (each of --steps),
  actions sampled as train_rlpd.py's own evaluation does (--argmax: the distribution's mode);
- expert: the scripted expert's action each step (what it would send through the SpaceMouse), as a policy;
- zero: no motion.
Prints a line per episode and per policy, and writes the results as JSON (--out).

With `--serve` it evaluates on command: one JSON object a line on standard input, {"steps", "episodes", "seed",
"argmax", "out"} (each as the options of that name), answered by "[evaluate] done OUT" once OUT is written, until
standard input closes. The env and the agent are made once (the loop of scripts/hil_serl.py keeps one evaluator
through a run: each evaluation then costs its episodes only, not the 20 s of imports, env and compilation).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np
import state_agent
from experiments.mappings import CONFIG_MAPPING
from flax.training import checkpoints
from ground_truth import arms, chain, wrapper_of


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
    parser.add_argument("--serve", action="store_true", help="evaluate on commands from standard input (above)")
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


class CheckpointPolicy:
    """HIL-SERL's agent as train_rlpd.py builds it (its factory and arguments), made once; each checkpoint restored
    into it (same shapes: no recompilation)."""

    def __init__(self, config, env, seed: int) -> None:
        self.agent = state_agent.factory(config.setup_mode)(
            seed=seed,
            sample_obs=env.observation_space.sample(),
            sample_action=env.action_space.sample(),
            image_keys=config.image_keys,
            encoder_type=config.encoder_type,
            discount=config.discount,
        )

    def at(self, path: Path, step: int, argmax: bool, seed: int):
        """The policy of the checkpoint of `step`: its samples (or its mode) from `seed`. Each step it also notes
        how far the sample lies from the mode, per action dimension (`noise`: what the policy's spread costs)."""
        state = checkpoints.restore_checkpoint(str(path.resolve()), self.agent.state, step=step)
        agent, rng = self.agent.replace(state=state), jax.random.PRNGKey(seed)

        def act(observation):
            nonlocal rng
            rng, key = jax.random.split(rng)
            sample = np.asarray(jax.device_get(agent.sample_actions(observations=observation, seed=key)))
            mode = np.asarray(jax.device_get(agent.sample_actions(observations=observation, seed=key, argmax=True)))
            act.noise.append(np.abs(sample - mode))
            return mode if argmax else sample

        act.noise = []
        return act


GRIPPER_BUTTONS = {"close": -1.0, "open": 1.0}  # SpacemouseIntervention: the left button -1 (close), the right +1


def expert_policy(task: str, urls: list[str], action_size: int):
    """The scripted expert's action of each tick, taken where it would deflect the SpaceMouse and press its buttons
    (exactly what SpaceMouseExpert and SpacemouseIntervention would make of them), given to the env as the
    policy's: per arm (`urls`: its server, in the env's order), 6 values, or 7 with the gripper's (-1 close, 0 stay,
    1 open) where the policy drives the gripper (DualSpacemouseIntervention's order: left 6 + 1, right 6 + 1)."""
    from scripted_expert.experts import EXPERTS
    from scripted_expert.motion import action_of, axes_for

    expert = EXPERTS[task](urls, log=lambda message: None)
    per_arm, taken = action_size // len(expert.arms), {}

    def commander(index: int):
        def command(action=None, gripper=None) -> None:
            move = action_of(axes_for(np.zeros(6) if action is None else action))
            taken[index] = move if per_arm == 6 else np.append(move, GRIPPER_BUTTONS.get(gripper, 0.0))

        return command

    for index, arm in enumerate(expert.arms):
        arm.command = commander(index)

    def act(observation):
        taken.update({i: np.zeros(per_arm) for i in range(len(expert.arms))})
        truth = expert.truth()
        if not expert.finished(truth):
            for arm in expert.arms:
                arm.read()
            expert.tick(truth)
        expert.ticks += 1
        return np.concatenate([taken[i] for i in range(len(expert.arms))])

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


class Events:
    """What an episode did, step by step, in a few lines: each gripper's close and open (its reading moved by more
    than GRIPPER_MOVED, whoever pressed: "left gripper 0.99 -> 0.41" at the step it began) and what the object
    touches where that changed (the ground truth's `touching`): where a failure began, not only where it ended (a
    bar that left a closed hand slipped; one that left an opening hand was let go)."""

    GRIPPER_MOVED = 0.2  # of the gripper's reading (HIL-SERL's gripper_pose: 1 open, 0 closed)
    MOST = 60  # events kept per episode (a policy chattering with its gripper is said by the 60th)

    def __init__(self, env, task: dict) -> None:
        self.hands = arms(env)
        self.names = ["left ", "right "] if len(self.hands) == 2 else [""]
        self.grippers = [self.gripper(hand) for hand in self.hands]  # each reading at its last event
        self.moves: list[tuple[int, float] | None] = [None] * len(self.hands)  # its last move: event, from
        self.touching = task.get("values", {}).get("touching")
        self.events: list[list] = [[0, f"touching {self.touching}"]] if self.touching is not None else []

    @staticmethod
    def gripper(hand) -> float:
        return float(np.asarray(hand.curr_gripper_pos).reshape(-1)[0])

    def note(self, step: int, task: dict) -> None:
        for i, hand in enumerate(self.hands):
            now, last = self.gripper(hand), self.moves[i]
            if abs(now - self.grippers[i]) <= self.GRIPPER_MOVED:
                continue
            was = self.grippers[i]  # where its last move ended
            if last is not None and last[0] == len(self.events) - 1 and (now < was) == (was < last[1]):
                self.events[last[0]][1] = f"{self.names[i]}gripper {last[1]:.2f} -> {now:.2f}"  # still moving
            elif self.add(step, f"{self.names[i]}gripper {was:.2f} -> {now:.2f}"):
                self.moves[i] = (len(self.events) - 1, was)
            self.grippers[i] = now
        touching = task.get("values", {}).get("touching")
        if touching != self.touching:
            self.add(step, f"touching {touching}")
            self.touching = touching

    def add(self, step: int, what: str) -> bool:
        if len(self.events) >= self.MOST:
            return False
        self.events.append([step, what])
        return True


def poses(task: dict) -> dict[str, list[float]]:
    """Each object's pose in the ground truth's `task`, base frame ([x, y, z, qx, qy, qz, qw], rounded)."""
    return {k: [round(float(v), 5) for v in p] for k, p in task["objects_in_base"].items()}


def evaluate(env, act, episodes: int, name: str) -> dict:
    truth = wrapper_of(env, "GroundTruth")
    results = []
    for episode in range(episodes):
        observation, _ = env.reset()
        # the hand's pose at the start, base frame (two arms: the left's, then the right's, each in its base)
        start = [round(float(v), 5) for arm in arms(env) for v in arm.currpos]
        task = truth.get("task")
        objects = poses(task)
        events = Events(env, task)
        started, steps, done, truncated, info = time.monotonic(), 0, False, False, {}
        while not (done or truncated):
            observation, _, done, truncated, info = env.step(act(observation))
            steps += 1
            events.note(steps, truth.task)
        success = bool(info.get("succeed"))
        where = truth.get("task")  # where the episode left the object (GroundTruth's route to the simulator)
        noise = getattr(act, "noise", [])
        results.append(
            {
                "success": success,
                "start": start,
                "objects_at_start": objects,  # each object's pose at the start, base frame (as `start`)
                "objects_at_end": poses(where),  # ... and where the episode left it (a stall's pitch, a drop's place)
                "steps": steps,
                "seconds": round(time.monotonic() - started, 2),
                "detail": where.get("detail", ""),
                "values": where.get("values", {}),
                # the mean |sample - mode| per action dimension over the episode's steps (action units)
                **({"noise": [round(float(v), 4) for v in np.mean(noise[-steps:], axis=0)]} if noise else {}),
                "events": events.events,  # [step, what]: the grippers' moves and what the object touched (Events)
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


class Evaluator:
    """The experiment's env without a SpaceMouse (checked), and the policy to evaluate on it."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        state_agent.install()
        self.config = CONFIG_MAPPING[args.exp_name]()
        self.env = self.config.get_environment(fake_env=False, save_video=False, classifier=True, intervention=False)
        self.wrappers = chain(self.env)
        print(f"[evaluate] the env: {' > '.join(self.wrappers)}", flush=True)
        if any(w in ("SpacemouseIntervention", "DualSpacemouseIntervention") for w in self.wrappers):
            raise SystemExit("the evaluation's env reads a SpaceMouse: it would not be the policy alone")
        self.policy = CheckpointPolicy(self.config, self.env, args.seed) if args.policy == "checkpoint" else None

    def run(self, steps: str, episodes: int, seed: int, argmax: bool, out: Path | None) -> dict:
        args, truth = self.args, wrapper_of(self.env, "GroundTruth")
        experts, replaced, runs = experts_running(), truth.replaced, []
        print(f"[evaluate] scripted experts running: {len(experts)}", flush=True)
        results = {"exp_name": args.exp_name, "argmax": argmax, "seed": seed, "runs": runs,
                   "wrappers": self.wrappers, "experts_running": experts}  # fmt: skip
        if self.policy is not None:
            if args.checkpoint_path is None:
                raise SystemExit("--policy=checkpoint needs --checkpoint_path")
            for step in checkpoint_steps(args.checkpoint_path, steps):
                np.random.seed(seed)  # the same episodes for each checkpoint of this evaluation
                act = self.policy.at(args.checkpoint_path, step, argmax, seed)
                runs.append({"step": step, **evaluate(self.env, act, episodes, f"checkpoint_{step}")})
                if out:  # as it goes: an evaluation stopped early keeps what it measured
                    out.write_text(json.dumps(results, indent=1) + "\n")
        else:
            np.random.seed(seed)
            size = self.env.action_space.shape[-1]
            urls = [arm.url for arm in arms(self.env)]
            act = expert_policy(args.expert_task, urls, size) if args.policy == "expert" else (lambda _: np.zeros(size))
            runs.append(evaluate(self.env, act, episodes, args.policy))
        results["replaced"] = truth.replaced - replaced
        print(f"[evaluate] the object was put back {results['replaced']} time(s)", flush=True)
        if out:
            out.write_text(json.dumps(results, indent=1) + "\n")
        return results


def main() -> None:
    args = parse()
    evaluator = Evaluator(args)
    if not args.serve:
        evaluator.run(args.steps, args.episodes, args.seed, args.argmax, args.out)
        return
    print("[evaluate] ready", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        out = Path(command["out"])
        evaluator.run(str(command.get("steps", "latest")), int(command.get("episodes", args.episodes)),
                      int(command.get("seed", args.seed)), bool(command.get("argmax", False)), out)  # fmt: skip
        print(f"[evaluate] done {out}", flush=True)


if __name__ == "__main__":
    main()
