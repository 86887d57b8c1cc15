"""The world's objects as USD prims, for the Isaac Sim backend: pure Python, no Isaac or `pxr` import.

`translate_world(world)` turns each object of a world's description (world.py's ObjectSpec) into a
`BodyPrim`: the prims isaac_backend.py authors on the stage, with every value already in USD's
conventions, so that the translation is unit-tested on any machine while only the authoring needs
Isaac Sim. The MuJoCo backend builds the same description (mujoco_backend.add_object); both follow it:

- an object is an Xform at /World/objects/<name> (its own folder: no name can clash with the robot
  or the table) posed in the world, with one geometry prim per solid at the solid's pose in the
  object's frame (`part0`, `part1`, ...); every solid collides and shows its colour (displayColor);
- box: a `Cube` of size 1 scaled by the extents; cylinder: a `Cylinder` (radius, height, axis Z);
  sphere: a `Sphere`; ellipsoid: a `Mesh` (a tessellated unit sphere scaled by the semi-axes: PhysX
  collides a non-uniformly scaled Sphere as a sphere of the largest radius); mesh: a `Mesh` of the
  OBJ or STL file's vertices and faces, read here as MuJoCo reads them, scaled by `size`. Meshes
  collide as their convex hull (UsdPhysics `convexHull`), as MuJoCo's meshes do;
- a mass > 0 in the world or in a gripper: a rigid body of that mass (PhysX spreads it over the
  solids by volume, as MuJoCo does); mass 0 in the world: static colliders; on a flange: a rigid
  body held by a fixed joint to the hand link (outside the articulation), gravity off as MuJoCo's
  gravcomp, of its mass or, with mass 0, of MuJoCo's default density;
- friction: a physics material (static = dynamic = `friction`, no restitution) that combines by the
  larger coefficient, as MuJoCo does;
- where it starts: in the world at its pose; on a flange or in a gripper at the flange or end
  effector of the robot at its reset configuration (Franka's DH kinematics), where the backend puts
  it again once the arm is there (isaac_backend: the tools after each jump of the arm, the held
  objects in `start`).

Approximations, as PhysX needs them: an ellipsoid's hull lies within 2.1 % of the true surface
(inside it); a mesh's hull has at most 255 vertices (PhysX simplifies larger ones; MuJoCo does not).

Quaternions are (w, x, y, z), the order of `Gf.Quatf(real, imaginary)`; rpy are extrinsic x, y, z
(scipy's `Rotation.from_euler("xyz", ...)`), as world.py defines them.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from ..world import ObjectSpec, PartSpec, RobotSpec, WorldSpec

OBJECTS_ROOT = "/World/objects"  # every object's prim is /World/objects/<name>
MATERIALS_ROOT = "/World/Physics_Materials"  # its friction material /World/Physics_Materials/object_<name>
HAND_LINK = "panda_hand"  # the link a flange tool is fixed to (the flange may be merged into it)
FLANGE_LINK = "panda_link8"
TCP_OFFSET = 0.1034  # [m] Franka Hand: hand frame -> EE frame along the hand's z axis (F_T_EE)
HAND_YAW = -math.pi / 4  # the hand (and EE) frame is the flange frame turned by this about z
DEFAULT_DENSITY = 1000.0  # [kg/m^3] MuJoCo's default geom density: what a flange tool of mass 0 weighs
FRICTION_COMBINE = "max"  # MuJoCo uses the larger friction of two touching solids
HULL_VERTEX_LIMIT = 255  # PhysX's largest convex hull (CPU pipeline; the GPU one takes 64)
ELLIPSOID_SEGMENTS, ELLIPSOID_RINGS = 20, 12  # 222 vertices, 240 faces: within PhysX's hull limits
MESH_FORMATS = (".obj", ".stl")

# Franka Panda kinematics: modified DH (a, d, alpha) per joint, then the flange (public data)
PANDA_DH = (
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -math.pi / 2),
    (0.0, 0.316, math.pi / 2),
    (0.0825, 0.0, math.pi / 2),
    (-0.0825, 0.384, -math.pi / 2),
    (0.0, 0.0, math.pi / 2),
    (0.088, 0.0, math.pi / 2),
)
PANDA_FLANGE_D = 0.107  # [m] joint 7 -> flange along z

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]  # (w, x, y, z)


@dataclass(frozen=True)
class Pose:
    """A rigid transform: `position` [m] and `orient` (w, x, y, z)."""

    position: Vec3 = (0.0, 0.0, 0.0)
    orient: Quat = (1.0, 0.0, 0.0, 0.0)

    @staticmethod
    def of(position: Sequence[float], rotation: Rotation) -> Pose:
        x, y, z, w = rotation.as_quat()
        if w < 0.0:  # one of the two equal quaternions, w >= 0
            w, x, y, z = -w, -x, -y, -z
        return Pose(_floats(position), (float(w), float(x), float(y), float(z)))

    @staticmethod
    def from_rpy(position: Sequence[float], rpy: Sequence[float]) -> Pose:
        return Pose.of(position, Rotation.from_euler("xyz", rpy))

    @property
    def rotation(self) -> Rotation:
        w, x, y, z = self.orient
        return Rotation.from_quat([x, y, z, w])

    def __mul__(self, other: Pose) -> Pose:
        """This pose composed with `other`, given in this pose's frame."""
        rotation = self.rotation
        return Pose.of(np.add(self.position, rotation.apply(other.position)), rotation * other.rotation)

    def inverse(self) -> Pose:
        rotation = self.rotation.inv()
        return Pose.of(-rotation.apply(self.position), rotation)


@dataclass(frozen=True)
class GeomPrim:
    """One solid: a UsdGeom prim that collides (UsdPhysics.CollisionAPI) and shows its colour."""

    path: str
    type_name: str  # the USD schema: Cube, Cylinder, Sphere or Mesh
    attributes: dict[str, object]  # the schema's attributes, by USD name (size, radius, points, extent, ...)
    pose: Pose  # in the object's frame: xformOp:translate and xformOp:orient
    scale: Vec3  # xformOp:scale
    display_color: Vec3
    display_opacity: float
    approximation: str = ""  # UsdPhysics.MeshCollisionAPI approximation of a Mesh ('' for the others)


@dataclass(frozen=True)
class MaterialPrim:
    """A UsdShade Material with UsdPhysics.MaterialAPI, bound with purpose 'physics' to the solids."""

    path: str
    static_friction: float
    dynamic_friction: float
    restitution: float = 0.0
    friction_combine: str = FRICTION_COMBINE  # physxMaterial:frictionCombineMode


@dataclass(frozen=True)
class JointPrim:
    """A UsdPhysics.FixedJoint from a robot link (body0) to the object (body1, at its own frame)."""

    path: str
    robot: str  # namespace of the robot
    link: str  # its link, body0
    local_pose0: Pose  # the object's frame in the link's frame (localPos0, localRot0)
    exclude_from_articulation: bool = True  # a maximal-coordinate joint: the articulation keeps its links


@dataclass(frozen=True)
class BodyPrim:
    """One object of the world: an Xform, its solids, its physics."""

    name: str
    path: str
    mount: str  # world, flange or gripper
    robot: str  # namespace of the robot it is mounted on
    pose: Pose  # of the object's frame in the world as authored (flange, gripper: at the reset pose)
    local_pose: Pose  # as the world file gives it: in the world, flange or end-effector frame
    rigid: bool  # UsdPhysics.RigidBodyAPI (False: static colliders)
    mass: float  # UsdPhysics.MassAPI mass [kg] (0: not authored)
    density: float  # UsdPhysics.MassAPI density [kg/m^3] (0: not authored)
    disable_gravity: bool  # physxRigidBody:disableGravity (a tool the robot carries)
    parts: tuple[GeomPrim, ...]
    material: MaterialPrim
    joint: JointPrim | None = None


@dataclass(frozen=True)
class MeshData:
    points: np.ndarray  # (n, 3) float
    face_vertex_counts: np.ndarray  # (f,) int
    face_vertex_indices: np.ndarray  # (sum of counts,) int


def _floats(values: Sequence[float]) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


# ---------------------------------------------------------------------------------- kinematics
def _dh(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array(
        [[ct, -st, 0.0, a], [st * ca, ct * ca, -sa, -d * sa], [st * sa, ct * sa, ca, d * ca], [0.0, 0.0, 0.0, 1.0]]
    )


def panda_flange_pose(q: Sequence[float]) -> np.ndarray:
    """The flange (panda_link8) in the base frame (panda_link0) at joint angles `q`, 4x4."""
    pose = np.eye(4)
    for (a, d, alpha), theta in zip(PANDA_DH, q, strict=True):
        pose = pose @ _dh(a, d, alpha, theta)
    return pose @ _dh(0.0, PANDA_FLANGE_D, 0.0, 0.0)


def _matrix_pose(matrix: np.ndarray) -> Pose:
    return Pose.of(matrix[:3, 3], Rotation.from_matrix(matrix[:3, :3]))


def flange_in_hand() -> Pose:
    """The flange frame in the hand link's frame (the hand is the flange turned by HAND_YAW)."""
    return Pose.of((0.0, 0.0, 0.0), Rotation.from_euler("z", -HAND_YAW))


def robot_poses(robot: RobotSpec, tcp_offset: float = TCP_OFFSET) -> tuple[Pose, Pose]:
    """World poses of the robot's flange and end effector at its reset configuration."""
    base = Pose.of(robot.base_position, Rotation.from_euler("z", robot.base_yaw))
    flange = base * _matrix_pose(panda_flange_pose(robot.reset_joint_target))
    ee = flange * Pose.of((0.0, 0.0, 0.0), Rotation.from_euler("z", HAND_YAW)) * Pose((0.0, 0.0, tcp_offset))
    return flange, ee


# ---------------------------------------------------------------------------------- meshes
def load_mesh(path: str) -> MeshData:
    """The vertices and faces of an OBJ or STL file, as they are in the file (STL's repeated corners
    merged). ValueError for another format or a file with no faces."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in MESH_FORMATS:
        raise ValueError(f"mesh '{path}': the isaac backend reads {' and '.join(MESH_FORMATS)} files")
    try:
        if extension == ".obj":
            mesh = _read_obj(path)
        else:
            mesh = _read_stl(path)
    except OSError as exc:
        raise ValueError(f"mesh '{path}': {exc.strerror}") from None
    if mesh.face_vertex_counts.size == 0 or len(mesh.points) < 4:
        raise ValueError(f"mesh '{path}' has no solid to build (no faces or fewer than 4 vertices)")
    return mesh


def _read_obj(path: str) -> MeshData:
    vertices: list[tuple[float, float, float]] = []
    counts: list[int] = []
    indices: list[int] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            try:
                if fields[0] == "v":
                    x, y, z = (float(v) for v in fields[1:4])
                    vertices.append((x, y, z))
                elif fields[0] == "f":
                    face = []
                    for token in fields[1:]:
                        index = int(token.split("/")[0])  # v, v/vt, v//vn or v/vt/vn; negative: from the end
                        face.append(index - 1 if index > 0 else len(vertices) + index)
                    if len(face) < 3 or not all(0 <= i < len(vertices) for i in face):
                        raise ValueError
                    counts.append(len(face))
                    indices.extend(face)
            except ValueError:
                raise ValueError(f"mesh '{path}' line {number}: cannot read '{line.strip()}'") from None
    return MeshData(np.array(vertices, dtype=float).reshape(-1, 3), np.array(counts, int), np.array(indices, int))


STL_TRIANGLE = np.dtype([("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attribute", "<u2")])


def _read_stl(path: str) -> MeshData:
    with open(path, "rb") as f:
        data = f.read()
    if len(data) >= 84 and 84 + STL_TRIANGLE.itemsize * struct.unpack_from("<I", data, 80)[0] == len(data):
        corners = np.frombuffer(data, STL_TRIANGLE, offset=84)["corners"].reshape(-1, 3).astype(float)
    else:  # ASCII: 'vertex x y z', three per facet
        words = data.decode("ascii", errors="replace").split()
        try:
            corners = np.array(
                [[float(v) for v in words[i + 1 : i + 4]] for i, w in enumerate(words) if w == "vertex"], dtype=float
            ).reshape(-1, 3)
        except ValueError:
            raise ValueError(f"mesh '{path}' is neither a binary nor a readable ASCII STL file") from None
        if len(corners) % 3:
            raise ValueError(f"mesh '{path}': an ASCII STL facet has other than 3 vertices")
    points, inverse = np.unique(corners, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    return MeshData(points, np.full(len(corners) // 3, 3, dtype=int), inverse.astype(int))


def unit_sphere_mesh(segments: int = ELLIPSOID_SEGMENTS, rings: int = ELLIPSOID_RINGS) -> MeshData:
    """A UV sphere of radius 1 (vertices on it, faces outward): quads between latitudes, triangles at
    the poles; `segments` * (`rings` - 1) + 2 vertices and `segments` * `rings` faces."""
    points = [(0.0, 0.0, 1.0)]
    for k in range(1, rings):
        theta = math.pi * k / rings
        points += [
            (math.sin(theta) * math.cos(phi), math.sin(theta) * math.sin(phi), math.cos(theta))
            for phi in (2.0 * math.pi * j / segments for j in range(segments))
        ]
    points.append((0.0, 0.0, -1.0))
    south = len(points) - 1
    ring = lambda k, j: 1 + (k - 1) * segments + j % segments  # noqa: E731  (k = 1 .. rings - 1)
    faces = [(0, ring(1, j), ring(1, j + 1)) for j in range(segments)]
    for k in range(1, rings - 1):
        faces += [(ring(k, j), ring(k + 1, j), ring(k + 1, j + 1), ring(k, j + 1)) for j in range(segments)]
    faces += [(ring(rings - 1, j), south, ring(rings - 1, j + 1)) for j in range(segments)]
    return MeshData(
        np.array(points),
        np.array([len(f) for f in faces], dtype=int),
        np.array([i for f in faces for i in f], dtype=int),
    )


def _vec3(values: Sequence[float]) -> Vec3:
    x, y, z = (float(v) for v in values)
    return x, y, z


def _extent(low: Sequence[float], high: Sequence[float]) -> tuple[Vec3, Vec3]:
    return _vec3(low), _vec3(high)


# ---------------------------------------------------------------------------------- translation
def translate_part(part: PartSpec, path: str) -> GeomPrim:
    """One solid of an object as a USD geometry prim (its pose in the object's frame)."""
    pose = Pose.from_rpy(part.pos, part.rpy)
    size = _floats(part.size)
    scale: Vec3 = (1.0, 1.0, 1.0)
    approximation = ""
    if part.shape == "box":  # a Cube of edge 1, scaled to the extents
        type_name, scale = "Cube", _vec3(size)
        attributes: dict[str, object] = {"size": 1.0, "extent": _extent([-0.5] * 3, [0.5] * 3)}
    elif part.shape == "cylinder":
        radius, length = size
        type_name = "Cylinder"
        attributes = {
            "radius": radius,
            "height": length,
            "axis": "Z",
            "extent": _extent((-radius, -radius, -length / 2), (radius, radius, length / 2)),
        }
    elif part.shape == "sphere":
        (radius,) = size
        type_name = "Sphere"
        attributes = {"radius": radius, "extent": _extent([-radius] * 3, [radius] * 3)}
    elif part.shape in ("ellipsoid", "mesh"):
        if part.shape == "ellipsoid":  # semi-axes = half the extents
            mesh, scale = unit_sphere_mesh(), _vec3([s / 2.0 for s in size])
        else:
            mesh, scale = load_mesh(part.mesh), _vec3(size)
        type_name, approximation = "Mesh", "convexHull"
        attributes = {
            "points": [_floats(p) for p in mesh.points],
            "faceVertexCounts": [int(c) for c in mesh.face_vertex_counts],
            "faceVertexIndices": [int(i) for i in mesh.face_vertex_indices],
            "subdivisionScheme": "none",  # the faces as they are, not a smoothed surface
            "extent": _extent(mesh.points.min(axis=0), mesh.points.max(axis=0)),
        }
    else:
        raise ValueError(f"the isaac backend builds no shape '{part.shape}'")
    r, g, b, a = _floats(part.rgba)
    return GeomPrim(path, type_name, attributes, pose, scale, (r, g, b), a, approximation)


def translate_object(obj: ObjectSpec, robot: RobotSpec | None = None, tcp_offset: float = TCP_OFFSET) -> BodyPrim:
    """An object of a checked world (world.check_object) as prims; `robot` is the one it is mounted on."""
    path = f"{OBJECTS_ROOT}/{obj.name}"
    local = Pose.from_rpy(obj.position, obj.rpy)
    kind = obj.mount_kind
    joint = None
    if kind == "world":
        pose = local
    else:
        if robot is None:
            raise ValueError(f"object '{obj.name}' is mounted on '{obj.mount}': its robot is needed")
        flange, ee = robot_poses(robot, tcp_offset)
        pose = (flange if kind == "flange" else ee) * local
        if kind == "flange":
            joint = JointPrim(f"{path}/flange_joint", robot.namespace, HAND_LINK, flange_in_hand() * local)
    rigid = obj.mass > 0.0 or kind == "flange"
    mass = obj.mass if rigid else 0.0
    density = DEFAULT_DENSITY if rigid and mass == 0.0 else 0.0
    parts = tuple(translate_part(p, f"{path}/part{i}") for i, p in enumerate(obj.solids()))
    material = MaterialPrim(f"{MATERIALS_ROOT}/object_{obj.name}", obj.friction, obj.friction)
    return BodyPrim(
        name=obj.name,
        path=path,
        mount=kind,
        robot=obj.mount_robot,
        pose=pose,
        local_pose=local,
        rigid=rigid,
        mass=mass,
        density=density,
        disable_gravity=kind == "flange",
        parts=parts,
        material=material,
        joint=joint,
    )


def translate_world(world: WorldSpec, tcp_offset: float = TCP_OFFSET) -> tuple[BodyPrim, ...]:
    """Every object of the world, in its order."""
    robots = {r.namespace: r for r in world.robots}
    return tuple(translate_object(o, robots.get(o.mount_robot), tcp_offset) for o in world.objects)


def world_frame_names(bodies: Sequence[BodyPrim]) -> tuple[str, ...]:
    """The objects published in the world frame: all but the tools on a flange (those are the robot's)."""
    return tuple(b.name for b in bodies if b.mount != "flange")
