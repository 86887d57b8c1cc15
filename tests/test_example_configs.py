"""The values of HIL-SERL's example configs that the tests aim with (tests/example_configs.py) are HIL-SERL's own:
read from its configs, unaltered, in its environment (tests/hil_serl.py)."""

from __future__ import annotations

import hil_serl
import numpy as np
from example_configs import RAM_INSERTION, USB_PICKUP_INSERTION

KEYS = ("TARGET_POSE", "RESET_POSE", "ACTION_SCALE", "ABS_POSE_LIMIT_LOW", "ABS_POSE_LIMIT_HIGH", "RANDOM_RESET",
        "RANDOM_XY_RANGE", "RANDOM_RZ_RANGE", "COMPLIANCE_PARAM", "PRECISION_PARAM")  # fmt: skip
READ = """
import json, numpy as np
from experiments.{name}.config import EnvConfig
plain = lambda v: np.asarray(v).tolist() if isinstance(v, (np.ndarray, tuple)) else v
print("@@ " + json.dumps({{k: plain(getattr(EnvConfig, k)) for k in {keys}}}))
"""


@hil_serl.may_build
def test_the_values_the_tests_aim_with_are_hil_serls():
    for name, ours in (("ram_insertion", RAM_INSERTION), ("usb_pickup_insertion", USB_PICKUP_INSERTION)):
        env = {f"FRANKA_SIM_{d}": "1" for d in ("CAMERAS", "SPACEMOUSE", "KEYS")}
        code, output = hil_serl.run(READ.format(name=name, keys=KEYS), env=env, cwd=hil_serl.EXAMPLES)
        assert code == 0, output
        theirs = hil_serl.reported(output)
        for ours_value, key in (
            (ours.target_pose, "TARGET_POSE"),
            (ours.reset_pose, "RESET_POSE"),
            (ours.action_scale, "ACTION_SCALE"),
            (ours.abs_pose_limit_low, "ABS_POSE_LIMIT_LOW"),
            (ours.abs_pose_limit_high, "ABS_POSE_LIMIT_HIGH"),
            (ours.random_xy_range, "RANDOM_XY_RANGE"),
            (ours.random_rz_range, "RANDOM_RZ_RANGE"),
        ):
            np.testing.assert_allclose(ours_value, theirs[key], err_msg=f"{name} {key}")
        assert ours.random_reset == theirs["RANDOM_RESET"], name
        assert ours.compliance_param == theirs["COMPLIANCE_PARAM"], name
        assert ours.precision_param == theirs["PRECISION_PARAM"], name
