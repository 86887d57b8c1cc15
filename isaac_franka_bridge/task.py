"""Ground truth of a task: whether it succeeded, computed from the physics the simulator sees.

Pure functions of the objects' poses and of what touches what (names of the world's parts: an
object's name, `table`, `<prefix>gripper`, `<prefix>arm`), so every backend and the tests share
them. The stock env never sees this; researchers evaluate policies with it and the scripted expert
drives from it (published on ROS 2 as /task/* and served as GET /task).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from .world import SuccessSpec

TABLE = "table"
FLIPPED_BELOW = -0.5  # the object's z axis, dotted with the world's up: below this it lies upside down
UPRIGHT_ABOVE = 0.5


def gripper(namespace: str) -> str:
    """The name a robot's gripper (its fingers and their mount) has in contacts."""
    return f"{namespace}/gripper" if namespace else "gripper"


def arm(namespace: str) -> str:
    return f"{namespace}/arm" if namespace else "arm"


Pose = tuple[np.ndarray, np.ndarray]  # position (3), quaternion x, y, z, w (4); world frame


@dataclass(frozen=True)
class TaskState:
    success: bool
    detail: str  # one line for people: what the ground truth sees
    values: dict[str, str] = field(default_factory=dict)  # for /task/status and GET /task


def touching(name: str, contacts: Iterable[frozenset[str]]) -> set[str]:
    """What touches `name`."""
    return {other for pair in contacts if name in pair for other in pair if other != name}


def up_axis(quat: np.ndarray) -> float:
    """The object's z axis dotted with the world's up: 1 upright, -1 upside down."""
    return float(Rotation.from_quat(quat).apply([0.0, 0.0, 1.0])[2])


def evaluate(spec: SuccessSpec, poses: Mapping[str, Pose], contacts: Iterable[frozenset[str]]) -> TaskState:
    """The task's ground truth at one instant."""
    if spec.kind == "none":
        return TaskState(False, "this task has no success criterion")
    position, quat = poses[spec.object]
    contacts = list(contacts)
    others = touching(spec.object, contacts)
    touched = ", ".join(sorted(others)) or "nothing"
    touching_value = ",".join(sorted(others))  # the values' spelling of it (GET /task, /task/status)
    if spec.kind == "placed":
        error = float(np.linalg.norm(np.asarray(position) - np.asarray(spec.position)))
        success = error <= spec.tolerance
        detail = (
            f"{spec.object} is {1e3 * error:.1f} mm from where it belongs (success within {1e3 * spec.tolerance:g} "
            f"mm), touching {touched}"  # in the hand or where it fell: where a failed episode ended
        )
        return TaskState(success, detail, {"error_m": f"{error:.5f}", "touching": touching_value})
    if spec.kind == "held":
        holder = gripper(spec.by)
        # `above`: clear of where it rests, so that an object that leaves its support for an instant and brushes
        # the gripper on its way (a bar knocked off its posts) is not held
        height = float(position[2])
        clear = spec.above is None or height > spec.above
        success = holder in others and others <= {holder} and clear
        wanted = f"held by {holder} alone" + ("" if spec.above is None else f", above z {spec.above:g} m")
        detail = f"{spec.object} touches {touched}" + ("" if success else f" (success: {wanted})")
        if spec.above is not None:
            detail += f", its z {height:.3f} m"
        return TaskState(success, detail, {"touching": touching_value, "z_m": f"{height:.4f}"})
    # flipped: lying upside down on what it must rest on
    up = up_axis(quat)
    side = "up" if up > UPRIGHT_ABOVE else ("down" if up < FLIPPED_BELOW else "edge")
    on = spec.resting_on in others
    success = on and side == "down"
    detail = f"{spec.object} is {'on' if on else 'off'} {spec.resting_on}, its top facing {side}"
    return TaskState(success, detail, {"side": side, "on": str(on).lower()})
