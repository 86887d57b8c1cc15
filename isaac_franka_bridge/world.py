"""The simulated world and its task: which robots it holds, where, with what, where their servers
listen, which cameras look at it, the objects around them, and what counts as success.

A task file (config/tasks/*.yaml, chosen with `task:=<name>`) describes one world: `robots`,
`objects` and `task`. Read by sim.launch.py, which starts one simulation for the world and one
franka_server_ros2 per robot, and by the simulation itself. Pure data and checks: no ROS, no
physics; every backend builds the same description. Every per-robot default lives here, in
`RobotSpec`, every object's in `ObjectSpec`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

import yaml

from franka_server_ros2.camera_specs import CameraSpec, cameras_from_mapping, cameras_mapping, load_cameras
from franka_server_ros2.grippers import ROBOTIQ_OPEN_POSITION

DEFAULT_TASK = "pick_cube"  # config/tasks/pick_cube.yaml: one arm, a Robotiq, a cube to pick
GRIPPER_TYPES = ("Robotiq", "Franka", "None")
CONTROLLERS = ("impedance", "wrench")  # the Cartesian impedance controller, or egg_flip's wrench controller
DEFAULT_RESET_JOINT_TARGET = (0.0, 0.0, 0.0, -1.9, 0.0, 2.0, 0.0)
SHAPES = {"box": 3, "cylinder": 2, "sphere": 1, "ellipsoid": 3, "mesh": 3}  # size values (mesh: scale x, y, z)
MOUNTS = ("world", "flange", "gripper")  # where an object's pose is given and what holds it at start
SUCCESS_KINDS = ("none", "placed", "held", "flipped")


@dataclass(frozen=True)
class PartSpec:
    """One solid of an object, in the object's frame."""

    shape: str = "box"
    # [m] box and ellipsoid: full x, y, z extents; cylinder (along z): radius, length; sphere: radius;
    # mesh: scale of the file's x, y, z
    size: tuple[float, ...] = (0.04, 0.04, 0.04)
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [m]
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [rad]
    rgba: tuple[float, ...] = ()  # () = the object's colour
    mesh: str = ""  # shape mesh: an OBJ or STL file (relative to the task file)


@dataclass(frozen=True)
class ObjectSpec:
    """A rigid object of the scene, the same for every backend: one solid (`shape`, `size`) or several
    (`parts`)."""

    name: str  # its TF frame
    shape: str = "box"  # box, cylinder (along its z axis), sphere, ellipsoid or mesh
    size: tuple[float, ...] = (0.04, 0.04, 0.04)  # as PartSpec.size
    position: tuple[float, float, float] = (0.55, 0.0, 0.02)  # [m] of its frame, in the frame of its mount
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [rad] roll, pitch, yaw of its frame, same
    mass: float = 0.0  # [kg]; 0: fixed in the world (mount world only)
    friction: float = 1.0  # sliding friction coefficient
    rgba: tuple[float, float, float, float] = (0.6, 0.6, 0.6, 1.0)
    parts: tuple[PartSpec, ...] = ()  # a compound object: its solids (then shape and size are unused)
    # world: position in the world frame. flange (or '<namespace>/flange'): fixed on a robot's flange,
    # position in the flange frame (panda_link8), a tool the robot carries and compensates the weight of.
    # gripper (or '<namespace>/gripper'): held by a robot's gripper at start, position in its end-effector
    # frame; the gripper closes on it before the simulation starts
    mount: str = "world"
    mesh: str = ""  # shape mesh: the file

    def solids(self) -> tuple[PartSpec, ...]:
        """Its parts, each with its colour."""
        parts = self.parts or (PartSpec(self.shape, self.size, mesh=self.mesh),)
        return tuple(p if p.rgba else replace(p, rgba=self.rgba) for p in parts)

    @property
    def mount_kind(self) -> str:
        return self.mount.rsplit("/", 1)[-1]

    @property
    def mount_robot(self) -> str:
        """Namespace of the robot it is mounted on ('' for a one-robot world's robot)."""
        return self.mount.rsplit("/", 1)[0] if "/" in self.mount else ""


# the cube to pick, turned to face the jaws of a gripper at the default reset pose (EE yawed -45 deg)
DEFAULT_CUBE = ObjectSpec(
    "cube", "box", (0.04, 0.04, 0.04), (0.55, 0.0, 0.02), (0.0, 0.0, -math.pi / 4), 0.1, 1.0, (0.8, 0.2, 0.2, 1.0)
)
OBJECT_KEYS = tuple(f.name for f in fields(ObjectSpec))
PART_KEYS = tuple(f.name for f in fields(PartSpec))


@dataclass(frozen=True)
class RobotSpec:
    namespace: str = ""  # of its nodes, topics and TF frames ('' for a one-robot world)
    gripper_type: str = "Robotiq"
    base_position: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [m] of panda_link0 in the world
    base_yaw: float = 0.0  # [rad] about the world's z axis (robots stand upright)
    reset_joint_target: tuple[float, ...] = DEFAULT_RESET_JOINT_TARGET  # start-up and /jointreset [rad]
    host: str = "127.0.0.1"  # where its franka_server_ros2 listens
    port: int = 5000
    # the controller it runs: impedance (the Cartesian impedance controller behind the original
    # franka_server) or wrench (egg_flip's Cartesian wrench controller behind franka_eggflip_server)
    controller: str = "impedance"
    # Robotiq: where its server's /open_gripper goes (0 fully open .. 255; 175 the published server's)
    robotiq_open_position: int = ROBOTIQ_OPEN_POSITION
    cameras_config: str = field(default="", compare=False)  # a camera file (relative to the task file), or:
    cameras: tuple[CameraSpec, ...] = field(default=(), compare=False)  # its cameras (the file's, or inline)

    @property
    def prefix(self) -> str:
        """Of its TF frames and of its names in a shared physics model: 'left/', or ''."""
        return f"{self.namespace}/" if self.namespace else ""

    @property
    def base_frame(self) -> str:
        return f"{self.prefix}panda_link0"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"


@dataclass(frozen=True)
class SuccessSpec:
    """What the simulator's ground truth calls success (computed from the physics, task.py)."""

    kind: str = "none"  # none, placed, held or flipped
    object: str = ""  # the object it is about
    position: tuple[float, ...] = ()  # placed: where the object's frame is when done, world frame [m]
    tolerance: float = 0.003  # placed: how far from it still counts [m]
    by: str = ""  # held: namespace of the robot whose gripper holds it (and nothing else touches it)
    above: float | None = None  # held: the object's frame higher than this, world z [m] (clear of where it rests)
    resting_on: str = ""  # flipped: the object it must rest on, upside down


@dataclass(frozen=True)
class PlaceSpec:
    """Where a person puts an object between episodes (a holder, a tray): `POST /task/place` (ROS 2:
    /task/place/<name>) puts its object there, at rest, as a person would."""

    name: str  # an identifier: the route's `place`, the service's last name
    object: str  # the (free) object that goes there
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [m] of the object's frame, world frame
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [rad] of the object's frame, world frame


@dataclass(frozen=True)
class TaskSpec:
    name: str = ""
    description: str = ""  # one line for users: what the task is and what success means
    success: SuccessSpec = SuccessSpec()


# simulation settings a task file may choose for its world (config/sim.yaml's otherwise; a launch argument wins)
SIM_SETTINGS = {"state_publish_rate": float, "camera_render_divisor": int}


@dataclass(frozen=True)
class WorldSpec:
    robots: tuple[RobotSpec, ...]
    objects: tuple[ObjectSpec, ...] = (DEFAULT_CUBE,)
    path: str = ""  # the file it came from
    task: TaskSpec = TaskSpec()
    sim: tuple[tuple[str, float], ...] = ()  # (SIM_SETTINGS name, value) the task file chose
    places: tuple[PlaceSpec, ...] = ()

    def place(self, name: str) -> PlaceSpec:
        return next(p for p in self.places if p.name == name)

    def robot(self, namespace: str) -> RobotSpec:
        return next(r for r in self.robots if r.namespace == namespace)

    def cameras(self) -> tuple[CameraSpec, ...]:
        """Every robot's cameras, named as their topics are ('<namespace>/<camera>')."""
        return tuple(replace(c, name=r.prefix + c.name) for r in self.robots for c in r.cameras)


ROBOT_KEYS = tuple(f.name for f in fields(RobotSpec))
SUCCESS_KEYS = tuple(f.name for f in fields(SuccessSpec))
TASK_KEYS = tuple(f.name for f in fields(TaskSpec))
PLACE_KEYS = tuple(f.name for f in fields(PlaceSpec))
WORLD_KEYS = ("task", "robots", "objects", "places", "sim")


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
    if robot.controller not in CONTROLLERS:
        raise ValueError(f"{where}: controller '{robot.controller}' must be one of {', '.join(CONTROLLERS)}")
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
    open_position = _numbers([robot.robotiq_open_position], 1, f"{where}: robotiq_open_position")[0]
    if open_position != int(open_position) or not 0 <= open_position <= 255:
        raise ValueError(f"{where}: robotiq_open_position {robot.robotiq_open_position!r} must be an integer 0..255")
    cameras = robot.cameras
    if robot.cameras_config and not cameras:  # (a robot already checked keeps the cameras it loaded)
        try:
            cameras = tuple(load_cameras(robot.cameras_config))
        except OSError as exc:
            raise ValueError(f"{where}: cameras_config {robot.cameras_config}: {exc.strerror}") from None
    names = [c.name for c in cameras]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: camera names must be unique ({names})")
    return replace(
        robot,
        namespace=namespace,
        base_position=_numbers(robot.base_position, 3, f"{where}: base_position"),
        base_yaw=yaw,
        reset_joint_target=_numbers(robot.reset_joint_target, 7, f"{where}: reset_joint_target"),
        port=port,
        robotiq_open_position=int(open_position),
        cameras=tuple(cameras),
    )


def _check_part(part: PartSpec, where: str) -> PartSpec:
    if part.shape not in SHAPES:
        raise ValueError(f"{where}: shape '{part.shape}' must be one of {', '.join(SHAPES)}")
    size = _numbers(part.size, SHAPES[part.shape], f"{where}: size of a {part.shape}")
    if min(size) <= 0.0:
        raise ValueError(f"{where}: sizes must be > 0")
    if part.shape == "mesh" and not os.path.isfile(part.mesh):
        raise ValueError(f"{where}: mesh file '{part.mesh}' not found")
    return replace(
        part,
        size=size,
        pos=_numbers(part.pos, 3, f"{where}: pos"),
        rpy=_numbers(part.rpy, 3, f"{where}: rpy"),
        rgba=_numbers(part.rgba, 4, f"{where}: rgba") if part.rgba else (),
    )


def check_object(obj: ObjectSpec, where: str) -> ObjectSpec:
    where = f"{where}: object '{obj.name}'"
    if not str(obj.name).isidentifier():
        raise ValueError(f"{where}: a name must be an identifier (it names a TF frame)")
    mass, friction = _numbers([obj.mass, obj.friction], 2, f"{where}: mass and friction")
    if mass < 0.0 or friction <= 0.0:
        raise ValueError(f"{where}: friction must be > 0, mass >= 0 (0: fixed)")
    if obj.mount_kind not in MOUNTS:
        raise ValueError(f"{where}: mount '{obj.mount}' must be one of {', '.join(MOUNTS)} (or '<namespace>/...')")
    if obj.mount_kind == "gripper" and mass <= 0.0:
        raise ValueError(f"{where}: an object a gripper holds needs a mass")
    if obj.parts:
        parts = tuple(_check_part(p, f"{where}: part {i}") for i, p in enumerate(obj.parts))
        size = tuple(obj.size)  # unused
    else:
        parts = ()
        size = _check_part(PartSpec(obj.shape, obj.size, mesh=obj.mesh), where).size
    return replace(
        obj,
        size=size,
        parts=parts,
        position=_numbers(obj.position, 3, f"{where}: position"),
        rpy=_numbers(obj.rpy, 3, f"{where}: rpy"),
        mass=mass,
        friction=friction,
        rgba=_numbers(obj.rgba, 4, f"{where}: rgba"),
    )


def check_task(task: TaskSpec, robots: Sequence[RobotSpec], objects: Sequence[ObjectSpec], where: str) -> TaskSpec:
    s = replace(task.success, position=tuple(task.success.position))
    task = replace(task, success=s)
    where = f"{where}: task success"
    if s.kind not in SUCCESS_KINDS:
        raise ValueError(f"{where}: kind '{s.kind}' must be one of {', '.join(SUCCESS_KINDS)}")
    if s.kind == "none":
        return task
    names = {o.name for o in objects}
    if s.object not in names:
        raise ValueError(f"{where}: object '{s.object}' is not one of the world's objects {sorted(names)}")
    position, tolerance = s.position, s.tolerance
    if s.kind == "placed":
        position = _numbers(s.position, 3, f"{where}: position")
        tolerance = _numbers([s.tolerance], 1, f"{where}: tolerance")[0]
        if tolerance <= 0.0:
            raise ValueError(f"{where}: tolerance must be > 0")
    if s.kind == "held" and s.by not in {r.namespace for r in robots}:
        raise ValueError(f"{where}: by '{s.by}' must name a robot of the world")  # (without a gripper: never held)
    above = s.above
    if above is not None:
        if s.kind != "held":
            raise ValueError(f"{where}: above is for kind held, not {s.kind}")
        above = _numbers([above], 1, f"{where}: above")[0]
    if s.kind == "flipped" and s.resting_on not in names:
        raise ValueError(f"{where}: resting_on '{s.resting_on}' is not one of the world's objects")
    return replace(task, success=replace(s, position=position, tolerance=tolerance, above=above))


def check_places(places: Sequence[PlaceSpec], objects: Sequence[ObjectSpec], where: str) -> tuple[PlaceSpec, ...]:
    free = {o.name for o in objects if o.mass > 0.0 and o.mount_kind != "flange"}
    checked = []
    for place in places:
        here = f"{where}: place '{place.name}'"
        if not str(place.name).isidentifier():
            raise ValueError(f"{here}: a name must be an identifier (it names a ROS service)")
        if place.object not in free:
            raise ValueError(f"{here}: object '{place.object}' must be one of the world's free objects {sorted(free)}")
        checked.append(
            replace(
                place,
                position=_numbers(place.position, 3, f"{here}: position"),
                rpy=_numbers(place.rpy, 3, f"{here}: rpy"),
            )
        )
    names = [p.name for p in checked]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: place names must be unique ({names})")
    return tuple(checked)


def check_sim(settings: dict, where: str) -> tuple[tuple[str, float], ...]:
    if not isinstance(settings, dict):
        raise ValueError(f"{where}: 'sim' must be a mapping of {', '.join(SIM_SETTINGS)}")
    _unknown(settings, tuple(SIM_SETTINGS), "sim", where)
    checked = []
    for name, value in settings.items():
        number = _numbers([value], 1, f"{where}: sim {name}")[0]
        if number <= 0:
            raise ValueError(f"{where}: sim {name} must be > 0")
        checked.append((name, SIM_SETTINGS[name](number)))
    return tuple(checked)


def check_world(
    robots: Sequence[RobotSpec],
    objects: Sequence[ObjectSpec] = (DEFAULT_CUBE,),
    path: str = "",
    task=TaskSpec(),
    sim: dict | None = None,
    places: Sequence[PlaceSpec] = (),
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
    object_names = [o.name for o in things]
    if len(set(object_names)) != len(object_names) or "world" in object_names:
        raise ValueError(f"{where}: object names must be unique and not 'world' ({object_names})")
    for o in things:
        robot = next((r for r in checked if r.namespace == o.mount_robot), None)
        if o.mount_kind != "world" and robot is None:
            raise ValueError(f"{where}: object '{o.name}' is mounted on '{o.mount}': no robot '{o.mount_robot}'")
        if o.mount_kind == "gripper" and robot.gripper_type == "None":
            raise ValueError(f"{where}: object '{o.name}' is held by the gripper of a robot without one")
    held = [o.mount for o in things if o.mount_kind == "gripper"]
    if len(set(held)) != len(held):
        raise ValueError(f"{where}: a gripper can hold one object at start ({held})")
    return WorldSpec(
        checked,
        things,
        path,
        check_task(task, checked, things, where),
        check_sim(sim or {}, where),
        check_places(places, things, where),
    )


def one_robot_world(gripper_type: str = "Robotiq", cameras: Sequence[CameraSpec] = ()) -> WorldSpec:
    """A world of one robot at the origin, names unprefixed (tools, benchmarks, model-level tests)."""
    world = check_world([RobotSpec(gripper_type=gripper_type)])
    return replace(world, robots=(replace(world.robots[0], cameras=tuple(cameras)),))


def _entries(value, what: str, where: str) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ValueError(f"{where}: '{what}' must be a list of mappings")
    return value


def _unknown(entry: dict, known: Sequence[str], what: str, where: str) -> None:
    unknown = sorted(set(entry) - set(known))
    if unknown:
        raise ValueError(f"{where}: {what} has unknown keys {unknown} (known: {', '.join(known)})")


def _relative(directory: str, path) -> str:
    return os.path.normpath(os.path.join(directory, str(path))) if path else ""


def load_world(path: str, **overrides) -> WorldSpec:
    """The world of a task file. `overrides` (RobotSpec fields whose value is not None or '') replace
    those of its robot, and are only accepted for a one-robot world (launch arguments do this);
    cameras_config 'none' means no cameras, on every robot."""
    try:
        with open(path) as f:
            data = yaml.safe_load(f) or {}
    except OSError as exc:
        raise ValueError(f"task file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"task file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("robots"), list):
        raise ValueError(f"task file {path}: needs a list 'robots'")
    _unknown(data, WORLD_KEYS, "the file", path)
    directory = os.path.dirname(os.path.abspath(path))
    robots = []
    for i, entry in enumerate(_entries(data["robots"], "robots", path)):
        _unknown(entry, ROBOT_KEYS, f"robot {i}", path)
        if entry.get("cameras_config") and entry.get("cameras"):
            raise ValueError(f"{path}: robot {i}: give cameras_config or cameras, not both")
        entry = {**entry, "cameras_config": _relative(directory, entry.get("cameras_config"))}
        if "cameras" in entry:
            entry["cameras"] = tuple(cameras_from_mapping(entry["cameras"] or {}, f"{path}: robot {i}"))
        robots.append(RobotSpec(**entry))
    given = {k: v for k, v in overrides.items() if v not in (None, "")}
    if given.get("cameras_config") == "none":  # no cameras on any robot
        del given["cameras_config"]
        robots = [replace(r, cameras_config="", cameras=()) for r in robots]
    if given:
        if len(robots) != 1:
            raise ValueError(f"{', '.join(sorted(given))} set for a world of {len(robots)} robots: set them in {path}")
        if "cameras_config" in given:
            given["cameras"] = ()
        robots[0] = replace(robots[0], **given)
    objects = []
    for i, entry in enumerate(_entries(data.get("objects", []), "objects", path)):
        _unknown(entry, OBJECT_KEYS, f"object {i}", path)
        if "name" not in entry:
            raise ValueError(f"{path}: object {i} needs a name")
        parts = []
        for j, part in enumerate(_entries(entry.get("parts"), "parts", f"{path}: object {i}")):
            _unknown(part, PART_KEYS, f"part {j}", f"{path}: object {i}")
            parts.append(PartSpec(**{**part, "mesh": _relative(directory, part.get("mesh"))}))
        objects.append(ObjectSpec(**{**entry, "parts": tuple(parts), "mesh": _relative(directory, entry.get("mesh"))}))
    places = []
    for i, entry in enumerate(_entries(data.get("places", []), "places", path)):
        _unknown(entry, PLACE_KEYS, f"place {i}", path)
        if "name" not in entry or "object" not in entry:
            raise ValueError(f"{path}: place {i} needs a name and an object")
        places.append(PlaceSpec(**entry))
    task = data.get("task") or {}
    if not isinstance(task, dict):
        raise ValueError(f"{path}: 'task' must be a mapping")
    _unknown(task, TASK_KEYS, "task", path)
    success = task.get("success") or {}
    if not isinstance(success, dict):
        raise ValueError(f"{path}: task 'success' must be a mapping")
    _unknown(success, SUCCESS_KEYS, "task success", path)
    default_name = os.path.splitext(os.path.basename(path))[0]
    task_spec = TaskSpec(
        name=str(task.get("name") or default_name),
        description=str(task.get("description", "")),
        success=SuccessSpec(**success),
    )
    return check_world(robots, objects, path, task_spec, data.get("sim") or {}, places)


def dump_world(world: WorldSpec) -> str:
    """YAML that load_world reads back as the same world (cameras inline, files by absolute path)."""
    robots = []
    for r in world.robots:
        entry = {k: _plain(getattr(r, k)) for k in ROBOT_KEYS if k not in ("cameras", "cameras_config")}
        entry["cameras"] = cameras_mapping(r.cameras)
        robots.append(entry)
    objects = []
    for o in world.objects:
        entry = {k: _plain(getattr(o, k)) for k in OBJECT_KEYS if k != "parts"}
        entry["parts"] = [{k: _plain(getattr(p, k)) for k in PART_KEYS} for p in o.parts]
        objects.append(entry)
    success = {k: _plain(getattr(world.task.success, k)) for k in SUCCESS_KEYS}
    task = {"name": world.task.name, "description": world.task.description, "success": success}
    places = [{k: _plain(getattr(p, k)) for k in PLACE_KEYS} for p in world.places]
    data = {"task": task, "robots": robots, "objects": objects, "places": places, "sim": dict(world.sim)}
    return yaml.safe_dump(data, sort_keys=False)


def _plain(value):
    return list(value) if isinstance(value, tuple) else value
