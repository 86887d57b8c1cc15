"""A URDF robot description made from the compiled MuJoCo model, for RViz (robot_state_publisher).

One link per body of the robot, named as the backend names its TF frames, so that every link frame
is exactly its MuJoCo body frame. Free-floating bodies (the cube) and the bodies hanging from them
are not part of the robot and are left out. Visuals: the geoms MuJoCo renders by default (groups
0..2: the Franka hand's `hand` geom is both visual and collision, in group 0) and the geoms that
never collide (contype = conaffinity = 0); meshes point at the model packages' own files.

Joints: hinge -> revolute (continuous if unlimited), slide -> prismatic, none -> fixed. A hinge whose
axis does not pass through its body's origin (MuJoCo `jnt_pos`, e.g. the 2F-85's followers) turns a
helper link `<link>_joint_anchor` at that point, to which the body's link is fixed.
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from .mujoco_assets import mesh_dirs as default_mesh_dirs

Pose = tuple[np.ndarray, Rotation]

HINGE, SLIDE = mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE
# URDF type, effort [Nm or N], velocity [rad/s or m/s]: generic values, RViz does not use them
JOINT_KINDS = {HINGE: ("revolute", 87.0, 2.175), SLIDE: ("prismatic", 100.0, 0.2)}
DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)  # a geom showing this colour takes its material's


def _rotation(wxyz: np.ndarray) -> Rotation:
    w, x, y, z = wxyz
    return Rotation.from_quat([x, y, z, w])


def _compose(a: Pose, b: Pose) -> Pose:
    return a[0] + a[1].apply(b[0]), a[1] * b[1]


def _numbers(values: Sequence[float]) -> str:
    return " ".join(f"{float(v) if abs(v) > 1e-12 else 0.0:.12g}" for v in values)  # no -0 nor 1e-18


def _add_origin(element: ET.Element, pose: Pose) -> None:
    with warnings.catch_warnings():  # at gimbal lock scipy still returns angles that make the rotation
        warnings.simplefilter("ignore", UserWarning)
        rpy = pose[1].as_euler("xyz")  # URDF rpy: about the fixed x, y, z axes in turn
    ET.SubElement(element, "origin", xyz=_numbers(pose[0]), rpy=_numbers(rpy))


def _mesh_file(model: mujoco.MjModel, mesh: int, mesh_dirs: Sequence[str]) -> str:
    """Absolute path of a mesh's file: MjModel.paths keeps the file name as the MJCF gave it."""
    address = model.mesh_pathadr[mesh]
    if address < 0:
        raise ValueError(f"mesh '{model.mesh(mesh).name}' has no file (vertices given inline)")
    path = model.paths[address:].split(b"\0", 1)[0].decode()
    for candidate in [path] if os.path.isabs(path) else [os.path.join(d, path) for d in mesh_dirs]:
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    raise FileNotFoundError(f"mesh '{model.mesh(mesh).name}': no file {path} under any of {list(mesh_dirs)}")


def _visual(model: mujoco.MjModel, geom: int, mesh_dirs: Sequence[str]) -> ET.Element | None:
    kind, size = model.geom_type[geom], model.geom_size[geom]
    pose = (model.geom_pos[geom], _rotation(model.geom_quat[geom]))
    geometry = ET.Element("geometry")
    if kind == mujoco.mjtGeom.mjGEOM_MESH:
        mesh = model.geom_dataid[geom]
        # MuJoCo moved the mesh's vertices into their inertial frame (mesh_pos, mesh_quat) and the geom
        # the other way: the file's frame is the geom's frame composed with the inverse of that move
        inertial = _rotation(model.mesh_quat[mesh])
        pose = _compose(pose, (-inertial.inv().apply(model.mesh_pos[mesh]), inertial.inv()))
        filename = "file://" + _mesh_file(model, mesh, mesh_dirs)
        ET.SubElement(geometry, "mesh", filename=filename, scale=_numbers(model.mesh_scale[mesh]))
    elif kind == mujoco.mjtGeom.mjGEOM_BOX:
        ET.SubElement(geometry, "box", size=_numbers(2.0 * size))
    elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        ET.SubElement(geometry, "sphere", radius=_numbers(size[:1]))
    elif kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        ET.SubElement(geometry, "cylinder", radius=_numbers(size[:1]), length=_numbers([2.0 * size[1]]))
    else:
        return None  # planes, capsules, ellipsoids, height fields: no URDF primitive
    visual = ET.Element("visual")
    _add_origin(visual, pose)
    visual.append(geometry)
    material = model.geom_matid[geom]
    if material >= 0 and np.allclose(model.geom_rgba[geom], DEFAULT_RGBA) and model.material(material).name:
        name, rgba = model.material(material).name, model.mat_rgba[material]
    else:
        rgba = model.geom_rgba[geom]
        name = "rgba_" + "_".join(f"{v:.3g}" for v in rgba)
    ET.SubElement(ET.SubElement(visual, "material", name=name), "color", rgba=_numbers(rgba))
    return visual


def _add_joint(robot: ET.Element, name: str, kind: str, parent: str, child: str, pose: Pose) -> ET.Element:
    joint = ET.SubElement(robot, "joint", name=name, type=kind)
    _add_origin(joint, pose)
    ET.SubElement(joint, "parent", link=parent)
    ET.SubElement(joint, "child", link=child)
    return joint


def _add_joints(
    robot: ET.Element, model: mujoco.MjModel, body: int, parent: str, child: str, joint_name: Callable[[str], str]
) -> None:
    """The joint(s) that place the body `body` (link `child`) on its parent's link `parent`."""
    pose = (model.body_pos[body], _rotation(model.body_quat[body]))
    if model.body_jntnum[body] == 0:
        _add_joint(robot, f"{child}_fixed", "fixed", parent, child, pose)
        return
    if model.body_jntnum[body] > 1:
        raise ValueError(f"body '{model.body(body).name}' has {model.body_jntnum[body]} joints; a URDF link has one")
    j = model.body_jntadr[body]
    kind = model.jnt_type[j]
    if kind not in JOINT_KINDS:
        raise ValueError(f"joint '{model.joint(j).name}' is a {mujoco.mjtJoint(kind).name}: no URDF counterpart")
    urdf_type, effort, velocity = JOINT_KINDS[kind]
    axis, offset = model.jnt_axis[j], model.jnt_pos[j]
    moving = child
    if kind == HINGE and np.any(offset):
        # a URDF joint turns about an axis through its own origin, and moves its child link's frame
        moving = f"{child}_joint_anchor"
        ET.SubElement(robot, "link", name=moving)
        pose = _compose(pose, (offset, Rotation.identity()))
        _add_joint(robot, f"{child}_fixed", "fixed", moving, child, (-offset, Rotation.identity()))
    # MuJoCo places the body at its body_pos/quat when the joint is at its reference qpos0, URDF at 0
    reference = model.qpos0[model.jnt_qposadr[j]]
    if kind == HINGE:
        pose = (pose[0], pose[1] * Rotation.from_rotvec(-reference * axis))
    else:
        pose = (pose[0] - reference * pose[1].apply(axis), pose[1])
    joint = _add_joint(robot, joint_name(model.joint(j).name), urdf_type, parent, moving, pose)
    ET.SubElement(joint, "axis", xyz=_numbers(axis))
    limit = {"effort": _numbers([effort]), "velocity": _numbers([velocity])}
    if model.jnt_limited[j]:
        limit.update(lower=_numbers(model.jnt_range[j][:1]), upper=_numbers(model.jnt_range[j][1:]))
    elif kind == HINGE:
        joint.set("type", "continuous")
    else:
        raise ValueError(f"slide joint '{model.joint(j).name}' has no range; a URDF prismatic joint needs one")
    ET.SubElement(joint, "limit", limit)


def urdf_from_model(
    model: mujoco.MjModel,
    frame_name: Callable[[str], str],
    joint_name: Callable[[str], str],
    robot_name: str = "panda",
    mesh_dirs: Sequence[str] | None = None,
    root_body: int = 0,
) -> str:
    """The URDF of the robot in `model`: links named frame_name(body name), joints joint_name(MJCF joint
    name) or `<child link>_fixed`. Relative mesh file names are looked up in `mesh_dirs` in turn
    (default: default_mesh_dirs()). The root link's frame is its body's frame, whatever its pose in the
    world (the world body itself has no link). `root_body`: describe only the robot of the subtree of
    this body (a world of several robots); 0: every body fixed to the world."""
    mesh_dirs = default_mesh_dirs() if mesh_dirs is None else mesh_dirs
    robot = ET.Element("robot", name=robot_name)
    kept: set[int] = set()
    roots: list[str] = []
    for body in range(1, model.nbody):  # MuJoCo lists every parent before its children
        parent = int(model.body_parentid[body])
        joints = range(model.body_jntadr[body], model.body_jntadr[body] + model.body_jntnum[body])
        if (parent != 0 and parent not in kept) or any(model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE for j in joints):
            continue  # a free-floating object, or part of one
        if root_body and model.body_rootid[body] != root_body:
            continue  # another robot
        kept.add(body)
        name = frame_name(model.body(body).name)
        link = ET.SubElement(robot, "link", name=name)
        for geom in range(model.body_geomadr[body], model.body_geomadr[body] + model.body_geomnum[body]):
            never_collides = model.geom_contype[geom] == 0 and model.geom_conaffinity[geom] == 0
            if never_collides or model.geom_group[geom] <= 2:
                visual = _visual(model, geom, mesh_dirs)
                if visual is not None:
                    link.append(visual)
        if parent == 0:
            roots.append(name)
        else:
            _add_joints(robot, model, body, frame_name(model.body(parent).name), name, joint_name)
    if len(roots) != 1:
        raise ValueError(f"a URDF has one root link; the bodies fixed to the world are {roots}")
    ET.indent(robot)
    return ET.tostring(robot, encoding="unicode")
