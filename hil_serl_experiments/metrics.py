"""The learner's own figures, kept where wandb is off (runs in HIL-SERL's environment).

train_rlpd.py's learner logs, through serl_launcher's WandBLogger, SAC's update info every `log_period` learner
steps (critic loss, predicted and target Q, temperature, the policy's entropy, ...), its timers, and what the
actor sends it (each episode's return, length and interventions; the actor's own timers). With `--debug`
(no wandb account) WandBLogger hands all of it to a disabled wandb run, where it is lost.

`install()` makes WandBLogger.log also append each record, its scalars flattened, as one JSON line to the file
named by $HIL_SERL_METRICS (nothing without it), with the learner step and the wall-clock time: what the loop
summarises (SAC's temperature and entropy over the run, the critic's values, the actor's step time).
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

VARIABLE = "HIL_SERL_METRICS"


def scalars(data: dict, prefix: str = "") -> dict[str, float]:
    """The numbers of a nested dict, flattened with '/' (as wandb shows them); arrays of one value included."""
    out: dict[str, float] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(scalars(value, f"{name}/"))
            continue
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            continue
        if array.size == 1 and np.isfinite(array).all():
            out[name] = float(array.reshape(()))
    return out


def install() -> None:
    path = os.environ.get(VARIABLE)
    if not path:
        return
    from serl_launcher.common.wandb import WandBLogger

    original = WandBLogger.log
    if getattr(original, "kept", False):
        return
    out = open(path, "a", buffering=1)  # noqa: SIM115 (open for the process's life, a line at a time)

    def log(self, data: dict, step: int | None = None):
        record = {"step": step, "time": round(time.time(), 3), **scalars(data)}
        out.write(json.dumps(record) + "\n")
        return original(self, data, step=step)

    log.kept = True
    WandBLogger.log = log
