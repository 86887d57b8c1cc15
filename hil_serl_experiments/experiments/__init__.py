"""HIL-SERL's `experiments` package with this repository's experiments in front of it.

HIL-SERL's scripts import `experiments.mappings` from the examples folder beside them. Run through
hil_serl_experiments/launch.py (or evaluate.py), this folder comes first on sys.path, so `experiments` is this
package; its path goes on into HIL-SERL's own examples/experiments ($HIL_SERL_DIR, else ../shared/hil-serl), so that
`experiments.config`, `experiments.ram_insertion.config` and the others are HIL-SERL's, unaltered.
"""

import os
from pathlib import Path

HIL_SERL_DIR = Path(os.environ.get("HIL_SERL_DIR") or Path(__file__).resolve().parents[3] / "shared" / "hil-serl")
HIL_SERL_EXPERIMENTS = HIL_SERL_DIR / "examples" / "experiments"
if not (HIL_SERL_EXPERIMENTS / "mappings.py").is_file():
    raise ImportError(f"no HIL-SERL checkout at {HIL_SERL_DIR} (set HIL_SERL_DIR): its examples/experiments is needed")
__path__.append(str(HIL_SERL_EXPERIMENTS))
