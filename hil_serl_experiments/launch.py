"""Run one of HIL-SERL's scripts, unaltered, with this repository's experiments (runs in HIL-SERL's environment).

    python hil_serl_experiments/launch.py HIL_SERL/examples/train_rlpd.py --exp_name=ram_insertion_state --learner ...

Python puts this file's folder first on sys.path, so HIL-SERL's `from experiments.mappings import CONFIG_MAPPING`
finds this repository's `experiments` package, which goes on into HIL-SERL's own (experiments/__init__.py).
serl_launcher's agent and buffer factories learn to build for an experiment without image keys
(state_agent.py) before the script binds them, the learner's figures are kept where
$HIL_SERL_METRICS names a file (metrics.py), and each of several actors sends under store names of its own
(actors.py). Then the script runs as `python SCRIPT ...` would run it, with one difference: an exception that ends
the script's main thread ends the process (status 1, its traceback printed). Python would otherwise wait for the
script's other threads, and train_rlpd.py's actor leaves non-daemon ones: an actor whose env raised (FrankaEnv's
`ps["pose"]` on a 503 answer) stayed alive, dead, where the runner's supervisor restarts what ends. The
processes the script forked (HIL-SERL's SpaceMouse reader and its multiprocessing Manager) are ended first, as
Python's exit would have ended them.
"""

import multiprocessing
import os
import runpy
import sys
import traceback

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
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except Exception:  # (not SystemExit, not KeyboardInterrupt: those end as the script has them end)
        traceback.print_exc()
        children = multiprocessing.active_children()  # os._exit skips the atexit that ends them (the
        for child in children:  # SpaceMouse reader and its Manager: spacemouse_expert.py)
            child.terminate()
        for child in children:
            child.join(2.0)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
