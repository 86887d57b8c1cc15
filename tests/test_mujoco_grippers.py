"""Grip force of the MuJoCo grippers: a GripperCommand's max_effort is the squeeze each jaw puts on
an object (the calibration in backends/mujoco_grippers.py). Real physics through the backend's own
command_gripper; no ROS. Gravity is off so that only the squeeze acts on the cube and the arm."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from isaac_franka_bridge.backends.mujoco_backend import CUBE_SIZE, MujocoWorld
from isaac_franka_bridge.world import DEFAULT_RESET_JOINT_TARGET, one_robot_world

SETTLE_STEPS = 2000  # [1 ms] long enough for either gripper to close on the cube and come to rest


def grasp(gripper: str, closed_position: float, max_effort: float) -> tuple[float, np.ndarray]:
    """Each jaw's normal force [N] on the scene's 4 cm cube held at the TCP once at rest, and the
    gripper's joint positions then."""
    backend = MujocoWorld(one_robot_world(gripper)).robots[0]
    m, d = backend.model, backend.data
    m.opt.gravity[:] = 0.0
    backend.set_arm_configuration(np.array(DEFAULT_RESET_JOINT_TARGET))
    site, cube = m.site("ee").id, m.body("cube").id
    address = m.jnt_qposadr[m.body_jntadr[cube]]
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, d.site_xmat[site])
    d.qpos[address : address + 7] = [*d.site_xpos[site], *quat]  # the cube's faces toward the jaws
    mujoco.mj_forward(m, d)
    backend.command_gripper(closed_position, max_effort)
    mujoco.mj_step(m, d, SETTLE_STEPS)  # the arm unactuated, the gripper as commanded
    force, total = np.zeros(6), 0.0
    cube_geom = m.geom("cube").id
    for i in range(d.ncon):
        if cube_geom in (d.contact[i].geom1, d.contact[i].geom2):
            mujoco.mj_contactForce(m, d, i, force)
            total += force[0]
    return total / 2.0, backend.gripper_positions()  # two jaws


@pytest.mark.parametrize(
    ("gripper", "closed_position", "max_effort", "expected"),
    [
        ("Robotiq", 0.8, 45.3, 45.3),  # the original Robotiq server's force byte 30
        ("Robotiq", 0.8, 25.0, 25.0),
        ("Robotiq", 0.8, 0.0, 45.0),  # no max_effort: gym-hil's own force limit
        ("Franka", 0.005, 130.0, 130.0),  # the original Franka server's grasp
        ("Franka", 0.005, 40.0, 40.0),
        ("Franka", 0.005, 0.0, 70.0),  # a move: the hand's continuous force
    ],
)
def test_max_effort_is_the_squeeze_on_the_object(gripper, closed_position, max_effort, expected):
    assert grasp(gripper, closed_position, max_effort)[0] == pytest.approx(expected, rel=0.1)


def test_the_franka_hand_grasping_hard_reads_the_objects_width():
    _, fingers = grasp("Franka", 0.005, 130.0)
    assert 2.0 * fingers == pytest.approx([CUBE_SIZE, CUBE_SIZE], abs=0.001)  # width = 2 x finger joint


# ---------------------------------------------------------------------- the hold force of a grasp
# Each experiment's object in each gripper that holds it there, closed as the original server closes it
# (Robotiq: force byte 30; Franka hand: its 130 N grasp), the arm held by a stiff joint servo, gravity off; a
# force on the object grows until it has slid HOLD_SLIP in the fingers. Where it is held (in the EE frame):
# the RAM stick by its top edge, the USB stick 28 mm behind its plug, the bar and the cube at their middle.
HOLD_SLIP = 0.001  # [m]
HOLDS = {
    ("Robotiq", "ram"): ("ram_insertion", (0.0, 0.0, 0.0127)),
    ("Robotiq", "usb"): ("usb_pickup_insertion", (-0.012, 0.0, 0.0137)),
    ("Robotiq", "bar"): ("object_handover", (0.0, 0.0, 0.0)),
    ("Robotiq", "cube"): ("pick_cube", (0.0, 0.0, 0.0)),
    ("Franka", "bar"): ("object_handover", (0.0, 0.0, 0.0)),
    ("Franka", "cube"): ("pick_cube", (0.0, 0.0, 0.0)),
}
PUSHES = {"along the pads": (1.0, 0.0, 0.0), "out of the hand": (0.0, 0.0, 1.0), "into the hand": (0.0, 0.0, -1.0)}


def server_grasp(gripper: str) -> tuple[float, float]:
    """(GripperCommand position, max_effort) of the original server's /close_gripper."""
    from franka_server_ros2.grippers import GRIPPERS

    goal = GRIPPERS[gripper]().close()
    return goal.position, goal.max_effort


def held(gripper: str, name: str) -> MujocoWorld:
    """A world of one arm at the reset joints holding the experiment's object, closed as the server closes."""
    from dataclasses import replace

    from harness import CONFIG

    from isaac_franka_bridge.world import RobotSpec, check_world, load_world

    task, position = HOLDS[gripper, name]
    obj = next(o for o in load_world(str(CONFIG / "tasks" / f"{task}.yaml")).objects if o.name == name)
    world = MujocoWorld(
        check_world([RobotSpec(gripper_type=gripper)], [replace(obj, mount="gripper", position=position)])
    )
    world.robots[0].set_arm_configuration(np.array(DEFAULT_RESET_JOINT_TARGET))
    world.start()
    world.model.opt.gravity[:] = 0.0
    world.robots[0].command_gripper(*server_grasp(gripper))
    hold_arm(world, 300)
    return world


def hold_arm(world: MujocoWorld, steps: int, body: int = -1, force: tuple | np.ndarray = (0.0, 0.0, 0.0)) -> None:
    """Steps with the arm held where it is by a stiff joint servo (and `force` on `body`)."""
    robot, d = world.robots[0], world.data
    q = d.qpos[robot._qpos].copy()
    for _ in range(steps):
        robot.set_torque(2000.0 * (q - d.qpos[robot._qpos]) - 50.0 * d.qvel[robot._dof])
        if body >= 0:
            d.xfrc_applied[body, :3] = force
        mujoco.mj_step(world.model, d)


def in_hand(world: MujocoWorld, body: int) -> np.ndarray:
    d, site = world.data, world.robots[0]._ee_site
    return d.site_xmat[site].reshape(3, 3).T @ (d.xpos[body] - d.site_xpos[site])


def hold_force(gripper: str, name: str, push: tuple[float, ...], limit: float) -> float:
    """The force [N] at which the object has slid HOLD_SLIP in the fingers (limit if it holds up to there):
    raised by 5 N every 0.3 s."""
    world = held(gripper, name)
    body = world.model.body(name).id
    start = in_hand(world, body)
    direction = world.data.site_xmat[world.robots[0]._ee_site].reshape(3, 3) @ np.array(push)
    force = 0.0
    while force < limit:
        force += 5.0
        hold_arm(world, 300, body, force * direction)
        if not np.linalg.norm(in_hand(world, body) - start) <= HOLD_SLIP:
            return force
    return limit


def real_hold_force(gripper: str) -> float:
    """2 x mu x grip force of the real gripper as the original server closes it (rubber pads: mu about 1)."""
    return 2.0 * 1.0 * server_grasp(gripper)[1]


# the most the impedance controller pushes with where the policy acts (every example's COMPLIANCE_PARAM:
# translational_stiffness 2000 N/m x clip 0.01 m at most; the PRECISION_PARAM sets are for the resets' moves)
EXAMPLES_MAX_PUSH = 20.0  # [N]


@pytest.mark.parametrize(("gripper", "name"), sorted(HOLDS))
def test_a_held_object_holds_beyond_the_controllers_push_and_slides_before_twice_the_real_hold(gripper, name):
    """The slip a person works around and a policy cannot: none (< 1 mm) at the most the examples' controller
    parameters push with, in any direction; and the grasp is no glue: it slides before twice the real
    gripper's hold force (2 x mu x grip force)."""
    real = real_hold_force(gripper)
    forces = {how: hold_force(gripper, name, push, 2.0 * real) for how, push in PUSHES.items()}
    print(f"\n{gripper} holding {name}: slides at {forces} N; real gripper about {real:.0f} N")
    assert min(forces.values()) > 1.5 * EXAMPLES_MAX_PUSH, forces
    assert max(forces.values()) < 2.0 * real, forces


def test_the_ram_stick_pushed_up_at_its_end_does_not_turn_in_the_fingers():
    """A slot's end wall under the stick's end (5 mm off along the slot) pushes it 67 mm from the grip: with the
    ram_insertion compliance set's 10 N down (translational_clip_neg_z 0.005 m x 2000 N/m) the pads' patch
    holds the twist (MuJoCo's point contacts alone let it turn 1 deg per second)."""
    world = held("Robotiq", "ram")
    d, site, body = world.data, world.robots[0]._ee_site, world.model.body("ram").id
    hand = d.site_xmat[site].reshape(3, 3)
    start, turned = in_hand(world, body), Rotation.from_matrix(hand.T @ d.xmat[body].reshape(3, 3))
    corner = d.site_xpos[site] + hand @ np.array([0.0667, 0.0, 0.0283])  # the bottom corner, EE frame
    force = hand @ np.array([0.0, 0.0, -10.0])  # toward the hand
    wrench = np.concatenate([force, np.cross(corner - d.xipos[body], force)])
    for _ in range(2000):
        d.xfrc_applied[body] = wrench
        hold_arm(world, 1)
    hand = d.site_xmat[site].reshape(3, 3)
    twist = (Rotation.from_matrix(hand.T @ d.xmat[body].reshape(3, 3)) * turned.inv()).magnitude()
    assert np.linalg.norm(in_hand(world, body) - start) < HOLD_SLIP and np.degrees(twist) < 1.0, twist
