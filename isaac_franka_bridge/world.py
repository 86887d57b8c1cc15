"""The simulated world: which robots it holds, where, with what, where their servers listen, and
the objects around them.

A world is a YAML file (config/worlds/*.yaml). Read by sim.launch.py, which starts one simulation
for the world and one franka_server_ros2 per robot, and by the simulation itself. Pure data and
checks: no ROS, no physics; every backend builds the same description. Every per-robot default
lives here, in `RobotSpec`, and every object's in `ObjectSpec`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

import yaml

from franka_server_ros2.camera_specs import CameraSpec, load_cameras

GRIPPER_TYPES = ("Robotiq", "Franka", "None")
DEFAULT_RESET_JOINT_TARGET = (0.0, 0.0, 0.0, -1.9, 0.0, 2.0, 0.0)
SHAPES = {"box": 3, "cylinder": 2, "sphere": 1}  # how many size values: box x, y, z; cylinder radius, length


@dataclass(frozen=True)
class ObjectSpec:
    """A rigid object of the scene, the same for every backend."""

    name: str  # its TF frame
    shape: str = "box"  # box, cylinder (along its z axis) or sphere
    size: tuple[float, ...] = (0.04, 0.04, 0.04)  # [m] box: full x, y, z; cylinder: radius, length; sphere: radius
    position: tuple[float, float, float] = (0.55, 0.0, 0.02)  # [m] of its centre, world frame
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [rad] roll, pitch, yaw of its frame
    mass: float = 0.0  # [kg]; 0: fixed in the world
    friction: float = 1.0  # sliding friction coefficient
    rgba: tuple[float, float, float, float] = (0.6, 0.6, 0.6, 1.0)


# the cube to pick, turned to face the jaws of a gripper at the default reset pose (EE yawed -45 deg)
DEFAULT_CUBE = ObjectSpec(
    "cube", "box", (0.04, 0.04, 0.04), (0.55, 0.0, 0.02), (0.0, 0.0, -math.pi / 4), 0.1, 1.0, (0.8, 0.2, 0.2, 1.0)
)
OBJECT_KEYS = tuple(f.name for f in fields(ObjectSpec))


@dataclass(frozen=True)
class RobotSpec:
    namespace: str = ""  # of its nodes, topics and TF frames ('' for a one-robot world)
    gripper_type: str = "Robotiq"
    base_position: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [m] of panda_link0 in the world
    base_yaw: float = 0.0  # [rad] about the world's z axis (robots stand upright)
    reset_joint_target: tuple[float, ...] = DEFAULT_RESET_JOINT_TARGET  # start-up and /jointreset [rad]
    host: str = "127.0.0.1"  # where its franka_server_ros2 listens
    port: int = 5000
    cameras_config: str = ""  # YAML of its cameras, relative to the world file ('' = none)
    cameras: tuple[CameraSpec, ...] = field(default=(), compare=False)  # loaded from cameras_config

    @property
    def prefix(self) -> str:
        """Of its TF frames and of its names in a shared physics model: 'left/', or ''."""
        return f"{self.namespace}/" if self.namespace else ""

    @property
    def base_frame(self) -> str:
        return f"{self.prefix}panda_link0"


@dataclass(frozen=True)
class WorldSpec:
    robots: tuple[RobotSpec, ...]
    objects: tuple[ObjectSpec, ...] = (DEFAULT_CUBE,)
    path: str = ""  # the file it came from

    def robot(self, namespace: str) -> RobotSpec:
        return next(r for r in self.robots if r.namespace == namespace)


ROBOT_KEYS = tuple(f.name for f in fields(RobotSpec) if f.name != "cameras")


def _numbers(value, length: int, what: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        values = ()
    if len(values) != length or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what} must be {length} finite numbers, got {value!r}")
    return values


def check_robot(robot: RobotSpec, where: str) -> RobotSpec:
    """The robot with its values converted and its cameras loaded; ValueError naming what is wrong."""
    if robot.gripper_type not in GRIPPER_TYPES:
        raise ValueError(f"{where}: gripper_type '{robot.gripper_type}' must be one of {', '.join(GRIPPER_TYPES)}")
    namespace = str(robot.namespace).strip("/")
    if namespace and not all(part.isidentifier() for part in namespace.split("/")):
        raise ValueError(f"{where}: namespace '{robot.namespace}' is not a valid ROS name")
    try:
        port = int(robot.port)
    except (TypeError, ValueError):
        port = -1
    if not 0 < port < 65536:
        raise ValueError(f"{where}: port {robot.port!r} must be 1..65535")
    yaw = _numbers([robot.base_yaw], 1, f"{where}: base_yaw")[0]
    try:
        cameras = tuple(load_cameras(robot.cameras_config)) if robot.cameras_config else ()
    except OSError as exc:
        raise ValueError(f"{where}: cameras_config {robot.cameras_config}: {exc.strerror}") from None
    return replace(
        robot,
        namespace=namespace,
        base_position=_numbers(robot.base_position, 3, f"{where}: base_position"),
        base_yaw=yaw,
        reset_joint_target=_numbers(robot.reset_joint_target, 7, f"{where}: reset_joint_target"),
        port=port,
        cameras=cameras,
    )


def check_object(obj: ObjectSpec, where: str) -> ObjectSpec:
    where = f"{where}: object '{obj.name}'"
    if not str(obj.name).isidentifier():
        raise ValueError(f"{where}: a name must be an identifier (it names a TF frame)")
    if obj.shape not in SHAPES:
        raise ValueError(f"{where}: shape '{obj.shape}' must be one of {', '.join(SHAPES)}")
    size = _numbers(obj.size, SHAPES[obj.shape], f"{where}: size of a {obj.shape}")
    mass, friction = _numbers([obj.mass, obj.friction], 2, f"{where}: mass and friction")
    if min(size) <= 0.0 or mass < 0.0 or friction <= 0.0:
        raise ValueError(f"{where}: sizes and friction must be > 0, mass >= 0 (0: fixed)")
    return replace(
        obj,
        size=size,
        position=_numbers(obj.position, 3, f"{where}: position"),
        rpy=_numbers(obj.rpy, 3, f"{where}: rpy"),
        mass=mass,
        friction=friction,
        rgba=_numbers(obj.rgba, 4, f"{where}: rgba"),
    )


def check_world(
    robots: Sequence[RobotSpec], objects: Sequence[ObjectSpec] = (DEFAULT_CUBE,), path: str = ""
) -> WorldSpec:
    where = path or "world"
    if not robots:
        raise ValueError(f"{where}: a world needs at least one robot")
    checked = tuple(
        check_robot(r, f"{where}: robot {i} ({r.namespace or 'no namespace'})") for i, r in enumerate(robots)
    )
    names = [r.namespace for r in checked]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: two robots share a namespace ({names}); each needs its own")
    addresses = [(r.host, r.port) for r in checked]
    if len(set(addresses)) != len(addresses):
        raise ValueError(f"{where}: two robots' servers share an address ({addresses})")
    if len(checked) > 1 and "" in names:
        raise ValueError(f"{where}: in a world of several robots each needs a namespace")
    things = tuple(check_object(o, where) for o in objects)
    names = [o.name for o in things]
    if len(set(names)) != len(names) or "world" in names:
        raise ValueError(f"{where}: object names must be unique and not 'world' ({names})")
    return WorldSpec(checked, things, path)


def one_robot_world(gripper_type: str = "Robotiq", cameras: Sequence[CameraSpec] = ()) -> WorldSpec:
    """A world of one robot at the origin, names unprefixed (tools, benchmarks, model-level tests)."""
    world = check_world([RobotSpec(gripper_type=gripper_type)])
    return replace(world, robots=(replace(world.robots[0], cameras=tuple(cameras)),))


def load_world(path: str, **overrides) -> WorldSpec:
    """The world of a YAML file. `overrides` (RobotSpec fields whose value is not None or '') replace
    those of its robot, and are only accepted for a one-robot world (launch arguments do this);
    cameras_config 'none' means no cameras, on every robot."""
    try:
        with open(path) as f:
            data = yaml.safe_load(f) or {}
    except OSError as exc:
        raise ValueError(f"world file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"world file {path} is not valid YAML: {exc}") from None
    entries = data.get("robots") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"world file {path}: needs a list 'robots'")
    directory = os.path.dirname(os.path.abspath(path))
    robots = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"world file {path}: robot {i} is not a mapping")
        unknown = sorted(set(entry) - set(ROBOT_KEYS))
        if unknown:
            raise ValueError(
                f"world file {path}: robot {i} has unknown keys {unknown} (known: {', '.join(ROBOT_KEYS)})"
            )
        if entry.get("cameras_config"):
            entry = {**entry, "cameras_config": os.path.normpath(os.path.join(directory, str(entry["cameras_config"])))}
        robots.append(RobotSpec(**entry))
    given = {k: v for k, v in overrides.items() if v not in (None, "")}
    if given.get("cameras_config") == "none":  # no cameras on any robot
        del given["cameras_config"]
        robots = [replace(r, cameras_config="") for r in robots]
    if given:
        if len(robots) != 1:
            raise ValueError(f"{', '.join(sorted(given))} set for a world of {len(robots)} robots: set them in {path}")
        robots[0] = replace(robots[0], **given)
    objects = []
    for i, entry in enumerate(data.get("objects", []) or []):
        unknown = sorted(set(entry) - set(OBJECT_KEYS)) if isinstance(entry, dict) else ["(not a mapping)"]
        if unknown or "name" not in entry:
            raise ValueError(
                f"world file {path}: object {i} needs a name; unknown keys {unknown} (known: {OBJECT_KEYS})"
            )
        objects.append(ObjectSpec(**entry))
    return check_world(robots, objects, path)


def dump_world(world: WorldSpec) -> str:
    """YAML that load_world reads back as the same world (cameras by their absolute file)."""
    robots = [{k: _plain(getattr(r, k)) for k in ROBOT_KEYS} for r in world.robots]
    for r in robots:
        if r["cameras_config"]:
            r["cameras_config"] = os.path.abspath(r["cameras_config"])
    objects = [{k: _plain(getattr(o, k)) for k in OBJECT_KEYS} for o in world.objects]
    return yaml.safe_dump({"robots": robots, "objects": objects}, sort_keys=False)


def _plain(value):
    return list(value) if isinstance(value, tuple) else value
