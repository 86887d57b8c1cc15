"""The serl compliance parameters (contract.md section 3) as the parameters of a real Cartesian controller.

HIL-SERL sets the compliance of the original controller by name (`/update_param`). A ROS 2 Cartesian
impedance controller for franka_ros2 has parameters of its own; a map says which of its parameters
each serl parameter sets, one `serl_name=controller_parameter` entry per pair (a serl name can set
several, e.g. one stiffness per axis). Where several serl parameters set one controller parameter
(the controller has one symmetric error clip where serl has a positive and a negative one), the
smallest value is sent: the tighter limit wins. A serl parameter with no entry has no counterpart in
that controller and is not forwarded (the adapter says so when it is set to a non-default value).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from isaac_franka_bridge.controller.parameters import COMPLIANCE_PARAMETERS

SERL_NAMES = tuple(p.name for p in COMPLIANCE_PARAMETERS)
SERL_DEFAULTS = {p.name: p.default for p in COMPLIANCE_PARAMETERS}


def parse_map(entries: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """{serl name: controller parameters} of `serl_name=controller_parameter` entries; ValueError names a bad one."""
    mapping: dict[str, list[str]] = {}
    for entry in entries:
        serl, sep, target = (part.strip() for part in entry.partition("="))
        if not sep or not serl or not target:
            raise ValueError(f"compliance_map entry {entry!r} is not serl_name=controller_parameter")
        if serl not in SERL_NAMES:
            raise ValueError(f"compliance_map entry {entry!r}: {serl!r} is no serl compliance parameter")
        if target not in mapping.setdefault(serl, []):
            mapping[serl].append(target)
    return {serl: tuple(targets) for serl, targets in mapping.items()}


def unmapped(mapping: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(name for name in SERL_NAMES if name not in mapping)


def controller_values(serl_values: Mapping[str, float], mapping: Mapping[str, tuple[str, ...]]) -> dict[str, float]:
    """The controller's parameter values for the serl values (smallest where several set one)."""
    values: dict[str, float] = {}
    for serl, targets in mapping.items():
        if serl not in serl_values:
            continue
        for target in targets:
            value = float(serl_values[serl])
            values[target] = min(values[target], value) if target in values else value
    return values


def clamp(
    values: Mapping[str, float], ranges: Mapping[str, tuple[float, float] | None]
) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Values clamped into the controller's declared ranges; also {name: (sent, applied)} of those clamped."""
    applied, clamped = {}, {}
    for name, value in values.items():
        bounds = ranges.get(name)
        result = value if bounds is None else min(max(value, bounds[0]), bounds[1])
        applied[name] = result
        if result != value:
            clamped[name] = (value, result)
    return applied, clamped


# crisp_controllers' CartesianController (github.com/utiasDSL/crisp_controllers): stiffness and damping per
# axis, one symmetric error clip per axis (limit_error), a null-space stiffness; no integral term and no
# separate joint-1 null-space stiffness. The default of real.launch.py (config/real.yaml says the same).
CRISP_MAP = tuple(
    [f"translational_stiffness=task.k_pos_{a}" for a in "xyz"]
    + [f"translational_damping=task.d_pos_{a}" for a in "xyz"]
    + [f"rotational_stiffness=task.k_rot_{a}" for a in "xyz"]
    + [f"rotational_damping=task.d_rot_{a}" for a in "xyz"]
    + ["nullspace_stiffness=nullspace.stiffness"]
    + [f"translational_clip_{a}=task.error_clip.{a}" for a in "xyz"]
    + [f"translational_clip_neg_{a}=task.error_clip.{a}" for a in "xyz"]
    + [f"rotational_clip_{a}=task.error_clip.r{a}" for a in "xyz"]
    + [f"rotational_clip_neg_{a}=task.error_clip.r{a}" for a in "xyz"]
)
