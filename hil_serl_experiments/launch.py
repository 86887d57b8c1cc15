"""Run one of HIL-SERL's scripts, unaltered, with this repository's experiments (runs in HIL-SERL's environment).

    python hil_serl_experiments/launch.py HIL_SERL/examples/train_rlpd.py --exp_name=ram_insertion_state --learner ...

Python puts this file's folder first on sys.path, so HIL-SERL's `from experiments.mappings import CONFIG_MAPPING`
finds this repository's `experiments` package, which goes on into HIL-SERL's own (experiments/__init__.py).
serl_launcher's agent and buffer factories learn to build for an experiment without image keys
(state_agent.py) before the script binds them, the learner's figures are kept where
$HIL_SERL_METRICS names a file (metrics.py), and each of several actors sends under store names of its own
(actors.py). Then the script runs as `python SCRIPT ...` would run it.
"""

import runpy
import sys

import actors
import metrics
import state_agent

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    state_agent.install()
    metrics.install()
    actors.install()
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
