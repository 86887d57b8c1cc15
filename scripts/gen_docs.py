"""Writes docs/parameters.md from the parameter table (tests/test_docs.py checks it is current).

scripts/run.sh python scripts/gen_docs.py
"""

from pathlib import Path

from isaac_franka_bridge.controller import COMPLIANCE_PARAMETERS

PATH = Path(__file__).resolve().parent.parent / "docs" / "parameters.md"


def parameters_md() -> str:
    rows = "\n".join(
        f"| `{p.name}` | {p.default:g} | {p.low:g} .. {p.high:g} | {p.description} |" for p in COMPLIANCE_PARAMETERS
    )
    return f"""# Compliance parameters of `/cartesian_impedance_controller`

Generated from `isaac_franka_bridge/controller/parameters.py` by `scripts/gen_docs.py`; do not edit.

The names, defaults and ranges of the original controller's dynamic-reconfigure set, declared as
ROS 2 double parameters with descriptors, so `ros2 param describe` and rqt_reconfigure show the
ranges and refuse values outside them. Change them at run time with any of:

```
ros2 param set /cartesian_impedance_controller translational_stiffness 3000.0
curl -X POST http://127.0.0.1:5000/update_param -H 'Content-Type: application/json' \\
     -d '{{"translational_stiffness": 3000, "rotational_stiffness": 200}}'
```

`/update_param` does what the original server's dynamic_reconfigure client did: each value is
converted as `float()` converts it, an out-of-range value is clamped into its range (logged, and
named in the `X-Clamped-Parameters` header), and the whole set is applied at once; an unknown name or
a value `float()` refuses answers 400 and changes nothing. `ros2 param set` outside a range is
refused, as ROS 2 refuses it. Gains and the equilibrium are filtered toward new values (factor
0.005 per 1 ms tick); clips apply at once.

| name | default | range | meaning |
|---|---|---|---|
{rows}
"""


if __name__ == "__main__":
    PATH.write_text(parameters_md())
    print(f"wrote {PATH}")
