"""Every ROS 2 parameter of the simulation's nodes, declared from one table with descriptors.

Ranges show in `ros2 param describe` and rqt_reconfigure and are enforced by rclpy; arrays are
checked for length and finiteness here. The compliance parameters come from the controller's table;
what differs between robots (gripper, reset target) comes from the world file (world.py).
`franka_sim` is the world's node; the others exist once per robot, in its namespace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..backends import BACKENDS, DEFAULT_BACKEND
from ..controller import COMPLIANCE_PARAMETERS
from ..sim.reflexes import JOINT_LOWER, JOINT_UPPER
from ..world import DEFAULT_RESET_JOINT_TARGET, GRIPPER_TYPES


@dataclass(frozen=True)
class Param:
    node: str  # short name of the node that owns it
    name: str
    default: object
    description: str
    low: float | None = None
    high: float | None = None
    read_only: bool = False
    length: int | None = None  # double arrays: required length
    bounds: tuple[Sequence[float], Sequence[float]] | None = None  # double arrays: per-element range

    def descriptor(self) -> ParameterDescriptor:
        d = ParameterDescriptor(description=self.description, read_only=self.read_only)
        if self.low is not None:
            d.floating_point_range = [FloatingPointRange(from_value=float(self.low), to_value=float(self.high))]
        return d


PARAMETERS: tuple[Param, ...] = (
    # the world's simulation
    Param("franka_sim", "backend", DEFAULT_BACKEND, f"physics backend: {', '.join(BACKENDS)}", read_only=True),
    Param(
        "franka_sim", "world_config", "", "the task file of the world ('': config/tasks/pick_cube.yaml)", read_only=True
    ),
    Param("franka_sim", "real_time_factor", 1.0, "pace: 1.0 wall-clock time, 0 as fast as possible", 0.0, 100.0),
    Param("franka_sim", "state_publish_rate", 250.0, "state topics and Jacobian [Hz]", 1.0, 1000.0, True),
    Param(
        "franka_sim", "joint_states_publish_rate", 125.0, "/joint_states, gripper, /tf, /clock [Hz]", 1.0, 1000.0, True
    ),
    Param("franka_sim", "camera_render_divisor", 1, "render at 1/N of the size and scale up (CPU)", read_only=True),
    Param("franka_sim", "task_rate", 10.0, "the task's ground truth on /task/* [Hz]", 0.1, 100.0, True),
    # one robot's simulation-only settings
    Param(
        "sim", "gripper_type", "Robotiq", f"gripper (from the world file): {', '.join(GRIPPER_TYPES)}", read_only=True
    ),
    Param("sim", "payload_mass", 0.0, "simulation only: mass physically attached at the flange [kg]", 0.0, 3.0),
    Param("sim", "payload_center_of_mass", [0.0] * 3, "simulation only: its centre, flange frame [m]", length=3),
    Param("sim", "payload_inertia", [0.0] * 9, "simulation only: its inertia, 3x3 row-major [kg m^2]", length=9),
    Param("sim", "wrench_bias", [0.0] * 6, "bias added to K_F_ext_hat_K [N, Nm]", length=6),
    Param("sim", "wrench_noise_std", [0.0] * 6, "std of white noise on K_F_ext_hat_K [N, Nm]", length=6),
    # the robot: joint reset, declared load, reflexes
    Param(
        "franka_control",
        "reset_joint_target",
        list(DEFAULT_RESET_JOINT_TARGET),
        "start-up and joint reset, within the joint limits [rad] (default: the world file's)",
        length=7,
        bounds=(JOINT_LOWER.tolist(), JOINT_UPPER.tolist()),
    ),
    Param("franka_control", "load_mass", 0.0, "declared load at the flange (set_load) [kg]", 0.0, 3.0),
    Param("franka_control", "load_center_of_mass", [0.0] * 3, "its centre of mass, flange frame [m]", length=3),
    Param("franka_control", "load_inertia", [0.0] * 9, "its inertia, 3x3 row-major [kg m^2]", length=9),
    Param("franka_control", "reflex.enabled", True, "reflexes stop the robot when a limit is exceeded"),
    Param("franka_control", "reflex.contact_force", 60.0, "external force at the end effector [N]", 1.0, 1000.0),
    Param("franka_control", "reflex.joint_position_margin", 0.01, "reflex this close to a joint limit [rad]", 0.0, 0.5),
    Param("franka_control", "reflex.joint_velocity_scale", 1.0, "fraction of the velocity limits", 0.1, 2.0),
    Param("franka_control", "reflex.torque_scale", 1.0, "fraction of the torque limits (commanded)", 0.1, 2.0),
    Param(
        "franka_control", "reflex.workspace_min", [-0.9, -0.9, -0.05], "end-effector box, lower corner [m]", length=3
    ),
    Param("franka_control", "reflex.workspace_max", [0.9, 0.9, 1.3], "end-effector box, upper corner [m]", length=3),
    # the controller
    *(
        Param("cartesian_impedance_controller", p.name, p.default, p.description, p.low, p.high)
        for p in COMPLIANCE_PARAMETERS
    ),
)


def array_error(spec: Param, value) -> str | None:
    """Why `value` is not a valid value of the array parameter `spec`, or None."""
    values = list(value)
    if len(values) != spec.length or not all(isinstance(v, float) and math.isfinite(v) for v in values):
        return f"{spec.name} must be {spec.length} finite numbers"
    if spec.bounds is not None:
        low, high = spec.bounds
        outside = [i for i, v in enumerate(values) if not low[i] <= v <= high[i]]
        if outside:
            i = outside[0]
            return f"{spec.name}[{i}] = {values[i]:g} is outside {low[i]:g} .. {high[i]:g}"
    return None


def declare(node: Node, short_name: str, defaults: dict[str, object] | None = None) -> None:
    """Declare this node's parameters and refuse bad arrays, at start-up and when they are set.
    `defaults` replace the table's (a robot's values from the world file); parameter files and
    launch arguments still override them."""
    mine = {p.name: p for p in PARAMETERS if p.node == short_name}
    defaults = defaults or {}
    for p in mine.values():
        node.declare_parameter(p.name, defaults.get(p.name, p.default), p.descriptor())
        if p.length is not None:
            error = array_error(p, node.get_parameter(p.name).value)
            if error is not None:  # a launch argument or YAML value: the node cannot start with it
                raise ValueError(f"parameter {error}")

    def check(changes: list[Parameter]) -> SetParametersResult:
        for change in changes:
            spec = mine.get(change.name)
            if spec is None or spec.length is None:
                continue
            value = change.value if change.type_ == Parameter.Type.DOUBLE_ARRAY else []
            error = array_error(spec, value)
            if error is not None:
                return SetParametersResult(successful=False, reason=error)
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(check)
