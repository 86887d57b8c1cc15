"""Parsing of HTTP request bodies. Anything malformed raises BadRequest, which the app answers with 400."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


class BadRequest(ValueError):
    """The client sent something the robot must not act on; the message says what."""


def is_number(value: Any) -> bool:
    """An int or float, not a bool (JSON's true is no number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def query_number(args: Mapping[str, str], name: str, kind: type, default, low, high):
    """Query argument `name` of `args` as `kind` in [low, high] (`default` when absent); BadRequest for text,
    NaN or out of range (never a silent default)."""
    text = args.get(name)
    if text is None:
        return default
    try:
        value = kind(text)
    except ValueError:
        raise BadRequest(f"{name} must be {'an integer' if kind is int else 'a number'}, got {text!r}") from None
    if not low <= value <= high:  # NaN fails this too
        raise BadRequest(f"{name} must be in {low}..{high}, got {text!r}")
    return value


def finite_vector(body: Mapping[str, Any], key: str, length: int) -> np.ndarray:
    if key not in body:
        raise BadRequest(f"missing key '{key}'")
    value = body[key]
    if not isinstance(value, list) or len(value) != length:
        raise BadRequest(f"'{key}' must be a list of {length} numbers")
    if not all(is_number(v) for v in value):
        raise BadRequest(f"'{key}' must contain only numbers")
    array = np.array(value, dtype=float)
    if not np.all(np.isfinite(array)):
        raise BadRequest(f"'{key}' contains NaN or infinity")
    return array


def finite_number(body: Mapping[str, Any], key: str) -> float:
    if key not in body:
        raise BadRequest(f"missing key '{key}'")
    value = body[key]
    if not is_number(value) or not math.isfinite(value):
        raise BadRequest(f"'{key}' must be a finite number")
    return float(value)


def pose(
    body: Mapping[str, Any], workspace_min: np.ndarray, workspace_max: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`{"arr": [x, y, z, qx, qy, qz, qw]}` -> position, unit quaternion (normalised on arrival)."""
    arr = finite_vector(body, "arr", 7)
    position, quat = arr[:3], arr[3:]
    norm = float(np.linalg.norm(quat))
    if norm < 1e-6:
        raise BadRequest("the quaternion of 'arr' has zero length")
    if np.any(position < workspace_min) or np.any(position > workspace_max):
        raise BadRequest(
            f"position {position.round(4).tolist()} is outside the workspace "
            f"[{workspace_min.tolist()}, {workspace_max.tolist()}]"
        )
    return position, quat / norm


def parameters(body: Mapping[str, Any]) -> dict[str, float]:
    """`{name: value, ...}` -> floats, each converted as the original's dynamic_reconfigure client does
    (`float(value)`: numbers, numeric strings and bools convert); `{}` is a valid (empty) set.
    A value float() refuses, NaN or infinity is a 400."""
    out = {}
    for name, value in body.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise BadRequest(f"parameter '{name}' must be a number, got {value!r}") from None
        if not math.isfinite(number):
            raise BadRequest(f"parameter '{name}' must be finite, got {value!r}")
        out[name] = number
    return out


def clamp_parameters(
    values: Mapping[str, float], ranges: Mapping[str, tuple[float, float] | None]
) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Clamp each value into its parameter's range, as the original's dynamic_reconfigure server does.

    Returns (values to apply, {name: (sent, applied)} of those clamped). An unknown name is a 400.
    """
    unknown = sorted(set(values) - set(ranges))
    if unknown:
        raise BadRequest(f"unknown compliance parameter(s): {', '.join(unknown)}")
    applied, clamped = {}, {}
    for name, value in values.items():
        bounds = ranges[name]
        applied[name] = value if bounds is None else min(max(value, bounds[0]), bounds[1])
        if applied[name] != value:
            clamped[name] = (value, applied[name])
    return applied, clamped


def load(body: Mapping[str, Any]) -> tuple[float, np.ndarray, np.ndarray]:
    """`{"mass": kg, "F_x_center_load": [3], "load_inertia": [9]}`."""
    mass = finite_number(body, "mass")
    if mass < 0.0:
        raise BadRequest("'mass' must not be negative")
    return mass, finite_vector(body, "F_x_center_load", 3), finite_vector(body, "load_inertia", 9)


def place(body: Mapping[str, Any], places: Mapping[str, str]) -> str:
    """`{"place": name}` -> the name of one of the world's `places` ({place: object})."""
    name = body.get("place")
    if not isinstance(name, str):
        raise BadRequest("missing key 'place' (a string): one of " + (", ".join(sorted(places)) or "none here"))
    if name not in places:
        raise BadRequest(f"no place {name!r} in this world; its places: {', '.join(sorted(places)) or 'none'}")
    return name


def gripper_command(body: Mapping[str, Any]) -> int:
    """`{"gripper_pos": v}` -> int(v) clipped to 0..255, as the original (int() truncates a number and
    converts a numeric string or a bool; what it refuses, NaN and infinity are a 400)."""
    if "gripper_pos" not in body:
        raise BadRequest("missing key 'gripper_pos'")
    value = body["gripper_pos"]
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise BadRequest(f"'gripper_pos' must be an integer 0..255 (or convert to one), got {value!r}") from None
    return min(max(number, 0), 255)
