"""The compliance parameters of `/cartesian_impedance_controller` (contract.md section 3).

Names, defaults and ranges are those of the original dynamic-reconfigure set; this table is the
single source for the ROS 2 parameter declarations, the controller's defaults and docs/parameters.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ParameterSpec:
    name: str
    default: float
    low: float
    high: float
    description: str


def _clips(kind: str, default: float, unit: str) -> list[ParameterSpec]:
    specs = []
    for sign, side in (("", "positive"), ("neg_", "negative")):
        for axis in "xyz":
            specs.append(
                ParameterSpec(
                    f"{kind}_clip_{sign}{axis}",
                    default,
                    0.0,
                    0.1,
                    f"Clip of the {side} {kind} error along {axis} [{unit}]",
                )
            )
    return specs


COMPLIANCE_PARAMETERS: tuple[ParameterSpec, ...] = (
    ParameterSpec("translational_stiffness", 2000.0, 0.0, 6000.0, "Cartesian translational stiffness [N/m]"),
    ParameterSpec("translational_damping", 89.0, 0.0, 400.0, "Cartesian translational damping [N s/m]"),
    ParameterSpec("rotational_stiffness", 150.0, 0.0, 300.0, "Cartesian rotational stiffness [N m/rad]"),
    ParameterSpec("rotational_damping", 7.0, 0.0, 30.0, "Cartesian rotational damping [N m s/rad]"),
    ParameterSpec("nullspace_stiffness", 0.2, 0.0, 100.0, "Stiffness of the joint-space null-space task [N m/rad]"),
    ParameterSpec(
        "joint1_nullspace_stiffness", 100.0, 0.0, 100.0, "Extra null-space stiffness factor on joint 1 [N m/rad]"
    ),
    *_clips("translational", 0.01, "m"),
    *_clips("rotational", 0.05, "rad"),
    ParameterSpec("translational_Ki", 0.0, 0.0, 100.0, "Integral gain of the translational error"),
    ParameterSpec("rotational_Ki", 0.0, 0.0, 100.0, "Integral gain of the rotational error"),
)

DEFAULT_COMPLIANCE: dict[str, float] = {p.name: p.default for p in COMPLIANCE_PARAMETERS}
