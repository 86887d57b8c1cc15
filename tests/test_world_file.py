"""World files (isaac_franka_bridge/world.py): what they may say, what they refuse, and that MuJoCo
builds the objects they describe with real physics. In process, no ROS."""

from __future__ import annotations

import os
import tempfile

import mujoco
import numpy as np
import pytest

from isaac_franka_bridge.backends import check_backend, create_world
from isaac_franka_bridge.world import DEFAULT_CUBE, ObjectSpec, RobotSpec, check_world, load_world

WORLDS = os.path.join(os.path.dirname(__file__), "..", "config", "tasks")


@pytest.mark.parametrize("name", sorted(f[:-5] for f in os.listdir(WORLDS) if f.endswith(".yaml")))
def test_every_shipped_world_loads_and_round_trips(name):
    from isaac_franka_bridge.world import dump_world

    world = load_world(os.path.join(WORLDS, f"{name}.yaml"))
    path = os.path.join(tempfile.mkdtemp(), "again.yaml")
    with open(path, "w") as f:
        f.write(dump_world(world))
    again = load_world(path)
    assert again.robots == world.robots and again.objects == world.objects and again.places == world.places
    assert [c.name for r in again.robots for c in r.cameras] == [c.name for r in world.robots for c in r.cameras]


def test_the_default_world_has_the_cube_the_tests_pick():
    world = load_world(os.path.join(WORLDS, "pick_cube.yaml"))
    assert world.objects == (DEFAULT_CUBE,)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("robots: [{gripper: Robotiq}]", "unknown keys ['gripper']"),
        ("robots: []", "at least one robot"),
        ("robots: [{namespace: a}, {namespace: a, port: 5001}]", "share a namespace"),
        ("robots: [{namespace: a}, {namespace: b}]", "share an address"),
        ("robots: [{namespace: a}, {port: 5001}]", "each needs a namespace"),
        ("robots: [{base_position: [0, 0]}]", "base_position must be 3 finite numbers"),
        ("robots: [{port: 70000}]", "port 70000 must be 1..65535"),
        ("robots: [{}]\nobjects: [{name: b, shape: cone}]", "shape 'cone' must be one of box, cylinder, sphere"),
        ("robots: [{}]\nobjects: [{name: b, shape: sphere, size: [0.1, 0.2]}]", "size of a sphere must be 1"),
        ("robots: [{}]\nobjects: [{name: b, mass: -1}]", "mass >= 0"),
        ("robots: [{}]\nobjects: [{name: b}, {name: b}]", "must be unique"),
        ("robots: [{}]\nobjects: [{shape: box}]", "needs a name"),
        ("robots: [{}]\nobjects: [{name: 'not a frame'}]", "must be an identifier"),
        ("robots: [", "not valid YAML"),
        ("robots: [{}]\nscene: 1", "the file has unknown keys ['scene']"),
        ("robots: [{controller: torque}]", "controller 'torque' must be one of impedance, wrench"),
        ("robots: [{}]\nobjects: [{name: b, mount: shelf}]", "mount 'shelf' must be one of world, flange, gripper"),
        ("robots: [{}]\nobjects: [{name: b, mount: left/flange}]", "no robot 'left'"),
        ("robots: [{}]\nobjects: [{name: b, mount: gripper}]", "an object a gripper holds needs a mass"),
        ("robots: [{gripper_type: None}]\nobjects: [{name: b, mass: 1, mount: gripper}]", "a robot without one"),
        ("robots: [{}]\nobjects: [{name: b, parts: [{shape: box, size: [1, 1]}]}]", "part 0: size of a box must be 3"),
        ("robots: [{robotiq_open_position: 300}]", "robotiq_open_position 300 must be an integer 0..255"),
        ("robots: [{robotiq_open_position: 17.5}]", "must be an integer 0..255"),
        ("robots: [{}]\nplaces: [{name: holder}]", "place 0 needs a name and an object"),
        ("robots: [{}]\nplaces: [{name: holder, object: b, pose: 1}]", "place 0 has unknown keys ['pose']"),
        ("robots: [{}]\nobjects: [{name: slot}]\nplaces: [{name: h, object: slot}]", "must be one of the world's free"),
        ("robots: [{}]\nobjects: [{name: b, mass: 1}]\nplaces: [{name: 'a b', object: b}]", "must be an identifier"),
        ("robots: [{}]\nobjects: [{name: b, mass: 1}]\nplaces: [{name: h, object: b}, {name: h, object: b}]", "unique"),
        ("robots: [{}]\nobjects: [{name: b, mass: 1}]\nplaces: [{name: h, object: b, position: [0, 0]}]", "3 finite"),
        ("robots: [{}]\nobjects: [{name: b, shape: mesh, size: [1, 1, 1], mesh: nowhere.obj}]", "mesh file"),
        ("robots: [{}]\ntask: {success: {kind: placed, object: b}}", "object 'b' is not one of the world's objects"),
        ("robots: [{}]\nobjects: [{name: b}]\ntask: {success: {kind: placed, object: b}}", "position must be 3"),
        ("robots: [{}]\nobjects: [{name: b}]\ntask: {success: {kind: held, object: b, by: x}}", "by 'x' must name"),
        ("robots: [{}]\nobjects: [{name: b}]\ntask: {success: {kind: held, object: b, above: .nan}}", "above must be"),
        ("robots: [{}]\nobjects: [{name: b}]\ntask: {success: {kind: flipped, object: b, above: 0.3}}", "above is for"),
        ("robots: [{}]\nobjects: [{name: b}]\ntask: {success: {kind: stacked, object: b}}", "kind 'stacked'"),
        ("robots: [{cameras: {w: {serial_number: 1}}}]", "camera 'w'"),
    ],
)
def test_a_bad_world_file_is_refused_with_the_reason(text, reason):
    path = os.path.join(tempfile.mkdtemp(), "world.yaml")
    with open(path, "w") as f:
        f.write(text)
    with pytest.raises(ValueError, match=reason.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        load_world(path)


def test_mujoco_builds_each_shape_fixed_or_free_and_free_ones_come_to_rest_on_the_table():
    objects = (
        ObjectSpec("block", "box", (0.1, 0.06, 0.04), (0.4, 0.4, 0.1), (0.0, 0.0, 0.3), 0.2),
        ObjectSpec("can", "cylinder", (0.03, 0.1), (0.4, -0.4, 0.2), mass=0.3),
        ObjectSpec("ball", "sphere", (0.025,), (-0.4, 0.4, 0.3), mass=0.05),
        ObjectSpec("post", "box", (0.05, 0.05, 0.3), (-0.4, -0.4, 0.15)),  # fixed
    )
    world = create_world("mujoco", check_world([RobotSpec()], objects))
    assert world.frame_names == ("block", "can", "ball", "post")
    mujoco.mj_step(world.model, world.data, 2000)  # 2 s, the arm unactuated far away
    positions, quats = world.frame_poses()
    heights = dict(zip(world.frame_names, positions[:, 2], strict=True))
    assert heights["block"] == pytest.approx(0.02, abs=0.002)  # resting on its 4 cm side
    assert heights["can"] == pytest.approx(0.05, abs=0.002)  # standing on its end
    assert heights["ball"] == pytest.approx(0.025, abs=0.002)
    assert heights["post"] == pytest.approx(0.15, abs=1e-9)  # fixed where it stands
    np.testing.assert_allclose(np.linalg.norm(quats, axis=1), 1.0)


def test_compound_ellipsoid_and_mesh_objects_come_to_rest_as_their_solids_say(tmp_path):
    """A compound (a T of two boxes, its mass spread over them), an ellipsoid and an OBJ mesh (a 4 cm
    tetrahedron-free cube, 8 vertices) scaled by its size."""
    from isaac_franka_bridge.world import PartSpec

    cube = tmp_path / "cube.obj"
    corners = [(x, y, z) for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]
    faces = [(1, 3, 4, 2), (5, 6, 8, 7), (1, 2, 6, 5), (3, 7, 8, 4), (1, 5, 7, 3), (2, 4, 8, 6)]
    cube.write_text(
        "".join(f"v {x} {y} {z}\n" for x, y, z in corners) + "".join(f"f {a} {b} {c} {d}\n" for a, b, c, d in faces)
    )
    tee = ObjectSpec(
        "tee",
        position=(0.4, 0.4, 0.2),
        mass=0.3,
        parts=(PartSpec("box", (0.1, 0.02, 0.02)), PartSpec("box", (0.02, 0.02, 0.08), pos=(0.0, 0.0, -0.05))),
    )
    egg = ObjectSpec("pebble", "ellipsoid", (0.06, 0.04, 0.02), (0.4, -0.4, 0.1), mass=0.05)
    block = ObjectSpec("block", "mesh", (0.04, 0.04, 0.04), (-0.4, 0.4, 0.1), mass=0.1, mesh=str(cube))
    world = create_world("mujoco", check_world([RobotSpec()], (tee, egg, block)))
    assert world.model.body("tee").mass[0] == pytest.approx(0.3)
    mujoco.mj_step(world.model, world.data, 3000)
    positions, _ = world.frame_poses()
    heights = dict(zip(world.frame_names, positions[:, 2], strict=True))
    assert heights["pebble"] == pytest.approx(0.01, abs=0.002)  # lying on its 2 cm axis
    assert heights["block"] == pytest.approx(0.02, abs=0.002)  # the 4 cm mesh cube on a face
    assert heights["tee"] == pytest.approx(0.09, abs=0.003)  # standing on its stem, the bar 9 cm up


def test_a_light_object_pressed_onto_a_fixed_one_does_not_sink_into_it():
    """Objects are as hard as the grippers' pads: a 20 g chip pushed down at 10 N onto a fixed block stays
    on its top: 0.5 mm in (MuJoCo's default contact let it sink 19 mm, and a RAM stick slide through a slot's wall)."""
    anvil = ObjectSpec("anvil", "box", (0.1, 0.1, 0.1), (0.4, 0.4, 0.05))  # fixed, its top 10 cm up
    chip = ObjectSpec("chip", "box", (0.03, 0.03, 0.003), (0.4, 0.4, 0.1015), mass=0.02)
    world = create_world("mujoco", check_world([RobotSpec()], (anvil, chip)))
    world.data.xfrc_applied[world.model.body("chip").id, 2] = -10.0
    mujoco.mj_step(world.model, world.data, 1000)
    positions, _ = world.frame_poses()
    sunk = 0.1015 - positions[list(world.frame_names).index("chip"), 2]
    assert sunk < 0.001, f"sank {1e3 * sunk:.2f} mm"


def test_the_isaac_backend_takes_any_objects_and_refuses_what_it_cannot_simulate():
    """It builds every object kind (tests/test_isaac_backend.py checks the translation); a Robotiq, a
    camera or a second robot stop the launch before Isaac Sim boots."""
    check_backend("isaac", check_world([RobotSpec(gripper_type="Franka")], (ObjectSpec("block"),)))
    with pytest.raises(ValueError, match="mounts no gripper_type 'Robotiq'"):
        check_backend("isaac", check_world([RobotSpec(gripper_type="Robotiq")]))


def test_task_success_is_computed_from_poses_and_contacts():
    """task.py, the ground truth every backend feeds: placed within tolerance, held by one gripper alone,
    flipped onto what it must rest on."""
    import numpy as np

    from isaac_franka_bridge import task
    from isaac_franka_bridge.world import SuccessSpec

    up, down = np.array([0.0, 0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0, 0.0])  # identity; turned over about x
    placed = SuccessSpec("placed", "ram", (0.5, 0.0, 0.2), 0.0025)
    assert task.evaluate(placed, {"ram": (np.array([0.5, 0.001, 0.2]), up)}, []).success
    state = task.evaluate(placed, {"ram": (np.array([0.5, 0.0, 0.207]), up)}, [frozenset(("ram", "gripper"))])
    assert not state.success and state.values["touching"] == "gripper"  # in the hand, 7 mm above where it belongs
    assert state.detail.endswith("touching gripper")
    held = SuccessSpec("held", "bar", by="right")
    pose = {"bar": (np.zeros(3), up)}
    touching = lambda *names: [frozenset(("bar", n)) for n in names]  # noqa: E731
    assert task.evaluate(held, pose, touching("right/gripper")).success
    assert not task.evaluate(held, pose, touching("right/gripper", "left/gripper")).success  # not handed over yet
    assert not task.evaluate(held, pose, touching("right/gripper", "posts")).success  # still resting on the posts
    assert not task.evaluate(held, pose, touching("left/gripper")).success
    # clear of where it rests: a bar that leaves its posts for an instant, brushing the right gripper, is not held
    lifted = SuccessSpec("held", "bar", by="right", above=0.34)
    state = task.evaluate(lifted, {"bar": (np.array([0.6, 0.0, 0.315]), up)}, touching("right/gripper"))
    assert not state.success and state.values["z_m"] == "0.3150", state
    wanted = "(success: held by right/gripper alone, above z 0.34 m)"
    assert state.detail == f"bar touches right/gripper {wanted}, its z 0.315 m", state.detail
    assert task.evaluate(lifted, {"bar": (np.array([0.6, 0.0, 0.40]), up)}, touching("right/gripper")).success
    flipped = SuccessSpec("flipped", "egg", resting_on="pan")
    assert task.evaluate(flipped, {"egg": (np.zeros(3), down)}, [frozenset(("egg", "pan"))]).success
    state = task.evaluate(flipped, {"egg": (np.zeros(3), up)}, [frozenset(("egg", "pan"))])
    assert not state.success and state.values["side"] == "up"
    state = task.evaluate(flipped, {"egg": (np.zeros(3), down)}, [frozenset(("egg", "table"))])
    assert not state.success and state.values["on"] == "false"  # upside down on the floor: lost


def test_an_egg_turned_over_in_the_pan_is_a_flipped_egg():
    """egg_flip's ground truth on its real physics: the egg as it starts (yolk up, in the pan) is no success;
    turned over and dropped back into the pan it is."""
    import numpy as np
    from scipy.spatial.transform import Rotation

    from isaac_franka_bridge import task

    spec = load_world(os.path.join(WORLDS, "egg_flip.yaml"), cameras_config="none")
    world = create_world("mujoco", spec)
    world.robots[0].set_arm_configuration(np.array(spec.robots[0].reset_joint_target))
    world.start()
    names = [o.name for o in spec.objects]

    def settle_and_judge() -> task.TaskState:
        for _ in range(800):  # the arm held at its joints (zero torque, gravity compensated) while the egg settles
            world.begin_step()
            world.end_step()
        positions, quats = world.object_poses()
        poses = {n: (positions[i], quats[i]) for i, n in enumerate(names)}
        return task.evaluate(spec.task.success, poses, world.contacts())

    state = settle_and_judge()
    assert not state.success and state.values == {"side": "up", "on": "true"}, state.detail
    m, d = world.model, world.data
    address = m.jnt_qposadr[m.body_jntadr[m.body("egg").id]]
    position, wxyz = d.qpos[address : address + 3].copy(), d.qpos[address + 3 : address + 7]
    turned = Rotation.from_euler("x", np.pi) * Rotation.from_quat(wxyz[[1, 2, 3, 0]])
    d.qpos[address : address + 3] = position + [0.0, 0.0, 0.02]
    d.qpos[address + 3 : address + 7] = turned.as_quat()[[3, 0, 1, 2]]
    state = settle_and_judge()
    assert state.success and state.values["side"] == "down", state.detail
