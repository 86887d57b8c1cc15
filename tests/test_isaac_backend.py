"""The Isaac Sim backend, as far as it can be checked without a GPU.

Isaac Sim cannot start without an NVIDIA RTX GPU and driver (and is not installed in the CPU
development environment), so these tests check the import guard, the interface, the backend's
pure-numpy geometry and the translation of the world's objects into USD prims (isaac_scene.py),
against MuJoCo's build of the same description where it has the numbers; the pxr code that authors
those prims runs on usd-core's stage where `pxr` can be imported (skipped otherwise). The real check
of the backend (physics, kinematics, Jacobian, tracking, external forces, objects) is
scripts/gpu_check.sh, run on a GPU host.
"""

from __future__ import annotations

import glob
import inspect
import math
import os
import re
import struct

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from franka_server_ros2.camera_specs import load_cameras
from isaac_franka_bridge.backends import check_backend, create_world
from isaac_franka_bridge.backends.base import PhysicsRobot, PhysicsWorld
from isaac_franka_bridge.backends.isaac_backend import (
    IsaacRobot,
    IsaacWorld,
    author_bodies,
    clamp_motor_torque,
    matrix_to_quat_xyzw,
    quat_multiply_wxyz,
    quat_wxyz_to_matrix,
    rot_z,
    shift_jacobian,
)
from isaac_franka_bridge.backends.isaac_scene import (
    DEFAULT_DENSITY,
    HULL_VERTEX_LIMIT,
    BodyPrim,
    GeomPrim,
    MaterialPrim,
    Pose,
    translate_world,
    world_frame_names,
)
from isaac_franka_bridge.world import (
    ObjectSpec,
    PartSpec,
    RobotSpec,
    WorldSpec,
    check_world,
    load_world,
    one_robot_world,
)

CONFIG = os.path.join(os.path.dirname(__file__), "..", "config")
CAMERAS = os.path.join(CONFIG, "cameras.yaml")
DUAL_ARM = os.path.join(CONFIG, "tasks", "dual_arm.yaml")


def isaac_sim_installed() -> bool:
    """True where Isaac Sim itself (not only the ROS 2 bundle of isaacsim-ros2) can be imported."""
    try:
        from isaacsim import SimulationApp  # noqa: F401
    except ImportError:
        return False
    return True


def test_isaac_backend_without_isaac_sim_fails_with_a_clear_message():
    if isaac_sim_installed():
        pytest.skip("Isaac Sim is installed here: the guard does not apply (scripts/gpu_check.sh checks the backend)")
    with pytest.raises(RuntimeError) as error:
        create_world("isaac", one_robot_world("Franka"))
    message = str(error.value)
    assert "Isaac Sim 6 is not installed" in message
    assert "NVIDIA RTX GPU" in message
    assert "backend:=mujoco" in message


@pytest.mark.parametrize(("own", "interface"), [(IsaacRobot, PhysicsRobot), (IsaacWorld, PhysicsWorld)])
def test_isaac_backend_defines_every_abstract_method_of_the_interface(own, interface):
    assert issubclass(own, interface)
    assert not own.__abstractmethods__
    for name in sorted(interface.__abstractmethods__):
        implementation = getattr(own, name)
        assert implementation is not getattr(interface, name), f"{name} is not overridden"
        expected = list(inspect.signature(getattr(interface, name)).parameters)
        parameters = list(inspect.signature(implementation).parameters)
        assert parameters[: len(expected)] == expected, f"{name}{parameters} does not take the interface's {expected}"
    parameters = inspect.signature(own.__init__).parameters
    assert parameters["timestep"].default == 0.001
    assert parameters["headless"].default is True


@pytest.mark.parametrize(
    ("world", "reason"),
    [
        (one_robot_world("Robotiq"), "the isaac backend mounts no gripper_type 'Robotiq' (it has Franka)"),
        (
            one_robot_world("Franka", load_cameras(CAMERAS)),
            "the isaac backend renders no cameras: set cameras_config:=none",
        ),
        (load_world(DUAL_ARM), "the isaac backend simulates at most 1 robot(s); the world has 2"),
    ],
)
def test_a_world_the_isaac_backend_cannot_simulate_is_refused_before_isaac_sim_loads(world, reason):
    """Capabilities are data: the refusal comes before any import of Isaac Sim (one FATAL line at start)."""
    with pytest.raises(ValueError, match=re.escape(reason)):
        check_backend("isaac", world)


def test_quaternion_helpers_agree_with_each_other():
    rng = np.random.default_rng(0)
    for _ in range(50):
        wxyz = rng.normal(size=4)
        wxyz /= np.linalg.norm(wxyz)
        rotation = quat_wxyz_to_matrix(wxyz)
        np.testing.assert_allclose(rotation @ rotation.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(rotation) == pytest.approx(1.0)
        xyzw = matrix_to_quat_xyzw(rotation)
        expected = np.array([*wxyz[1:], wxyz[0]]) * np.sign(wxyz[0])
        np.testing.assert_allclose(xyzw, expected, atol=1e-9)
        other = rng.normal(size=4)
        product = quat_multiply_wxyz(wxyz, other / np.linalg.norm(other))[0]
        np.testing.assert_allclose(quat_wxyz_to_matrix(product), rotation @ quat_wxyz_to_matrix(other), atol=1e-12)


ARM_XML = """
<mujoco>
  <worldbody>
    <body name="a" pos="0 0 0.3">
      <joint type="hinge" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="b" pos="0.3 0 0" quat="0.9 0.3 0.2 0.1">
        <joint type="hinge" axis="0 1 0"/>
        <geom type="box" pos="0.1 0.02 -0.03" size="0.1 0.03 0.02"/>
        <site name="ee" pos="0.25 -0.04 0.1"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_jacobian_shift_from_the_centre_of_mass_to_the_end_effector():
    """PhysX gives link Jacobians at the centre of mass; shifted to the EE they equal the EE Jacobian.

    Checked against MuJoCo's exact body-COM and site Jacobians of a small arm."""
    model = mujoco.MjModel.from_xml_string(ARM_XML)
    data = mujoco.MjData(model)
    data.qpos[:] = [0.4, -0.7]
    mujoco.mj_forward(model, data)
    body, site = model.body("b").id, model.site("ee").id
    jac_com = np.zeros((6, model.nv))
    jac_ee = np.zeros((6, model.nv))
    mujoco.mj_jacBodyCom(model, data, jac_com[:3], jac_com[3:], body)
    mujoco.mj_jacSite(model, data, jac_ee[:3], jac_ee[3:], site)
    assert np.linalg.norm(data.xipos[body] - data.site_xpos[site]) > 0.1  # a real shift
    shifted = shift_jacobian(jac_com, data.xipos[body], data.site_xpos[site])
    np.testing.assert_allclose(shifted, jac_ee, atol=1e-12)


def test_torque_limits_apply_to_the_motor_total_including_gravity():
    gravity = np.array([0.0, -30.0, 0.0, 20.0, 0.0, 2.0, 0.0])
    tau = np.array([100.0, -70.0, 5.0, 80.0, -20.0, 11.0, 0.5])
    applied = clamp_motor_torque(tau, gravity)
    np.testing.assert_allclose(applied + gravity, [87.0, -87.0, 5.0, 87.0, -12.0, 12.0, 0.5])


# ---------------------------------------------------------------------------------- the world's objects as prims
# isaac_scene.py translates world.py's description into USD prims without Isaac Sim; these check its
# numbers, against MuJoCo's build of the same description where MuJoCo has them.
TASKS = sorted(glob.glob(os.path.join(CONFIG, "tasks", "*.yaml")))
SQRT_HALF = math.sqrt(0.5)


def franka_world(*objects: ObjectSpec, **robot) -> WorldSpec:
    return check_world([RobotSpec(gripper_type="Franka", cameras_config="", **robot)], objects)


def world_pose(body: BodyPrim, part: GeomPrim) -> Pose:
    return body.pose * part.pose


def test_the_default_cube_is_a_rigid_cube_of_its_mass_scaled_to_its_extents():
    (body,) = translate_world(one_robot_world("Franka"))
    assert (body.name, body.path, body.mount) == ("cube", "/World/objects/cube", "world")
    assert body.rigid and body.mass == 0.1 and body.density == 0.0 and not body.disable_gravity
    assert body.joint is None
    np.testing.assert_allclose(body.pose.position, (0.55, 0.0, 0.02))
    # rpy (0, 0, -pi/4): Gf.Quatf's order, real part first
    np.testing.assert_allclose(body.pose.orient, (math.cos(math.pi / 8), 0.0, 0.0, -math.sin(math.pi / 8)))
    (part,) = body.parts
    assert (part.path, part.type_name, part.approximation) == ("/World/objects/cube/part0", "Cube", "")
    assert part.attributes == {"size": 1.0, "extent": ((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5))}
    assert part.scale == (0.04, 0.04, 0.04)
    assert part.pose == Pose()
    assert part.display_color == (0.8, 0.2, 0.2) and part.display_opacity == 1.0
    assert body.material == MaterialPrim("/World/Physics_Materials/object_cube", 1.0, 1.0, 0.0, "max")


@pytest.mark.parametrize(
    ("shape", "size", "type_name", "attributes", "scale"),
    [
        ("box", (0.02, 0.04, 0.06), "Cube", {"size": 1.0, "extent": ((-0.5,) * 3, (0.5,) * 3)}, (0.02, 0.04, 0.06)),
        (
            "cylinder",
            (0.03, 0.1),
            "Cylinder",
            {"radius": 0.03, "height": 0.1, "axis": "Z", "extent": ((-0.03, -0.03, -0.05), (0.03, 0.03, 0.05))},
            (1.0, 1.0, 1.0),
        ),
        ("sphere", (0.025,), "Sphere", {"radius": 0.025, "extent": ((-0.025,) * 3, (0.025,) * 3)}, (1.0, 1.0, 1.0)),
    ],
)
def test_primitive_solids_become_usd_primitives_of_their_size(shape, size, type_name, attributes, scale):
    (body,) = translate_world(franka_world(ObjectSpec("thing", shape, size, mass=0.3)))
    (part,) = body.parts
    assert part.type_name == type_name and part.approximation == ""
    assert set(part.attributes) == set(attributes)
    for name, value in attributes.items():
        if name == "axis":
            assert part.attributes[name] == value
        else:
            np.testing.assert_allclose(part.attributes[name], value, rtol=1e-12)
    np.testing.assert_allclose(part.scale, scale, rtol=1e-12)


def test_an_ellipsoid_is_the_convex_hull_of_a_unit_sphere_mesh_scaled_by_its_semi_axes():
    """PhysX collides a non-uniformly scaled Sphere as a sphere: an ellipsoid is a Mesh, within the hull limits."""
    (body,) = translate_world(franka_world(ObjectSpec("egg", "ellipsoid", (0.04, 0.05, 0.07), mass=0.06)))
    (part,) = body.parts
    assert (part.type_name, part.approximation) == ("Mesh", "convexHull")
    np.testing.assert_allclose(part.scale, (0.02, 0.025, 0.035))  # the semi-axes
    points = np.array(part.attributes["points"])
    np.testing.assert_allclose(np.linalg.norm(points, axis=1), 1.0, rtol=1e-12)
    counts, indices = part.attributes["faceVertexCounts"], part.attributes["faceVertexIndices"]
    assert len(points) <= HULL_VERTEX_LIMIT and len(counts) <= HULL_VERTEX_LIMIT  # PhysX: at most 255 of each
    assert sum(counts) == len(indices) and set(indices) == set(range(len(points)))
    assert part.attributes["subdivisionScheme"] == "none"
    np.testing.assert_allclose(part.attributes["extent"], ((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)))
    # closed and facing outward: every edge once each way, a positive volume close to the sphere's
    faces, start = [], 0
    for count in counts:
        faces.append(indices[start : start + count])
        start += count
    edges = [(f[i], f[(i + 1) % len(f)]) for f in faces for i in range(len(f))]
    assert len(set(edges)) == len(edges) and {(b, a) for a, b in edges} == set(edges)
    volume = sum(
        np.dot(points[f[0]], np.cross(points[f[i]], points[f[i + 1]])) / 6.0
        for f in faces
        for i in range(1, len(f) - 1)
    )
    assert 0.95 * 4.0 / 3.0 * math.pi < volume < 4.0 / 3.0 * math.pi
    # flat faces (so the hull has as many faces as the mesh), none more than 2.1 % inside the sphere
    for face in faces:
        normal = np.cross(points[face[1]] - points[face[0]], points[face[2]] - points[face[0]])
        distances = points[face] @ (normal / np.linalg.norm(normal))
        assert np.ptp(distances) < 1e-12 and 0.979 < distances[0] < 1.0


def test_quaternions_are_real_part_first_and_rpy_is_extrinsic_xyz():
    np.testing.assert_allclose(Pose.from_rpy((0, 0, 0), (math.pi / 2, 0, 0)).orient, (SQRT_HALF, SQRT_HALF, 0, 0))
    np.testing.assert_allclose(Pose.from_rpy((0, 0, 0), (0, 0, math.pi / 2)).orient, (SQRT_HALF, 0, 0, SQRT_HALF))
    rpy = (0.3, -0.4, 1.1)
    x, y, z, w = Rotation.from_euler("xyz", rpy).as_quat() * np.sign(Rotation.from_euler("xyz", rpy).as_quat()[3])
    np.testing.assert_allclose(Pose.from_rpy((0, 0, 0), rpy).orient, (w, x, y, z), atol=1e-15)
    # extrinsic x, y, z: roll first, about the fixed axes (= Rz Ry Rx)
    expected = rot_z(1.1) @ Rotation.from_euler("y", -0.4).as_matrix() @ Rotation.from_euler("x", 0.3).as_matrix()
    np.testing.assert_allclose(quat_wxyz_to_matrix(Pose.from_rpy((0, 0, 0), rpy).orient), expected, atol=1e-12)


def test_a_solid_is_posed_in_the_world_by_the_objects_pose_then_its_own():
    """By hand: the object at (1, 2, 0.5) turned 90 deg about z, the solid 10 cm along the object's x and
    turned 90 deg more: the solid is 10 cm along the world's y, turned 180 deg."""
    part = PartSpec("box", (0.02, 0.02, 0.02), (0.1, 0.0, 0.0), (0.0, 0.0, math.pi / 2))
    (body,) = translate_world(
        franka_world(ObjectSpec("thing", position=(1.0, 2.0, 0.5), rpy=(0, 0, math.pi / 2), parts=(part,)))
    )
    np.testing.assert_allclose(body.parts[0].pose.position, (0.1, 0.0, 0.0))
    np.testing.assert_allclose(body.parts[0].pose.orient, (SQRT_HALF, 0.0, 0.0, SQRT_HALF))
    pose = world_pose(body, body.parts[0])
    np.testing.assert_allclose(pose.position, (1.0, 2.1, 0.5), atol=1e-15)
    np.testing.assert_allclose(pose.orient, (0.0, 0.0, 0.0, 1.0), atol=1e-15)


def test_every_solid_stands_in_the_world_where_mujoco_puts_it():
    """A compound object of every primitive, each solid posed and coloured: the same world poses as MuJoCo's geoms."""
    parts = (
        PartSpec("box", (0.06, 0.04, 0.02), (0.02, -0.01, 0.0), (0.1, 0.2, 0.3), (0.1, 0.2, 0.3, 1.0)),
        PartSpec("cylinder", (0.015, 0.08), (0.0, 0.03, 0.04), (math.pi / 2, 0.0, 0.4)),
        PartSpec("sphere", (0.02,), (-0.03, 0.0, 0.05)),
        PartSpec("ellipsoid", (0.02, 0.03, 0.05), (0.0, -0.04, 0.01), (0.0, 0.5, -0.2), (0.0, 0.0, 1.0, 0.5)),
    )
    objects = (
        ObjectSpec("gadget", position=(0.5, 0.1, 0.3), rpy=(0.3, -0.2, 1.0), mass=0.4, parts=parts, rgba=(1, 1, 0, 1)),
        ObjectSpec("post", "cylinder", (0.02, 0.3), (0.4, -0.3, 0.15), (0.0, 0.1, 0.0), 0.0),
    )
    world = franka_world(*objects)
    mujoco_world = create_world("mujoco", world)
    model, data = mujoco_world.model, mujoco_world.data
    for body in translate_world(world):
        for i, part in enumerate(body.parts):
            geom = model.geom(body.name if i == 0 else f"{body.name}_{i}").id
            pose = world_pose(body, part)
            np.testing.assert_allclose(pose.position, data.geom_xpos[geom], atol=1e-12)
            np.testing.assert_allclose(quat_wxyz_to_matrix(pose.orient), data.geom_xmat[geom].reshape(3, 3), atol=1e-12)
            np.testing.assert_allclose((*part.display_color, part.display_opacity), model.geom_rgba[geom], atol=1e-7)
    gadget = translate_world(world)[0]
    assert [p.type_name for p in gadget.parts] == ["Cube", "Cylinder", "Sphere", "Mesh"]
    assert gadget.parts[1].display_color == (1.0, 1.0, 0.0)  # a part without rgba takes the object's


WEDGE = [(0.0, 0.0, 0.0), (0.04, 0.0, 0.0), (0.0, 0.03, 0.0), (0.0, 0.0, 0.02), (0.04, 0.0, 0.02), (0.0, 0.03, 0.02)]
WEDGE_TRIANGLES = [(0, 2, 1), (3, 4, 5), (0, 1, 4), (0, 4, 3), (0, 3, 5), (0, 5, 2), (1, 2, 5), (1, 5, 4)]


def write_wedge_files(directory) -> dict[str, str]:
    """A wedge (6 vertices) as OBJ (triangles and quads, the index forms OBJ allows), binary and ASCII STL."""
    paths = {
        kind: os.path.join(directory, name) for kind, name in [("obj", "w.obj"), ("stl", "w.stl"), ("ascii", "a.stl")]
    }
    with open(paths["obj"], "w") as f:
        f.write("# a wedge\no wedge\n" + "".join(f"v {x!r} {y!r} {z!r}\n" for x, y, z in WEDGE) + "vt 0 0\nvn 0 0 1\n")
        f.write("f 1//1 3//1 2//1\nf 4/1/1 5/1/1 6/1/1\nf 1 2 5 4\nf -6 -2 -1 -4\nf 2/1 3/1 6/1 5/1\n")
    with open(paths["stl"], "wb") as f:  # a header that starts like an ASCII file, as some exporters write
        f.write(b"solid wedge".ljust(80, b" ") + struct.pack("<I", len(WEDGE_TRIANGLES)))
        for t in WEDGE_TRIANGLES:
            f.write(struct.pack("<3f", 0, 0, 0) + b"".join(struct.pack("<3f", *WEDGE[i]) for i in t) + b"\0\0")
    with open(paths["ascii"], "w") as f:
        f.write("solid wedge\n")
        for t in WEDGE_TRIANGLES:
            corners = "".join("      vertex {!r} {!r} {!r}\n".format(*WEDGE[i]) for i in t)
            f.write(f"  facet normal 0 0 0\n    outer loop\n{corners}    endloop\n  endfacet\n")
        f.write("endsolid wedge\n")
    return paths


def test_mesh_files_are_read_as_mujoco_reads_them(tmp_path):
    """OBJ and binary STL vertices, scaled and posed: the same points in the world as MuJoCo's meshes."""
    paths = write_wedge_files(tmp_path)
    objects = (
        ObjectSpec("obj", "mesh", (1.0, 2.0, 0.5), (0.3, 0.0, 0.1), (0.3, -0.2, 0.0), 0.0, mesh=paths["obj"]),
        ObjectSpec("stl", "mesh", (1.5, 1.0, 2.0), (0.3, 0.1, 0.1), (0.3, -0.2, 0.5), 0.1, mesh=paths["stl"]),
        ObjectSpec(
            "pair",
            position=(0.4, -0.3, 0.2),
            rpy=(0.1, 0.2, 0.3),
            mass=0.2,
            parts=(
                PartSpec("box", (0.01, 0.01, 0.01)),
                PartSpec("mesh", (2.0, 1.0, 1.5), (0.01, 0.02, 0.03), (0.5, 0.1, -0.2), mesh=paths["stl"]),
            ),
        ),
    )
    world = franka_world(*objects)
    mujoco_world = create_world("mujoco", world)
    model, data = mujoco_world.model, mujoco_world.data
    bodies = translate_world(world)
    obj = bodies[0].parts[0].attributes
    assert obj["faceVertexCounts"] == [3, 3, 4, 4, 4]  # OBJ faces as they are, quads included
    assert obj["faceVertexIndices"][:6] == [0, 2, 1, 3, 4, 5] and obj["faceVertexIndices"][10:14] == [0, 4, 5, 2]
    stl = bodies[1].parts[0].attributes
    assert stl["faceVertexCounts"] == [3] * 8 and len(stl["points"]) == 6  # 8 triangles on 6 corners, merged
    for body, geom_name in [(bodies[0], "obj"), (bodies[1], "stl"), (bodies[2], "pair_1")]:
        part = body.parts[-1]
        assert (part.type_name, part.approximation) == ("Mesh", "convexHull")
        pose = world_pose(body, part)
        mine = np.asarray(pose.position) + Rotation.from_matrix(quat_wxyz_to_matrix(pose.orient)).apply(
            np.array(part.attributes["points"]) * part.scale
        )
        geom = model.geom(geom_name).id
        mesh = model.geom_dataid[geom]
        vertices = model.mesh_vert[model.mesh_vertadr[mesh] : model.mesh_vertadr[mesh] + model.mesh_vertnum[mesh]]
        theirs = data.geom_xpos[geom] + vertices @ data.geom_xmat[geom].reshape(3, 3).T
        assert len(mine) == len(theirs) == 6
        gaps = np.linalg.norm(mine[:, None, :] - theirs[None, :, :], axis=2)
        assert gaps.min(axis=1).max() < 1e-6 and gaps.min(axis=0).max() < 1e-6
        np.testing.assert_allclose(part.attributes["extent"], (np.min(WEDGE, axis=0), np.max(WEDGE, axis=0)), atol=1e-7)


def test_an_ascii_stl_file_gives_the_mesh_of_its_binary_twin(tmp_path):
    """MuJoCo reads binary STL only; the Isaac backend reads both, to the same mesh."""
    paths = write_wedge_files(tmp_path)
    binary, ascii = (
        translate_world(franka_world(ObjectSpec("wedge", "mesh", (1.0, 1.0, 1.0), mass=0.1, mesh=paths[kind])))[0]
        for kind in ("stl", "ascii")
    )
    assert ascii.parts[0].attributes["faceVertexIndices"] == binary.parts[0].attributes["faceVertexIndices"]
    np.testing.assert_allclose(ascii.parts[0].attributes["points"], binary.parts[0].attributes["points"], atol=1e-7)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("thing.ply", "ply\n", "the isaac backend reads .obj and .stl files"),
        ("bad.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n", "line 4: cannot read 'f 1 2 7'"),
        ("flat.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "has no solid to build"),
        ("empty.stl", "solid nothing\nendsolid nothing\n", "has no solid to build"),
    ],
)
def test_a_mesh_the_backend_cannot_build_is_refused_before_isaac_sim_starts(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    world = franka_world(ObjectSpec("thing", "mesh", (1.0, 1.0, 1.0), mass=0.1, mesh=str(path)))
    with pytest.raises(ValueError, match=re.escape(message)):
        translate_world(world)
    if not isaac_sim_installed():  # IsaacWorld translates first: the error, not "Isaac Sim is not installed"
        with pytest.raises(ValueError, match=re.escape(message)):
            IsaacWorld(world)


BOX = dict(shape="box", size=(0.03, 0.03, 0.03), position=(0.01, -0.02, 0.05), rpy=(0.2, 0.0, -0.3))


@pytest.mark.parametrize(
    ("mount", "mass", "rigid", "mass_authored", "density", "gravity_off", "jointed"),
    [
        ("world", 0.3, True, 0.3, 0.0, False, False),  # a free object
        ("world", 0.0, False, 0.0, 0.0, False, False),  # fixed: static colliders
        ("flange", 0.2, True, 0.2, 0.0, True, True),  # a tool: jointed, carried by the robot
        ("flange", 0.0, True, 0.0, DEFAULT_DENSITY, True, True),  # ... weighing its volume (MuJoCo's density)
        ("gripper", 0.1, True, 0.1, 0.0, False, False),  # held at start, then free
    ],
)
def test_mass_and_mount_decide_the_physics_of_an_object(
    mount, mass, rigid, mass_authored, density, gravity_off, jointed
):
    (body,) = translate_world(franka_world(ObjectSpec("thing", **BOX, mass=mass, mount=mount)))
    assert body.mount == mount
    assert (body.rigid, body.mass, body.density, body.disable_gravity) == (rigid, mass_authored, density, gravity_off)
    assert (body.joint is not None) == jointed
    assert body.local_pose == Pose.from_rpy(BOX["position"], BOX["rpy"])
    if mount == "world":
        assert body.pose == body.local_pose
    if jointed:  # fixed to the hand link (the flange turned -45 deg about z, same origin)
        joint = body.joint
        assert (joint.path, joint.robot, joint.link) == ("/World/objects/thing/flange_joint", "", "panda_hand")
        assert joint.exclude_from_articulation
        flange_in_hand = quat_wxyz_to_matrix((math.cos(math.pi / 8), 0, 0, math.sin(math.pi / 8)))
        np.testing.assert_allclose(joint.local_pose0.position, flange_in_hand @ BOX["position"], atol=1e-15)
        np.testing.assert_allclose(
            quat_wxyz_to_matrix(joint.local_pose0.orient),
            flange_in_hand @ Rotation.from_euler("xyz", BOX["rpy"]).as_matrix(),
            atol=1e-12,
        )


def test_tools_and_held_objects_start_at_the_robots_reset_pose_as_in_mujoco():
    """Authored where the flange or the end effector is at the reset configuration: MuJoCo's poses there."""
    target = (0.1, -0.3, 0.2, -2.0, 0.1, 1.8, 0.6)
    world = franka_world(
        ObjectSpec("tool", "cylinder", (0.01, 0.06), (0.0, 0.02, 0.03), (0.0, 0.3, 0.0), 0.05, mount="flange"),
        ObjectSpec("held", **BOX, mass=0.1, mount="gripper"),
        base_position=(0.1, 0.2, 0.0),
        base_yaw=0.4,
        reset_joint_target=target,
    )
    mujoco_world = create_world("mujoco", world)
    robot = mujoco_world.robots[0]
    robot.set_arm_configuration(np.array(target))
    data = mujoco_world.data
    tool, held = translate_world(world)
    tool_body = mujoco_world.model.body("tool").id
    np.testing.assert_allclose(tool.pose.position, data.xpos[tool_body], atol=1e-9)
    # (MuJoCo's model quaternions carry about 7 digits)
    np.testing.assert_allclose(quat_wxyz_to_matrix(tool.pose.orient), data.xmat[tool_body].reshape(3, 3), atol=1e-6)
    ee_rotation = data.site_xmat[robot._ee_site].reshape(3, 3)
    expected = data.site_xpos[robot._ee_site] + ee_rotation @ np.array(BOX["position"])
    np.testing.assert_allclose(held.pose.position, expected, atol=1e-9)
    np.testing.assert_allclose(
        quat_wxyz_to_matrix(held.pose.orient),
        ee_rotation @ Rotation.from_euler("xyz", BOX["rpy"]).as_matrix(),
        atol=1e-6,
    )
    assert world_frame_names((tool, held)) == ("held",)  # the tool is one of the robot's frames


def test_the_isaac_backend_accepts_every_kind_of_object(tmp_path):
    paths = write_wedge_files(tmp_path)
    world = franka_world(
        ObjectSpec("box", "box", (0.04, 0.04, 0.04), mass=0.1),
        ObjectSpec("can", "cylinder", (0.03, 0.1), (0.5, 0.2, 0.05), mass=0.2),
        ObjectSpec("ball", "sphere", (0.02,), (0.5, -0.2, 0.02), mass=0.05),
        ObjectSpec("egg", "ellipsoid", (0.04, 0.04, 0.06), (0.4, 0.2, 0.03), mass=0.06),
        ObjectSpec("wedge", "mesh", (1.0, 1.0, 1.0), (0.4, -0.2, 0.0), mass=0.0, mesh=paths["obj"]),
        ObjectSpec("tool", "box", (0.02, 0.02, 0.04), (0.0, 0.0, 0.02), mass=0.1, mount="flange"),
        ObjectSpec("peg", "cylinder", (0.01, 0.05), (0.0, 0.0, 0.0), mass=0.05, mount="gripper"),
    )
    check_backend("isaac", world)
    bodies = translate_world(world)
    assert [b.name for b in bodies] == [o.name for o in world.objects]
    assert world_frame_names(bodies) == ("box", "can", "ball", "egg", "wedge", "peg")


@pytest.mark.parametrize("path", TASKS, ids=[os.path.basename(p) for p in TASKS])
def test_every_shipped_task_translates(path):
    world = load_world(path)
    bodies = translate_world(world)
    assert [b.name for b in bodies] == [o.name for o in world.objects]
    for body, obj in zip(bodies, world.objects, strict=True):
        assert body.path == f"/World/objects/{obj.name}"
        assert len(body.parts) == len(obj.solids())
        assert {p.type_name for p in body.parts} <= {"Cube", "Cylinder", "Sphere", "Mesh"}
        assert body.rigid == (obj.mass > 0.0 or obj.mount_kind == "flange")
        assert np.isfinite(body.pose.position).all() and math.isclose(np.linalg.norm(body.pose.orient), 1.0)


def test_the_authored_stage_holds_what_the_translation_says(tmp_path):
    """The pxr code that writes the prims (author_bodies), on usd-core's stage where Isaac Sim is absent."""
    pxr = pytest.importorskip("pxr", reason="needs usd-core (pip install usd-core) or Isaac Sim's pxr")
    from pxr import Usd, UsdGeom, UsdPhysics, UsdShade

    paths = write_wedge_files(tmp_path)
    world = franka_world(
        ObjectSpec(
            "gadget",
            position=(0.5, 0.1, 0.3),
            rpy=(0.3, -0.2, 1.0),
            mass=0.4,
            friction=0.7,
            parts=(
                PartSpec("box", (0.06, 0.04, 0.02), (0.02, -0.01, 0.0), (0.1, 0.2, 0.3), (0.1, 0.2, 0.3, 0.5)),
                PartSpec("cylinder", (0.015, 0.08), (0.0, 0.03, 0.04), (math.pi / 2, 0.0, 0.4)),
                PartSpec("sphere", (0.02,), (-0.03, 0.0, 0.05)),
                PartSpec("ellipsoid", (0.02, 0.03, 0.05), (0.0, -0.04, 0.01)),
                PartSpec("mesh", (2.0, 1.0, 1.5), (0.01, 0.02, 0.03), (0.5, 0.1, -0.2), mesh=paths["obj"]),
            ),
        ),
        ObjectSpec("post", "cylinder", (0.02, 0.3), (0.4, -0.3, 0.15), mass=0.0),
        ObjectSpec("tool", "box", (0.02, 0.02, 0.04), (0.0, 0.0, 0.02), (0.0, 0.0, 0.5), 0.0, mount="flange"),
    )
    bodies = translate_world(world)
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.Xform.Define(stage, "/World")
    hand = "/World/franka/panda_hand"
    UsdPhysics.RigidBodyAPI.Apply(UsdGeom.Xform.Define(stage, hand).GetPrim())
    author_bodies(stage, bodies, {"panda_hand": hand})
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())

    def matrix(prim) -> np.ndarray:  # Gf's row-vector matrices, as column-vector 4x4
        return np.array(cache.GetLocalToWorldTransform(prim)).T

    def authored_schemas(prim) -> list[str]:  # PhysxSchema's are not registered in usd-core: the metadata
        schemas = prim.GetMetadata("apiSchemas")
        return list(schemas.GetAddedOrExplicitItems()) if schemas else []

    for body in bodies:
        prim = stage.GetPrimAtPath(body.path)
        assert prim.IsA(UsdGeom.Xform)
        np.testing.assert_allclose(matrix(prim)[:3, 3], body.pose.position, atol=1e-7)
        np.testing.assert_allclose(matrix(prim)[:3, :3], quat_wxyz_to_matrix(body.pose.orient), atol=1e-6)
        assert prim.HasAPI(UsdPhysics.RigidBodyAPI) == body.rigid
        if body.rigid:
            mass = UsdPhysics.MassAPI(prim)
            assert prim.HasAPI(UsdPhysics.MassAPI)
            assert (mass.GetMassAttr().Get() or 0.0) == pytest.approx(body.mass)
            assert (mass.GetDensityAttr().Get() or 0.0) == pytest.approx(body.density)
        assert bool(prim.GetAttribute("physxRigidBody:disableGravity").Get()) == body.disable_gravity
        assert ("PhysxRigidBodyAPI" in authored_schemas(prim)) == body.disable_gravity
        material = UsdShade.Material(stage.GetPrimAtPath(body.material.path))
        friction = UsdPhysics.MaterialAPI(material.GetPrim())
        assert friction.GetStaticFrictionAttr().Get() == pytest.approx(body.material.static_friction)
        assert friction.GetDynamicFrictionAttr().Get() == pytest.approx(body.material.dynamic_friction)
        assert friction.GetRestitutionAttr().Get() == 0.0
        assert material.GetPrim().GetAttribute("physxMaterial:frictionCombineMode").Get() == "max"
        assert "PhysxMaterialAPI" in authored_schemas(material.GetPrim())
        for part in body.parts:
            shape = stage.GetPrimAtPath(part.path)
            assert shape.GetTypeName() == part.type_name and shape.HasAPI(UsdPhysics.CollisionAPI)
            for name, value in part.attributes.items():
                got = shape.GetAttribute(name).Get()
                if isinstance(value, str):
                    assert got == value
                else:
                    np.testing.assert_allclose(np.array(got, dtype=float), np.array(value, dtype=float), rtol=1e-6)
            # the prim's local-to-world transform: object pose, then the part's pose, then its scale
            pose = world_pose(body, part)
            expected = np.eye(4)
            expected[:3, :3] = quat_wxyz_to_matrix(pose.orient) @ np.diag(part.scale)
            expected[:3, 3] = pose.position
            np.testing.assert_allclose(matrix(shape), expected, atol=1e-6)
            gprim = UsdGeom.Gprim(shape)
            np.testing.assert_allclose(gprim.GetDisplayColorAttr().Get()[0], part.display_color, atol=1e-7)
            np.testing.assert_allclose(gprim.GetDisplayOpacityAttr().Get()[0], part.display_opacity, atol=1e-7)
            bound, _ = UsdShade.MaterialBindingAPI(shape).ComputeBoundMaterial("physics")
            assert bound.GetPath() == material.GetPath()
            if part.approximation:
                assert UsdPhysics.MeshCollisionAPI(shape).GetApproximationAttr().Get() == "convexHull"
                assert shape.GetAttribute("physxConvexHullCollision:hullVertexLimit").Get() == 255
                assert "PhysxConvexHullCollisionAPI" in authored_schemas(shape)
    gadget, post, tool = bodies
    assert [stage.GetPrimAtPath(p.path).GetTypeName() for p in gadget.parts] == [
        "Cube",
        "Cylinder",
        "Sphere",
        "Mesh",
        "Mesh",
    ]
    joint = UsdPhysics.FixedJoint(stage.GetPrimAtPath(tool.joint.path))
    assert joint.GetBody0Rel().GetTargets() == [pxr.Sdf.Path(hand)]
    assert joint.GetBody1Rel().GetTargets() == [pxr.Sdf.Path(tool.path)]
    np.testing.assert_allclose(joint.GetLocalPos0Attr().Get(), tool.joint.local_pose0.position, atol=1e-7)
    rotation = joint.GetLocalRot0Attr().Get()
    np.testing.assert_allclose([rotation.GetReal(), *rotation.GetImaginary()], tool.joint.local_pose0.orient, atol=1e-7)
    assert joint.GetExcludeFromArticulationAttr().Get() is True
    assert not stage.GetPrimAtPath(post.path).HasAPI(UsdPhysics.RigidBodyAPI)  # fixed: static colliders
