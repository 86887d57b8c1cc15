"""The learning curve of a `scripts/hil_serl.py TASK loop` run (HIL-SERL's environment: numpy, matplotlib).

    python hil_serl_experiments/curve.py LOGS/loop.json          -> LOGS/learning_curve.png, LOGS/curve.json

- success rate: the evaluations of the learner's checkpoints (the policy alone, 20 episodes, ground truth), each
  at the minute since the first demo and the actor's env step at which the learner wrote that checkpoint;
- intervention rate: the share of the actor's steps that the expert drove, and the episodes that ended in
  success, in each of train_rlpd.py's buffer dumps (buffer/ and demo_buffer/transitions_STEP.pkl, every
  buffer_period actor steps), at the dump's step and the minute it was written.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def training_windows(checkpoint_path: Path, first_wall: float) -> list[dict]:
    """One entry per buffer dump of the actor: its steps, how many the expert drove, its episodes and successes."""
    windows = []
    dumps = sorted((checkpoint_path / "buffer").glob("transitions_*.pkl"), key=lambda p: int(p.stem.split("_")[-1]))
    for dump in dumps:
        step = int(dump.stem.split("_")[-1])
        transitions = pickle.loads(dump.read_bytes())
        intervened = checkpoint_path / "demo_buffer" / dump.name
        driven = len(pickle.loads(intervened.read_bytes())) if intervened.is_file() else 0
        episodes = sum(bool(t["dones"]) for t in transitions)
        successes = sum(bool(t["dones"]) and float(t["rewards"]) > 0 for t in transitions)
        windows.append(
            {
                "env_step": step,
                "minutes": round((dump.stat().st_mtime - first_wall) / 60.0, 2),
                "steps": len(transitions),
                "intervention_rate": driven / len(transitions) if transitions else 0.0,
                "episodes": episodes,
                "successes": successes,
            }
        )
    return windows


def main() -> None:
    loop_path = Path(sys.argv[1])
    loop = json.loads(loop_path.read_text())
    windows = training_windows(Path(loop["checkpoint_path"]), loop["first_demo_wall"])
    evaluations = [
        {k: e.get(k) for k in ("step", "minutes", "env_steps", "success_rate")}
        for e in loop["evaluation"]
        if e.get("minutes") is not None
    ]
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for ax, x_eval, x_train, label in (
        (axes[0], "env_steps", "env_step", "actor env steps"),
        (axes[1], "minutes", "minutes", "wall-clock minutes since the first demo"),
    ):
        ax.plot(
            [w[x_train] for w in windows],
            [100 * w["intervention_rate"] for w in windows],
            ".-",
            color="tab:orange",
            label="intervention rate, training (% of actor steps the expert drove)",
        )
        ax.plot(
            [e[x_eval] for e in evaluations],
            [100 * e["success_rate"] for e in evaluations],
            "o-",
            color="tab:blue",
            label=f"success rate, evaluation (policy alone, {len(loop['evaluation'][0]['episodes'])} episodes)",
        )
        ax.set_xlabel(label)
        ax.set_ylim(-3, 103)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("%")
    axes[0].legend(loc="center right", fontsize=8)
    train = loop["train"]
    figure.suptitle(
        f"{loop['task']}: HIL-SERL's train_rlpd.py on the simulator ({loop['demos']} demos, "
        f"{train['env_steps_per_s']:.1f} env steps/s, {train['learner_updates_per_s']:.1f} learner steps/s)",
        fontsize=10,
    )
    figure.tight_layout()
    png = loop_path.with_name("learning_curve.png")
    figure.savefig(png, dpi=110)
    points = {"evaluation": evaluations, "training": windows}
    loop_path.with_name("curve.json").write_text(json.dumps(points, indent=1) + "\n")
    print(f"learning curve: {png} (points: {loop_path.with_name('curve.json')})")
    for e in evaluations:
        print(
            f"checkpoint {e['step']}: {100 * e['success_rate']:.0f} % at {e['minutes']:.1f} min, "
            f"{e['env_steps']} env steps"
        )


if __name__ == "__main__":
    main()
