"""Learning curves of `scripts/hil_serl.py TASK loop` runs (HIL-SERL's environment: numpy, matplotlib).

    python hil_serl_experiments/curve.py LOGS/loop.json              -> LOGS/learning_curve.png
    python hil_serl_experiments/curve.py --out CURVE.png A.json B.json ...   (several runs in one picture)

Each run's record (scripts/learning_record.py) gives, against training minutes from the first demo (the loop's
evaluations not counted) and against the actor's env steps:
- success of the policy alone on selection episodes at each evaluated checkpoint (dots, with the 95 % interval),
  and on fresh episodes where a checkpoint was confirmed (squares; the named checkpoint's is filled);
- the intervention rate: the share of the actor's steps that the expert drove, per bin of training minutes;
- (one run) SAC's temperature and the policy's entropy, from the learner's metrics.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def env_steps_at(training: list[dict]) -> tuple[list[float], list[float]]:
    """(bin end minutes, cumulative env steps at them)."""
    ends = [t["minutes"][1] for t in training]
    return ends, list(np.cumsum([t["env_steps"] for t in training]))


def error_bars(points: list[dict]) -> np.ndarray:
    rates = np.array([p["rate"] for p in points])
    low = np.array([p["interval"][0] for p in points])
    high = np.array([p["interval"][1] for p in points])
    return 100 * np.vstack([rates - low, high - rates])


def draw_run(axes, record: dict, color: str, label: str, detail: bool) -> None:
    training = record.get("training", [])
    selection = [c for c in record.get("checkpoints", []) if c.get("episodes")]
    fresh = record.get("confirmations", [])
    named = (record.get("named") or {}).get("step")
    for ax, x in zip(axes, ("minutes", "env_steps"), strict=True):
        if training:
            middle = [(t["minutes"][0] + t["minutes"][1]) / 2 for t in training]
            steps = env_steps_at(training)[1]
            acting = [(at, 100 * t["intervention_rate"])  # bins where the actor stepped (none after the training)
                      for at, t in zip(middle if x == "minutes" else steps, training, strict=True)
                      if t["intervention_rate"] is not None]  # fmt: skip
            ax.plot([at for at, _ in acting], [rate for _, rate in acting], "--", color=color, alpha=0.7,
                    label=f"{label}intervention rate (training)" if detail or not label else None)  # fmt: skip
        if selection:
            ax.errorbar([c[x] for c in selection], [100 * c["rate"] for c in selection], yerr=error_bars(selection),
                        fmt="o-", color=color, ms=4, capsize=2, lw=1.2,
                        label=f"{label}policy alone, {len(selection[0]['episodes'])} selection episodes")  # fmt: skip
        if fresh:
            for c in fresh:
                filled = c["step"] == named
                ax.errorbar([c[x]], [100 * c["rate"]], yerr=error_bars([c]), fmt="s", ms=8 if filled else 6,
                            color=color, mfc=color if filled else "white", capsize=3)  # fmt: skip
        ax.set_ylim(-3, 103)
        ax.grid(alpha=0.3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="the PNG (default: learning_curve.png beside the one record)")
    args = parser.parse_args()
    records = [json.loads(p.read_text()) for p in args.records]
    one = len(records) == 1
    rows = 2 if one else 1
    figure, grid = plt.subplots(rows, 2, figsize=(12, 4.3 * rows), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, record in enumerate(records):
        label = "" if one else f"seed {record.get('seed')}: "
        draw_run(grid[0], record, colors[i % len(colors)], label, one)
    grid[0][0].set_xlabel("training minutes from the first demo (evaluations not counted)")
    grid[0][1].set_xlabel("actor env steps")
    grid[0][0].set_ylabel("%")
    fresh_label = "fresh episodes (confirmation; filled: the named one)"
    grid[0][0].plot([], [], "s", color="gray", mfc="white", label=fresh_label)
    grid[0][0].legend(loc="center right", fontsize=7)
    first = records[0]
    if one:
        training = [t for t in first.get("training", []) if t.get("temperature") is not None]
        minutes = [(t["minutes"][0] + t["minutes"][1]) / 2 for t in training]
        ax = grid[1][0]
        ax.semilogy(minutes, [t["temperature"] for t in training], ".-", color="tab:red")
        ax.set_ylabel("SAC temperature", color="tab:red")
        twin = ax.twinx()
        twin.plot(minutes, [t["entropy"] for t in training], ".-", color="tab:purple")
        twin.set_ylabel("policy entropy (nats)", color="tab:purple")
        ax.set_xlabel("training minutes")
        ax.grid(alpha=0.3)
        ax = grid[1][1]
        ax.plot(minutes, [t["q"] for t in training], ".-", color="tab:green", label="predicted Q (batch mean)")
        ax.plot(minutes, [t["critic_loss"] for t in training], ".-", color="tab:gray", label="critic loss")
        ax.set_xlabel("training minutes")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fresh = [r.get("fresh") for r in records if r.get("fresh")]
    told = "; ".join(f"{f['successes']}/{f['episodes']}" for f in fresh) or "not yet"
    rate = first.get("learner_steps_per_s")
    figure.suptitle(
        f"{first.get('experiment')}: HIL-SERL's train_rlpd.py on the simulator, {len(records)} run(s); the named "
        f"checkpoint on fresh episodes: {told}" + (f"; learner {rate} steps/s" if one and rate else ""),
        fontsize=10,
    )
    figure.tight_layout()
    out = args.out or args.records[0].with_name("learning_curve.png")
    figure.savefig(out, dpi=100)
    print(f"learning curve: {out}")


if __name__ == "__main__":
    main()
