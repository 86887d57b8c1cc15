"""The URDF made from the MuJoCo model (backends/mujoco_urdf.py), for each gripper: a tree of the
robot's links whose joints, meshes and forward kinematics agree with MuJoCo's. Pure: no ROS."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections import defaultdict

import mujoco
import numpy as np
import pytest
from scipy.spatial import cKDTree
from scipy.spatial.transform import Rotation

from isaac_franka_bridge.backends.mujoco_backend import _frame_name, build_model, ros_joint_name
from isaac_franka_bridge.backends.mujoco_grippers import GRIPPERS
from isaac_franka_bridge.backends.mujoco_urdf import urdf_from_model

ROOT = "panda_link0"
ARM_JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
Pose = tuple[np.ndarray, Rotation]


@pytest.fixture(scope="module", params=sorted(GRIPPERS))
def described(request) -> tuple[mujoco.MjModel, ET.Element]:
    model = build_model(gripper=GRIPPERS[request.param])
    return model, ET.fromstring(urdf_from_model(model, _frame_name, ros_joint_name))


def _floats(text: str | None) -> np.ndarray:
    return np.array((text or "0 0 0").split(), dtype=float)


def _origin(element: ET.Element) -> Pose:
    origin = element.find("origin")
    if origin is None:
        return np.zeros(3), Rotation.identity()
    return _floats(origin.get("xyz")), Rotation.from_euler("xyz", _floats(origin.get("rpy")))


def _robot_joints(model: mujoco.MjModel) -> dict[str, int]:
    """ROS name -> MuJoCo id of the robot's joints (all but the cube's free joint)."""
    free = mujoco.mjtJoint.mjJNT_FREE
    return {ros_joint_name(model.joint(j).name): j for j in range(model.njnt) if model.jnt_type[j] != free}


def test_links_and_joints(described):
    model, robot = described
    assert robot.tag == "robot" and robot.get("name") == "panda"
    links = [link.get("name") for link in robot.iter("link")]
    assert len(links) == len(set(links))
    assert {f"panda_link{i}" for i in range(9)} <= set(links)
    assert "cube" not in links
    joints = {joint.get("name"): joint for joint in robot.iter("joint")}
    assert len(joints) == len(robot.findall("joint"))
    for name, j in _robot_joints(model).items():  # the arm's 7 and the gripper's, with the model's limits
        expected = "revolute" if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE else "prismatic"
        assert joints[name].get("type") == expected, name
        limit = joints[name].find("limit")
        assert [float(limit.get("lower")), float(limit.get("upper"))] == pytest.approx(model.jnt_range[j], abs=1e-12)
        assert _floats(joints[name].find("axis").get("xyz")) == pytest.approx(model.jnt_axis[j])
    assert all(joints[name].get("type") == "revolute" for name in ARM_JOINTS)


def test_links_form_a_tree_rooted_at_link0(described):
    _, robot = described
    links = {link.get("name") for link in robot.iter("link")}
    children: dict[str, list[str]] = defaultdict(list)
    parent_of: dict[str, str] = {}
    for joint in robot.iter("joint"):
        parent, child = joint.find("parent").get("link"), joint.find("child").get("link")
        assert parent in links and child in links, joint.get("name")
        assert child not in parent_of, f"{child} has two parents"
        parent_of[child] = parent
        children[parent].append(child)
    assert links - set(parent_of) == {ROOT}
    reached, todo = set(), [ROOT]
    while todo:
        link = todo.pop()
        assert link not in reached, "cycle"
        reached.add(link)
        todo.extend(children[link])
    assert reached == links


def _mesh_vertices(path: str) -> np.ndarray:
    """The vertices of an OBJ or binary STL file."""
    if path.endswith(".obj"):
        with open(path) as f:
            return np.array([line.split()[1:4] for line in f if line.startswith("v ")], dtype=float)
    with open(path, "rb") as f:
        f.seek(80)
        count = int(np.frombuffer(f.read(4), np.uint32)[0])
        facets = np.frombuffer(f.read(50 * count), np.dtype([("normal", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]))
    return facets["v"].reshape(-1, 3).astype(float)


def test_meshes_are_existing_files_placed_as_in_mujoco(described):
    model, robot = described
    bodies = {_frame_name(model.body(b).name): b for b in range(1, model.nbody)}
    mesh_paths = {m: model.paths[model.mesh_pathadr[m] :].split(b"\0", 1)[0].decode() for m in range(model.nmesh)}
    checked = 0
    for link in robot.iter("link"):
        for visual in link.iter("visual"):
            mesh = visual.find("geometry/mesh")
            if mesh is None:
                continue
            filename = mesh.get("filename")
            assert filename.startswith("file:///")
            path = filename.removeprefix("file://")
            assert os.path.isfile(path), path
            # each vertex MuJoCo compiled from the file, in the body frame, is a file vertex as the URDF places it
            body = bodies[link.get("name")]
            geoms = [
                g
                for g in range(model.body_geomadr[body], model.body_geomadr[body] + model.body_geomnum[body])
                if model.geom_dataid[g] >= 0 and path.endswith("/" + mesh_paths[model.geom_dataid[g]])
            ]
            assert geoms, path
            geom = geoms[0]
            m = model.geom_dataid[geom]
            position, rotation = _origin(visual)
            from_file = position + rotation.apply(_floats(mesh.get("scale")) * _mesh_vertices(path))
            compiled = model.mesh_vert[model.mesh_vertadr[m] : model.mesh_vertadr[m] + model.mesh_vertnum[m]]
            compiled = model.geom_pos[geom] + Rotation.from_quat(model.geom_quat[geom][[1, 2, 3, 0]]).apply(compiled)
            assert cKDTree(from_file).query(compiled)[0].max() < 1e-5, path
            checked += 1
    assert checked >= 10
    for i in range(8):
        assert robot.find(f"link[@name='panda_link{i}']/visual/geometry/mesh") is not None


def _forward(robot: ET.Element, q: dict[str, float]) -> dict[str, Pose]:
    """Forward kinematics of the URDF: every link's pose in the root link's frame."""
    by_parent: dict[str, list[ET.Element]] = defaultdict(list)
    for joint in robot.iter("joint"):
        by_parent[joint.find("parent").get("link")].append(joint)
    poses, todo = {ROOT: (np.zeros(3), Rotation.identity())}, [ROOT]
    while todo:
        parent = todo.pop()
        position, rotation = poses[parent]
        for joint in by_parent[parent]:
            offset, turn = _origin(joint)
            position_j, rotation_j = position + rotation.apply(offset), rotation * turn
            value = q.get(joint.get("name"), 0.0)
            if joint.get("type") in ("revolute", "continuous"):
                rotation_j = rotation_j * Rotation.from_rotvec(value * _floats(joint.find("axis").get("xyz")))
            elif joint.get("type") == "prismatic":
                position_j = position_j + rotation_j.apply(value * _floats(joint.find("axis").get("xyz")))
            child = joint.find("child").get("link")
            poses[child] = (position_j, rotation_j)
            todo.append(child)
    return poses


@pytest.mark.parametrize("move_gripper", [False, True])
def test_forward_kinematics_matches_mujoco(described, move_gripper):
    model, robot = described
    rng = np.random.default_rng(7)
    data = mujoco.MjData(model)
    q = {}
    for name, j in _robot_joints(model).items():
        if name in ARM_JOINTS or move_gripper:
            q[name] = rng.uniform(*model.jnt_range[j])
            data.qpos[model.jnt_qposadr[j]] = q[name]
    mujoco.mj_forward(model, data)
    poses = _forward(robot, q)
    base = model.body("link0").id
    base_position, base_rotation = data.xpos[base], Rotation.from_quat(data.xquat[base][[1, 2, 3, 0]])
    compared = []
    for body in range(1, model.nbody):
        link = _frame_name(model.body(body).name)
        if link not in poses:
            continue
        position = base_rotation.inv().apply(data.xpos[body] - base_position)
        rotation = base_rotation.inv() * Rotation.from_quat(data.xquat[body][[1, 2, 3, 0]])
        assert np.abs(poses[link][0] - position).max() < 1e-6, link
        assert (poses[link][1].inv() * rotation).magnitude() < 1e-6, link
        compared.append(link)
    assert "panda_link7" in compared and len(compared) >= 10
