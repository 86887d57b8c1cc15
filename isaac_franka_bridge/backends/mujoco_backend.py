"""MuJoCo backend: a world of Menagerie Pandas shipped by the `gym-hil` package, each with a
Robotiq 2F-85, a Franka hand or no gripper (mujoco_grippers.py).

The models are loaded from the installed packages (never copied) and edited with MjSpec: each
robot gets an end-effector site at its gripper's TCP and its own gravity compensation (MuJoCo
`gravcomp` routed through the joint actuators, so it counts against the joint torque limits as on
the real robot); the robots are attached to one world at their base poses, their names prefixed
with their namespace ('left/link1'), next to a table plane at the base height and a cube. One
physics step (1 ms) advances them all.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace

import cv2
import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from franka_server_ros2.camera_specs import WORLD_BODY, CameraSpec

from .. import task
from ..sim.state import ArmState
from ..world import DEFAULT_CUBE, ObjectSpec, PartSpec, RobotSpec, WorldSpec, one_robot_world
from . import CAPABILITIES
from .base import PhysicsRobot, PhysicsWorld
from .mujoco_assets import panda_xml
from .mujoco_grippers import GRIPPERS, PAD_SOLIMP, PAD_SOLREF, MujocoGripper
from .mujoco_urdf import urdf_from_model

ARM_JOINTS = tuple(f"joint{i}" for i in range(1, 8))  # names in the MJCF
TORQUE_LIMITS = np.array([87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])  # [Nm]
ARM_LINKS = tuple(f"link{i}" for i in range(8))  # bodies in the MJCF
ARM_VISUAL_GROUP = 1


def ros_joint_name(mjcf_name: str) -> str:
    """Joint names as the real stack publishes them (franka_description, robotiq_description)."""
    if mjcf_name in ARM_JOINTS:
        return f"panda_{mjcf_name}"
    if mjcf_name.startswith("panda_"):
        return mjcf_name
    if mjcf_name == GRIPPERS["Robotiq"].joints[0]:
        return GRIPPERS["Robotiq"].ros_joints[0]
    return f"robotiq_85_{mjcf_name}"


def _frame_name(body: str) -> str:
    """TF frame names as the real stack's descriptions name the links."""
    if body.startswith("link"):
        return f"panda_{body}"
    if body == "payload":  # the payload body's frame is the flange frame
        return "panda_link8"
    if body == "cube" or body.startswith("panda_"):
        return body
    return f"robotiq_85_{body}"


def _z_quat(angle: float) -> list[float]:
    """(w, x, y, z) of a rotation by `angle` about z."""
    return [float(np.cos(angle / 2)), 0.0, 0.0, float(np.sin(angle / 2))]


CUBE_SIZE = DEFAULT_CUBE.size[0]  # [m] edge of the default world's cube
GEOMS = {
    "box": mujoco.mjtGeom.mjGEOM_BOX,
    "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
    "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
    "ellipsoid": mujoco.mjtGeom.mjGEOM_ELLIPSOID,
    "mesh": mujoco.mjtGeom.mjGEOM_MESH,
}
FLANGE_IN_ATTACHMENT = -3.0 * np.pi / 4.0  # gym-hil's `attachment` body is the flange turned +135 deg about z
# MuJoCo's soft friction lets a held object creep under a steady load, inside the friction cone: in the 2F-85's
# pads a RAM stick crept 0.4 mm/s under 20 N and the USB stick came out within 5 s; a stick pushed up at its end
# by the DIMM slot's end wall (10 N, 67 mm from the grip) slid 4 mm and turned 2 deg. Two of MuJoCo's own
# remedies take the creep out (measured, tests/test_mujoco_grippers.py and test_tasks.py):
# - the ratio of frictional to normal constraint impedance (impratio; 10 is MuJoCo's advice for manipulation):
#   at 300 the end-wall push moves the stick 0.3 mm and turns it 0.2 deg (at 10: 4 mm and 2 deg; at 100: 0.6 mm)
# - its noslip solver, a post-process of the friction forces: under 20 N for 8 s a stick settles 0.2-0.3 mm and
#   then creeps 0.01-0.02 mm/s. Cost: about 5 us per 1 ms step
IMPRATIO = 300.0
NOSLIP_ITERATIONS = 10
HOLD_SETTLE_S = 0.6  # [s] a gripper closes on the object it holds at start, before the simulation starts


def geom_size(part: PartSpec) -> list[float]:
    """MuJoCo's size of a solid: half extents of a box, radius and half length of a cylinder, semi-axes."""
    if part.shape in ("box", "ellipsoid"):
        return [v / 2.0 for v in part.size]
    if part.shape == "cylinder":
        return [part.size[0], part.size[1] / 2.0]
    if part.shape == "mesh":
        return [0.0, 0.0, 0.0]
    return [part.size[0]]


def _wxyz(rpy) -> list[float]:
    return Rotation.from_euler("xyz", rpy).as_quat()[[3, 0, 1, 2]].tolist()


def add_object(parent, obj: ObjectSpec, spec: mujoco.MjSpec, pose=None) -> None:
    """An object of the world's description: a body of its solids, free if it has a mass and stands in
    the world or in a gripper, fixed to its parent otherwise. `pose` (position, wxyz) overrides its own."""
    position, quat = pose if pose is not None else (list(obj.position), _wxyz(obj.rpy))
    body = parent.add_body(name=obj.name, pos=list(position), quat=list(quat))
    if obj.mass > 0.0 and obj.mount_kind != "flange":
        body.add_freejoint(name=obj.name)
    if obj.mount_kind == "flange":
        body.gravcomp = 1.0  # a tool the robot carries: it compensates its weight, as told in its settings
    for i, part in enumerate(obj.solids()):
        geom = body.add_geom(
            name=obj.name if i == 0 else f"{obj.name}_{i}",
            type=GEOMS[part.shape],
            size=geom_size(part),
            pos=list(part.pos),
            quat=_wxyz(part.rpy),
            rgba=list(part.rgba),
            friction=[obj.friction, 0.005, 0.0001],
            # as hard as the grippers' pads: MuJoCo's default contact is soft for a light object (a
            # 20 g RAM stick pressed at 4 N sank 4 mm into a slot's wall and slid through it)
            solref=PAD_SOLREF,
            solimp=PAD_SOLIMP,
        )
        if part.shape == "mesh":
            mesh = spec.add_mesh(name=f"{obj.name}_mesh_{i}", file=part.mesh, scale=list(part.size))
            geom.meshname = mesh.name


def _scale_masses(model: mujoco.MjModel, objects) -> None:
    """Each object weighs its mass, spread over its solids as their volumes are (MuJoCo's density)."""
    for obj in objects:
        b = model.body(obj.name).id
        if obj.mass > 0.0 and model.body_mass[b] > 0.0:
            factor = obj.mass / model.body_mass[b]
            model.body_mass[b] = obj.mass
            model.body_inertia[b] *= factor


def robot_spec(gripper: MujocoGripper, cameras: Sequence[CameraSpec] = ()) -> mujoco.MjSpec:
    """One Panda with `gripper`, its EE site, payload body, gravity compensation and cameras."""
    spec = mujoco.MjSpec.from_file(panda_xml())
    gripper.mount(spec)
    # the robot compensates its own weight (arm + gripper) through its joint actuators
    for body in spec.bodies:
        if body.name != "world":
            body.gravcomp = 1.0
    for name, limit in zip(ARM_JOINTS, TORQUE_LIMITS, strict=True):
        joint = spec.joint(name)
        joint.actgravcomp = True
        joint.actfrclimited = True
        joint.actfrcrange = [-limit, limit]
    # end effector: the gripper's TCP, turned about the flange's z axis as the gripper's EE frame is
    # (a hand's: the flange turned -45 deg); the `attachment` body is the flange turned +135 deg
    attachment = spec.body("attachment")
    ee_quat = _z_quat(FLANGE_IN_ATTACHMENT + gripper.ee_yaw)
    attachment.add_site(name="ee", pos=[0.0, 0.0, gripper.tcp_offset], quat=ee_quat)
    # a payload at the flange (frame = flange frame), massless until set_payload; not gravity-compensated
    payload = attachment.add_body(name="payload", quat=_z_quat(FLANGE_IN_ATTACHMENT))
    payload.mass, payload.inertia, payload.gravcomp = 0.0, [0.0, 0.0, 0.0], 0.0
    # the arm's visual meshes in group 1 (shown like group 2 by MuJoCo's viewers), so that cameras
    # that do not see the arm can leave them out
    for body in spec.bodies:
        if body.name in ARM_LINKS:
            for geom in body.geoms:
                if geom.group == 2:
                    geom.group = ARM_VISUAL_GROUP
    for camera in cameras:
        if camera.body != WORLD_BODY:  # cameras fixed in the world are the world's (build_world)
            spec.body(camera.body).add_camera(name=camera.name, pos=camera.pos, quat=camera.quat, fovy=camera.fovy)
    return spec


def build_world(world: WorldSpec, timestep: float = 0.001) -> mujoco.MjModel:
    spec = mujoco.MjSpec()
    spec.compiler.degree, spec.compiler.autolimits = False, True  # as the robots' own files
    spec.option.timestep = timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    # elliptic friction cones with a high impedance ratio: what MuJoCo recommends against slip in
    # grasps (with pyramidal cones a 16 mm USB stick squeezed at 45 N slid out of the 2F-85's pads)
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = IMPRATIO
    spec.option.noslip_iterations = NOSLIP_ITERATIONS
    for robot in world.robots:
        base = spec.worldbody.add_frame(pos=list(robot.base_position), quat=_z_quat(robot.base_yaw))
        base.attach_body(robot_spec(GRIPPERS[robot.gripper_type], robot.cameras).body("link0"), robot.prefix, "")
        for camera in robot.cameras:
            if camera.body == WORLD_BODY:
                spec.worldbody.add_camera(
                    name=robot.prefix + camera.name, pos=camera.pos, quat=camera.quat, fovy=camera.fovy
                )
    table = spec.worldbody
    table.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[1.5, 1.5, 0.1], rgba=[0.55, 0.5, 0.45, 1])
    table.add_light(pos=[0.0, 0.0, 3.0], dir=[0.0, 0.0, -1.0], diffuse=[0.8, 0.8, 0.8])
    for obj in world.objects:
        if obj.mount_kind == "flange":  # in the flange frame, on the robot's flange body
            robot = world.robot(obj.mount_robot)
            turn = Rotation.from_euler("z", FLANGE_IN_ATTACHMENT)
            pose = (
                turn.apply(obj.position).tolist(),
                (turn * Rotation.from_euler("xyz", obj.rpy)).as_quat()[[3, 0, 1, 2]].tolist(),
            )
            add_object(spec.body(f"{robot.prefix}attachment"), obj, spec, pose)
        else:  # in the world (a held object is placed in its gripper by MujocoWorld)
            add_object(table, obj, spec)
    cameras = world.cameras()
    if cameras:
        spec.visual.global_.offwidth = max(c.width for c in cameras)
        spec.visual.global_.offheight = max(c.height for c in cameras)
    model = spec.compile()
    _scale_masses(model, world.objects)
    return model


def build_model(timestep: float = 0.001, gripper: MujocoGripper = GRIPPERS["Robotiq"]) -> mujoco.MjModel:
    """The model of a one-robot world (names unprefixed)."""
    return build_world(one_robot_world(gripper.name), timestep)


def _world_to_base(rotation: np.ndarray, translation: np.ndarray):
    return rotation.T, -rotation.T @ translation


class MujocoRobot(PhysicsRobot):
    """One arm of a MujocoWorld: its slice of the shared model, seen from its base frame."""

    def __init__(self, world: MujocoWorld, spec: RobotSpec) -> None:
        m = world.model
        self._world, self.spec = world, spec
        self.model, self.data = m, world.data
        self.gripper = GRIPPERS[spec.gripper_type]
        pre = spec.prefix
        self.root = m.body(f"{pre}link0").id
        mine = [b for b in range(1, m.nbody) if m.body_rootid[b] == self.root]
        # the robot's own name of one of its elements: prefixed ones lose the prefix; the tools on its
        # flange (objects of the world, added unprefixed) keep their names as their TF frames
        tools = {o.name for o in world.spec.objects if o.mount_kind == "flange" and o.mount_robot == spec.namespace}
        own = lambda name: name[len(pre) :] if name.startswith(pre) and name not in tools else name  # noqa: E731
        self._frame_of = lambda body: body if body in tools else _frame_name(body)  # noqa: E731
        joints = [
            j
            for j in range(m.njnt)
            if m.body_rootid[m.jnt_bodyid[j]] == self.root and m.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE
        ]
        self.arm_joint_names = tuple(ros_joint_name(n) for n in ARM_JOINTS)
        self.gripper_joint_names = self.gripper.ros_joints
        self.joint_names = tuple(ros_joint_name(own(m.joint(j).name)) for j in joints)
        self._qpos_all = np.array([m.jnt_qposadr[j] for j in joints])
        self._dof_all = np.array([m.jnt_dofadr[j] for j in joints])
        arm_ids = [m.joint(pre + n).id for n in ARM_JOINTS]
        self._qpos = np.array([m.jnt_qposadr[j] for j in arm_ids])
        self._dof = np.array([m.jnt_dofadr[j] for j in arm_ids])
        self._qpos_at, self._dof_at = _as_slice(self._qpos), _as_slice(self._dof)  # read every tick
        self._arm_actuators = np.array([m.actuator(f"{pre}actuator{i}").id for i in range(1, 8)])
        self._gripper_actuator = m.actuator(pre + self.gripper.actuator).id if self.gripper.present else -1
        self._gripper_qpos = np.array([m.jnt_qposadr[m.joint(pre + n).id] for n in self.gripper.joints], dtype=int)
        # what of the robot is its gripper (fingers and their mount), for what touches what
        hand = {"Robotiq": "base_mount", "Franka": "panda_hand"}.get(spec.gripper_type)
        self.gripper_root = m.body(pre + hand).id if hand else -1
        self._ee_site = m.site(f"{pre}ee").id
        self._ee_body = m.site_bodyid[self._ee_site]
        self._payload = m.body(f"{pre}payload").id
        self._base_rotation = _rotation_z(spec.base_yaw)
        self._base_position = np.array(spec.base_position)
        self._base_quat_inverse = np.array(_z_quat(-spec.base_yaw))  # (w, x, y, z)
        self._turned = spec.base_yaw != 0.0  # the base frame is not the world's orientation
        self._base_rotation6_t = np.kron(np.eye(2), self._base_rotation.T)  # world -> base, both Jacobian halves
        self._jac = np.zeros((6, m.nv))  # translational rows, then rotational
        self._quat = np.zeros(4)
        self._wrench = np.zeros(6)  # base frame
        self._state: ArmState | None = None
        # frames for TF: the robot's bodies (its base is the parent) and cameras, named as its description does
        self._frame_bodies = [b for b in mine if b != self.root]
        self._frame_cameras = [m.camera(pre + c.name).id for c in spec.cameras]
        self.frame_names = tuple(self._frame_of(own(m.body(b).name)) for b in self._frame_bodies) + tuple(
            f"{c.name}_optical_frame" for c in spec.cameras
        )
        self._own = own
        self.flange_to_ee = (np.array([0.0, 0.0, self.gripper.tcp_offset]), _rotation_z(self.gripper.ee_yaw))
        if self.gripper.present:  # start with the gripper open
            self.data.qpos[self._gripper_qpos] = self.gripper.open_position
            self.command_gripper(self.gripper.open_position, 0.0)

    # ------------------------------------------------------------------ per tick
    def _new_step(self) -> None:
        self._state = None
        if self._wrench.any():
            self._apply_wrench()

    def measure(self) -> ArmState:
        if self._state is not None:
            return self._state
        m, d, jac, site = self.model, self.data, self._jac, self._ee_site
        mujoco.mj_jacSite(m, d, jac[:3], jac[3:], site)
        qpos, dof = self._qpos_at, self._dof_at
        position = d.site_xpos[site] - self._base_position
        rotation = d.site_xmat[site].reshape(3, 3)
        if self._turned:  # world -> base
            rt = self._base_rotation.T
            jacobian = self._base_rotation6_t @ jac[:, dof]
            position, rotation = rt @ position, rt @ rotation
        else:
            jacobian, rotation = _copied(jac[:, dof]), rotation.copy()
        mujoco.mju_mat2Quat(self._quat, rotation.ravel())  # (w, x, y, z)
        self._state = ArmState(
            q=_copied(d.qpos[qpos]),
            dq=_copied(d.qvel[dof]),
            tau_measured=_copied(d.qfrc_actuator[dof]),
            position=position,
            rotation=rotation,
            quat=self._quat[[1, 2, 3, 0]],
            jacobian=jacobian,
            coriolis=_copied(self._world.coriolis[dof]),
        )
        return self._state

    def set_torque(self, tau: np.ndarray) -> None:
        self.data.ctrl[self._arm_actuators] = np.minimum(np.maximum(tau, -TORQUE_LIMITS), TORQUE_LIMITS)

    # ------------------------------------------------------------------ measurements
    def external_torque(self) -> np.ndarray:
        # M qacc + c = actuator + passive + constraint + applied: the part not made by the robot
        d = self.data
        tau = d.qfrc_constraint + d.qfrc_smooth - d.qfrc_passive - d.qfrc_actuator + d.qfrc_bias
        return tau[self._dof].copy()

    def joint_state(self) -> tuple[np.ndarray, np.ndarray]:
        return self.data.qpos[self._qpos_all].copy(), self.data.qvel[self._dof_all].copy()

    def frame_poses(self) -> tuple[np.ndarray, np.ndarray]:
        d, rt = self.data, self._base_rotation.T
        positions = (d.xpos[self._frame_bodies] - self._base_position) @ self._base_rotation
        quats = _quat_multiply(self._base_quat_inverse, d.xquat[self._frame_bodies])[:, [1, 2, 3, 0]]
        if self._frame_cameras:
            # optical frames (z forward, y down) of MuJoCo cameras (looking along -z, y up)
            cameras = rt @ d.cam_xmat[self._frame_cameras].reshape(-1, 3, 3) @ np.diag([1.0, -1.0, -1.0])
            camera_positions = (d.cam_xpos[self._frame_cameras] - self._base_position) @ self._base_rotation
            positions = np.vstack((positions, camera_positions))
            quats = np.vstack((quats, Rotation.from_matrix(cameras).as_quat()))
        return positions, quats

    def gripper_positions(self) -> np.ndarray:
        return self.data.qpos[self._gripper_qpos].copy()

    # ------------------------------------------------------------------ commands
    def command_gripper(self, position: float, max_effort: float) -> None:
        if not self.gripper.present:
            raise RuntimeError("the arm carries no gripper (gripper_type None)")
        m, a = self.model, self._gripper_actuator
        limit = self.gripper.force_limit(max_effort)
        m.actuator_forcerange[a] = [-limit, limit]
        low, high = m.actuator_ctrlrange[a]
        self.data.ctrl[a] = float(np.clip(self.gripper.control(position), low, high))

    def set_external_wrench(self, wrench: np.ndarray) -> None:
        """Force and torque (base frame) applied at the end-effector point via xfrc_applied."""
        self._wrench = np.array(wrench, dtype=float)
        self._apply_wrench()

    def _apply_wrench(self) -> None:
        # xfrc_applied acts at the body's centre of mass: shift the force to the end-effector point
        d, r = self.data, self._base_rotation
        force, torque = r @ self._wrench[:3], r @ self._wrench[3:]
        lever = d.site_xpos[self._ee_site] - d.xipos[self._ee_body]
        d.xfrc_applied[self._ee_body, :3] = force
        d.xfrc_applied[self._ee_body, 3:] = torque + np.cross(lever, force)

    def set_payload(self, mass: float, center_of_mass: np.ndarray, inertia: np.ndarray) -> None:
        m, b = self.model, self._payload
        principal, axes = np.linalg.eigh(np.asarray(inertia, float).reshape(3, 3))
        if np.linalg.det(axes) < 0:
            axes[:, 0] = -axes[:, 0]
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, axes.flatten())
        m.body_mass[b] = mass
        m.body_ipos[b] = center_of_mass
        m.body_inertia[b] = np.maximum(principal, 0.0)
        m.body_iquat[b] = quat

    def set_arm_configuration(self, q: np.ndarray) -> None:
        d = self.data
        d.qpos[self._qpos] = q
        d.qvel[self._dof_all] = 0.0
        mujoco.mj_forward(self.model, d)
        self._state = None

    def robot_description(self) -> str:
        own = self._own
        return urdf_from_model(
            self.model, lambda b: self._frame_of(own(b)), lambda j: ros_joint_name(own(j)), root_body=self.root
        )


def _quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b for (w, x, y, z) quaternions: `a` one, `b` rows."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b.T
    return np.stack(
        (
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ),
        axis=1,
    )


def _as_slice(indices: np.ndarray) -> slice | np.ndarray:
    """Consecutive indices as a slice (reading through it is a view: cheaper than gathering), else themselves."""
    if len(indices) and np.array_equal(indices, np.arange(indices[0], indices[0] + len(indices))):
        return slice(int(indices[0]), int(indices[0]) + len(indices))
    return indices


def _copied(read: np.ndarray) -> np.ndarray:
    """What was read through an _as_slice index, as an array of its own (a view is copied)."""
    return read.copy() if read.base is not None else read


def _rotation_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


class MujocoWorld(PhysicsWorld):
    capabilities = CAPABILITIES["mujoco"]

    def __init__(self, world: WorldSpec, timestep: float = 0.001) -> None:
        self.spec = world
        self.model = build_world(world, timestep)
        self.data = mujoco.MjData(self.model)
        self.timestep = self.model.opt.timestep
        self.robots = tuple(MujocoRobot(self, r) for r in world.robots)
        # every robot's cameras, named as their topics are: '<namespace>/<camera>'
        self.cameras = tuple(replace(c, name=r.prefix + c.name) for r in world.robots for c in r.cameras)
        self._options = (world, self.timestep)  # rebuilds the same scene in a rendering process
        self.coriolis = np.zeros(self.model.nv)
        self._gravity = self.model.opt.gravity.copy()
        # objects in the world are published in the world frame; tools on a flange with their robot
        self.frame_names = tuple(o.name for o in world.objects if o.mount_kind != "flange")
        self._frame_bodies = [self.model.body(n).id for n in self.frame_names]
        self._object_bodies = [self.model.body(o.name).id for o in world.objects]
        self._owners = np.array([self._owner(g) for g in range(self.model.ngeom)], dtype=object)
        mujoco.mj_forward(self.model, self.data)
        self._start = self._object_start()

    def _owner(self, geom: int) -> str:
        """What a geom belongs to, as task.py names it: an object, the table, a robot's gripper or arm."""
        m = self.model
        objects = {b: o.name for b, o in zip(self._object_bodies, self.spec.objects, strict=True)}
        body = int(m.geom_bodyid[geom])
        if body == 0:
            return task.TABLE if m.geom(geom).name == "table" else "world"
        chain = [body]
        while chain[-1] != 0:
            chain.append(int(m.body_parentid[chain[-1]]))
        held = next((objects[b] for b in chain if b in objects), None)
        if held is not None:
            return held
        robot = next(r for r in self.robots if r.root in chain)
        part = task.gripper if robot.gripper_root in chain else task.arm
        return part(robot.spec.namespace)

    def start(self) -> None:
        """Each object a gripper holds at start goes into it, weightless while the fingers close on it
        (the arm held still), then the world's clock starts at zero; the start is kept for reset_objects."""
        held = [(o, self.model.body(o.name).id) for o in self.spec.objects if o.mount_kind == "gripper"]
        if held:
            self._grasp_at_start(held)
        self._start = self._object_start()

    def _free_joint(self, obj: ObjectSpec) -> tuple[int, int] | None:
        """qpos and dof address of an object's free joint (None for a fixed one)."""
        body = self.model.body(obj.name).id
        if self.model.body_jntnum[body] == 0:
            return None
        joint = self.model.body_jntadr[body]
        return int(self.model.jnt_qposadr[joint]), int(self.model.jnt_dofadr[joint])

    def _object_start(self) -> list:
        """What reset_objects restores: each free object's qpos, held ones relative to their end effector
        with their gripper's joint positions and command."""
        d, start = self.data, []
        for obj in self.spec.objects:
            address = self._free_joint(obj)
            if address is None:
                continue
            qpos = d.qpos[address[0] : address[0] + 7].copy()
            if obj.mount_kind != "gripper":
                start.append((address, qpos, None))
                continue
            robot = next(r for r in self.robots if r.spec.namespace == obj.mount_robot)
            ee = Rotation.from_matrix(d.site_xmat[robot._ee_site].reshape(3, 3)), d.site_xpos[robot._ee_site].copy()
            in_ee = (ee[0].inv().apply(qpos[:3] - ee[1]), ee[0].inv() * Rotation.from_quat(qpos[[4, 5, 6, 3]]))
            gripper = robot, d.qpos[robot._qpos_all].copy(), d.ctrl[robot._gripper_actuator].copy()
            start.append((address, in_ee, gripper))
        return start

    def reset_objects(self) -> None:
        d = self.data
        for (qpos_address, dof_address), qpos, gripper in self._start:
            if gripper is None:
                d.qpos[qpos_address : qpos_address + 7] = qpos
            else:  # back in the gripper where it is now, the fingers as they held it at start
                robot, joints, ctrl = gripper
                ee = Rotation.from_matrix(d.site_xmat[robot._ee_site].reshape(3, 3)), d.site_xpos[robot._ee_site]
                position, rotation = qpos
                d.qpos[qpos_address : qpos_address + 3] = ee[1] + ee[0].apply(position)
                d.qpos[qpos_address + 3 : qpos_address + 7] = (ee[0] * rotation).as_quat()[[3, 0, 1, 2]]
                gripper_joints = [i for i, a in enumerate(robot._qpos_all) if a not in robot._qpos]
                d.qpos[robot._qpos_all[gripper_joints]] = joints[gripper_joints]
                d.qvel[robot._dof_all[gripper_joints]] = 0.0
                d.ctrl[robot._gripper_actuator] = ctrl
            d.qvel[dof_address : dof_address + 6] = 0.0
        mujoco.mj_forward(self.model, d)

    def place_object(self, name: str, position: np.ndarray, quat: np.ndarray) -> None:
        obj = next(o for o in self.spec.objects if o.name == name)
        address = self._free_joint(obj)
        if address is None:
            raise ValueError(f"{name} is fixed: it cannot be placed")
        d = self.data
        d.qpos[address[0] : address[0] + 3] = position
        d.qpos[address[0] + 3 : address[0] + 7] = np.asarray(quat, dtype=float)[[3, 0, 1, 2]]
        d.qvel[address[1] : address[1] + 6] = 0.0
        mujoco.mj_forward(self.model, d)

    def _grasp_at_start(self, held) -> None:
        m, d = self.model, self.data
        mujoco.mj_forward(m, d)
        for obj, body in held:
            robot = next(r for r in self.robots if r.spec.namespace == obj.mount_robot)
            ee_rotation = d.site_xmat[robot._ee_site].reshape(3, 3)
            rotation = Rotation.from_matrix(ee_rotation) * Rotation.from_euler("xyz", obj.rpy)
            address = m.jnt_qposadr[m.body_jntadr[body]]
            d.qpos[address : address + 3] = d.site_xpos[robot._ee_site] + ee_rotation @ np.array(obj.position)
            d.qpos[address + 3 : address + 7] = rotation.as_quat()[[3, 0, 1, 2]]
            m.body_gravcomp[body] = 1.0
            robot.command_gripper(robot.gripper.closed_position, 0.0)
        arm = np.concatenate([r._qpos for r in self.robots]), np.concatenate([r._dof for r in self.robots])
        q0 = d.qpos[arm[0]].copy()
        for _ in range(round(HOLD_SETTLE_S / self.timestep)):
            d.qpos[arm[0]], d.qvel[arm[1]] = q0, 0.0
            mujoco.mj_step(m, d)
        for _, body in held:
            m.body_gravcomp[body] = 0.0
        d.qpos[arm[0]], d.qvel[:], d.time = q0, 0.0, 0.0
        mujoco.mj_forward(m, d)

    def object_poses(self) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        return d.xpos[self._object_bodies].copy(), d.xquat[self._object_bodies][:, [1, 2, 3, 0]]

    def contacts(self) -> set[frozenset[str]]:
        d = self.data
        n = d.ncon
        if n == 0:
            return set()
        contact = d.contact
        first, second = self._owners[contact.geom1[:n]], self._owners[contact.geom2[:n]]
        return {frozenset((a, b)) for a, b in zip(first, second, strict=True) if a != b}

    def begin_step(self) -> None:
        m, d = self.model, self.data
        mujoco.mj_step1(m, d)
        # Coriolis and centrifugal torques only: recursive Newton-Euler with gravity switched off
        m.opt.gravity[:] = 0.0
        mujoco.mj_rne(m, d, 0, self.coriolis)
        m.opt.gravity[:] = self._gravity
        for robot in self.robots:
            robot._new_step()

    def end_step(self) -> None:
        mujoco.mj_step2(self.model, self.data)

    def frame_poses(self) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        return d.xpos[self._frame_bodies].copy(), d.xquat[self._frame_bodies][:, [1, 2, 3, 0]]

    def render_state(self) -> np.ndarray:
        return self.data.qpos.copy()

    def camera_renderer_factory(self, divisor: int = 1) -> Callable[[], MujocoCameraRenderer]:
        return functools.partial(MujocoCameraRenderer.for_scene, self._options, divisor)


class MujocoCameraRenderer:
    """Off-screen rendering of the model's cameras (EGL on the CPU) from a copy of the state.

    Shadows, reflections and the skybox are off and there is no multisampling: that takes a
    1280x720 frame from ~150 ms to ~40 ms on llvmpipe. With `divisor` > 1 the frame is rendered
    smaller and scaled up to the camera's size.
    """

    @classmethod
    def for_scene(cls, options: tuple, divisor: int) -> MujocoCameraRenderer:
        """A renderer of its own copy of the world's scene (in a rendering process)."""
        world, timestep = options
        cameras = [replace(c, name=r.prefix + c.name) for r in world.robots for c in r.cameras]
        return cls(build_world(world, timestep), cameras, divisor)

    def __init__(self, model: mujoco.MjModel, cameras: Sequence[CameraSpec], divisor: int) -> None:
        self.model, self.divisor = model, max(1, int(divisor))
        model.vis.quality.offsamples = 0
        self.data = mujoco.MjData(model)
        self.cameras = {c.name: c for c in cameras}
        self.options = {}
        for c in cameras:
            option = mujoco.MjvOption()
            option.geomgroup[ARM_VISUAL_GROUP] = int(c.sees_arm)
            self.options[c.name] = option
        self._frames = {
            c.name: np.empty((c.height // self.divisor, c.width // self.divisor, 3), np.uint8) for c in cameras
        }
        self.renderers: dict[tuple[int, int], mujoco.Renderer] = {}
        for c in cameras:
            size = (c.height // self.divisor, c.width // self.divisor)
            if size not in self.renderers:
                renderer = mujoco.Renderer(model, *size)
                for flag in (
                    mujoco.mjtRndFlag.mjRND_SHADOW,
                    mujoco.mjtRndFlag.mjRND_REFLECTION,
                    mujoco.mjtRndFlag.mjRND_SKYBOX,
                ):
                    renderer.scene.flags[flag] = 0
                self.renderers[size] = renderer

    def render(self, qpos: np.ndarray, name: str) -> np.ndarray:
        camera = self.cameras[name]
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)
        renderer = self.renderers[(camera.height // self.divisor, camera.width // self.divisor)]
        renderer.update_scene(self.data, camera=name, scene_option=self.options[name])
        rgb = renderer.render(out=self._frames[name])  # valid until this camera's next frame
        if self.divisor > 1:
            rgb = cv2.resize(rgb, (camera.width, camera.height), interpolation=cv2.INTER_LINEAR)
        return rgb

    def close(self) -> None:
        for renderer in self.renderers.values():
            renderer.close()
        self.renderers.clear()
