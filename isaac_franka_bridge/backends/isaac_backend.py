"""Isaac Sim 6 backend: the Franka Panda + Franka Hand of Isaac Sim's asset library, stepped by PhysX.

Physics only, as the interface says (controller, loop and ROS are shared): it starts Isaac Sim
(`SimulationApp`, which must exist before any other Isaac or `pxr` import, hence the imports inside
the constructor), builds a stage with a table plane, the Franka and the world's objects, and then each
1 ms tick reads the arm state through the articulation view of `isaacsim.core.prims`, applies the
arm torques as joint efforts and advances PhysX by one physics step without rendering.

The world's objects (world.py) are translated to prims by isaac_scene.py (pure Python, unit-tested
without Isaac Sim) before Isaac Sim starts, and authored here with `pxr` (`author_bodies`); their
poses are read through one rigid-body view.

Modelling choices, mirroring the MuJoCo backend:
- The robot carries its own weight: gravity is disabled on every link of the robot (payloads and
  objects keep theirs); the gravity torques PhysX computes are added to `tau_measured` and counted
  against the joint torque limits, as on the real arm.
- The end effector is Franka's EE frame for the Franka Hand: the `panda_hand` frame (the flange
  rotated -45 deg about z, as in franka_description) moved 0.1034 m along its z axis.
- Everything is reported in the robot base frame (`panda_link0`); the robot stands at the origin.
- A tool on the flange (`mount: flange`) is a rigid body held by a fixed joint to the hand link,
  outside the articulation, with gravity off: the robot carries its weight, whose holding torque
  is added to `tau_measured` and counted against the joint torque limits (MuJoCo's gravcomp).
  Its inertia, unknown to the articulation, shows up in `external_torque` while the arm accelerates.

Isaac Sim needs an NVIDIA RTX GPU; scripts/gpu_check.sh runs scripts/isaac_smoke.py there.
The Franka asset comes from Isaac Sim's asset root (`get_assets_root_path()`, which honours
`ISAACSIM_ASSET_ROOT`); `ISAAC_FRANKA_USD` or `usd_path` names a local franka.usd instead.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from ..sim.state import ArmState
from ..world import WorldSpec
from . import CAPABILITIES
from .base import FRANKA_HAND_CONTINUOUS_FORCE, PhysicsRobot, PhysicsWorld
from .isaac_scene import (
    FLANGE_LINK,
    HAND_LINK,
    HAND_YAW,
    HULL_VERTEX_LIMIT,
    OBJECTS_ROOT,
    TCP_OFFSET,
    BodyPrim,
    Pose,
    translate_world,
    world_frame_names,
)

ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))  # DOF names in Isaac's franka.usd, as published
GRIPPER_JOINTS = ("panda_finger_joint1", "panda_finger_joint2")
TORQUE_LIMITS = np.array([87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])  # [Nm]
FINGER_RANGE = (0.0, 0.04)  # [m] travel of each finger
GRIPPER_FORCE_MAX = 140.0  # [N] Franka Hand peak grasp force
GRAVITY = 9.81  # [m/s^2]
FRANKA_ASSET = "Isaac/Robots/FrankaRobotics/FrankaPanda/franka.usd"  # relative to the asset root
ROBOT_PRIM = "/World/franka"
TABLE_PRIM = "/World/table"
HOLD_SETTLE_S = 0.6  # [s] a gripper closes on the object it holds at start, before the simulation starts
USD_PATH_ENV = "ISAAC_FRANKA_USD"

NOT_INSTALLED = (
    "Isaac Sim 6 is not installed: pip install 'isaacsim[all,extscache]==6.2.0.0' (Python 3.12, see "
    "scripts/gpu_check.sh) on a host with an NVIDIA RTX GPU; use backend:=mujoco on the CPU"
)

_app_started = False  # Kit runs once per process: one IsaacBackend per process


# ---------------------------------------------------------------------------------- pure numpy helpers
def rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def quat_wxyz_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrix of a (w, x, y, z) quaternion, as Isaac's core API returns them."""
    w, x, y, z = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat_xyzw(rotation: np.ndarray) -> np.ndarray:
    """(x, y, z, w) quaternion of a rotation matrix (w >= 0), as the controller and ROS use them."""
    r = rotation
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = [0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s, (r[2, 1] - r[1, 2]) / s]
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = [(r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s, (r[0, 2] - r[2, 0]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = [(r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s, (r[1, 0] - r[0, 1]) / s]
    quat = np.array(q)
    quat /= np.linalg.norm(quat)
    return -quat if quat[3] < 0.0 else quat


def quat_multiply_wxyz(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton products a * b of (w, x, y, z) quaternions, row by row (either may be one quaternion)."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    aw, ax, ay, az = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    bw, bx, by, bz = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=1,
    )


def skew(v: np.ndarray) -> np.ndarray:
    """The matrix [v]x with [v]x w = v x w."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def shift_jacobian(jacobian: np.ndarray, from_point: np.ndarray, to_point: np.ndarray) -> np.ndarray:
    """Jacobian (linear rows first) of another point of the same body: v_to = v_from + w x (to - from)."""
    shifted = jacobian.copy()
    shifted[:3] -= skew(np.asarray(to_point) - np.asarray(from_point)) @ jacobian[3:]
    return shifted


def clamp_motor_torque(tau: np.ndarray, gravity: np.ndarray) -> np.ndarray:
    """The controller torque that is applied when the motors' total (controller + gravity) is limited."""
    return np.clip(tau + gravity, -TORQUE_LIMITS, TORQUE_LIMITS) - gravity


# ---------------------------------------------------------------------------------- Isaac Sim start-up
def _start_simulation_app(headless: bool) -> Any:
    """Create Isaac Sim's `SimulationApp` (it must precede every other Isaac/Omniverse import)."""
    global _app_started
    try:
        from isaacsim import SimulationApp
    except ImportError as exc:  # also when only isaacsim-ros2 (the bundled ROS 2) is installed
        raise RuntimeError(NOT_INSTALLED) from exc
    if _app_started:
        raise RuntimeError("Isaac Sim runs once per process: create one IsaacBackend per process")
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_sigint = signal.getsignal(signal.SIGINT) if in_main_thread else None
    try:
        app = SimulationApp({"headless": headless})
    except Exception as exc:  # no GPU / driver / Vulkan: say so, the caller can fall back to MuJoCo
        raise RuntimeError(f"Isaac Sim could not start (it needs an NVIDIA RTX GPU and driver): {exc}") from exc
    _app_started = True
    if previous_sigint is not None:
        # SimulationApp installs a SIGINT handler that exits the process: keep the host's (rclpy's)
        signal.signal(signal.SIGINT, previous_sigint)
    return app


def _franka_usd_path(usd_path: str | None) -> str:
    """The Franka USD: `usd_path`, else $ISAAC_FRANKA_USD, else the one under Isaac Sim's asset root."""
    path = usd_path or os.environ.get(USD_PATH_ENV)
    if path:
        return path
    from isaacsim.storage.native import get_assets_root_path, path_join

    try:
        root = get_assets_root_path()
    except RuntimeError as exc:
        raise RuntimeError(
            f"Isaac Sim's asset root is unreachable ({exc}); download the asset pack and set "
            f"ISAACSIM_ASSET_ROOT, or point {USD_PATH_ENV} at a local {FRANKA_ASSET}"
        ) from exc
    return path_join(root, FRANKA_ASSET)


def _rigid_body_paths(stage: Any, root_path: str) -> dict[str, str]:
    """Prim path of every rigid body under `root_path`, by prim name (the articulation's body names)."""
    from pxr import Usd, UsdPhysics

    paths: dict[str, str] = {}
    for prim in Usd.PrimRange(stage.GetPrimAtPath(root_path)):
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            paths.setdefault(prim.GetName(), prim.GetPath().pathString)
    return paths


def _set_pose(xformable: Any, pose: Pose, scale: Sequence[float] | None = None) -> None:
    """xformOp:translate, xformOp:orient (Gf.Quatf: real first) and, if given, xformOp:scale."""
    from pxr import Gf

    xformable.ClearXformOpOrder()
    xformable.AddTranslateOp().Set(Gf.Vec3d(*pose.position))
    xformable.AddOrientOp().Set(Gf.Quatf(*pose.orient))
    if scale is not None:
        xformable.AddScaleOp().Set(Gf.Vec3f(*scale))


def author_bodies(stage: Any, bodies: Sequence[BodyPrim], link_paths: Mapping[str, str]) -> None:
    """Define the prims of `bodies` (isaac_scene.translate_world) on `stage`. `link_paths`: the robot's
    rigid-body prims by link name, for the joints of the tools on its flange.

    Only `pxr` (UsdGeom, UsdPhysics, UsdShade; the PhysX attributes by their schema names), so the
    same code runs on Isaac Sim's stage and on usd-core's."""
    from pxr import Gf, Sdf, UsdGeom, UsdPhysics, UsdShade

    geometry = {"Cube": UsdGeom.Cube, "Cylinder": UsdGeom.Cylinder, "Sphere": UsdGeom.Sphere, "Mesh": UsdGeom.Mesh}
    if bodies:
        UsdGeom.Xform.Define(stage, OBJECTS_ROOT)
    for body in bodies:
        xform = UsdGeom.Xform.Define(stage, body.path)
        _set_pose(xform, body.pose)
        prim = xform.GetPrim()
        m = body.material
        material = UsdShade.Material.Define(stage, m.path)
        friction = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
        friction.CreateStaticFrictionAttr(m.static_friction)
        friction.CreateDynamicFrictionAttr(m.dynamic_friction)
        friction.CreateRestitutionAttr(m.restitution)
        material.GetPrim().AddAppliedSchema("PhysxMaterialAPI")
        material.GetPrim().CreateAttribute("physxMaterial:frictionCombineMode", Sdf.ValueTypeNames.Token).Set(
            m.friction_combine
        )
        if body.rigid:
            UsdPhysics.RigidBodyAPI.Apply(prim)
            mass = UsdPhysics.MassAPI.Apply(prim)
            if body.mass > 0.0:
                mass.CreateMassAttr(body.mass)
            if body.density > 0.0:
                mass.CreateDensityAttr(body.density)
            if body.disable_gravity:
                prim.AddAppliedSchema("PhysxRigidBodyAPI")
                prim.CreateAttribute("physxRigidBody:disableGravity", Sdf.ValueTypeNames.Bool).Set(True)
        for part in body.parts:
            geom = geometry[part.type_name].Define(stage, part.path)
            for name, value in part.attributes.items():
                geom.GetPrim().GetAttribute(name).Set(value)
            _set_pose(geom, part.pose, part.scale)
            geom.CreateDisplayColorAttr([Gf.Vec3f(*part.display_color)])
            geom.CreateDisplayOpacityAttr([part.display_opacity])
            shape = geom.GetPrim()
            UsdPhysics.CollisionAPI.Apply(shape)
            if part.approximation:
                UsdPhysics.MeshCollisionAPI.Apply(shape).CreateApproximationAttr(part.approximation)
                shape.AddAppliedSchema("PhysxConvexHullCollisionAPI")
                limit = shape.CreateAttribute("physxConvexHullCollision:hullVertexLimit", Sdf.ValueTypeNames.Int)
                limit.Set(HULL_VERTEX_LIMIT)
            UsdShade.MaterialBindingAPI.Apply(shape).Bind(material, UsdShade.Tokens.weakerThanDescendants, "physics")
        if body.joint is not None:
            j = body.joint
            if j.link not in link_paths:
                raise RuntimeError(f"object '{body.name}' is fixed to the link '{j.link}', which the robot lacks")
            joint = UsdPhysics.FixedJoint.Define(stage, j.path)
            joint.CreateBody0Rel().SetTargets([Sdf.Path(link_paths[j.link])])
            joint.CreateBody1Rel().SetTargets([Sdf.Path(body.path)])
            joint.CreateLocalPos0Attr(Gf.Vec3f(*j.local_pose0.position))
            joint.CreateLocalRot0Attr(Gf.Quatf(*j.local_pose0.orient))
            joint.CreateLocalPos1Attr(Gf.Vec3f(0.0, 0.0, 0.0))
            joint.CreateLocalRot1Attr(Gf.Quatf(1.0, 0.0, 0.0, 0.0))
            joint.CreateExcludeFromArticulationAttr(True)


class IsaacRobot(PhysicsRobot):
    """The Franka arm + hand in Isaac Sim 6 (PhysX on the CPU, 1 kHz, no rendering in the loop)."""

    def __init__(
        self,
        timestep: float = 0.001,
        headless: bool = True,
        usd_path: str | None = None,
        gripper: str = "Franka",
        bodies: Sequence[BodyPrim] = (),
    ) -> None:
        """Start Isaac Sim, load the scene (the Franka, the table and `bodies`, the world's objects as
        isaac_scene.translate_world gives them) and set the arm up for torque control.

        Raises RuntimeError when Isaac Sim is not installed or cannot start (no GPU).
        """
        if gripper != "Franka":
            raise ValueError(f"the Isaac Sim backend carries the Franka hand; gripper_type '{gripper}' is MuJoCo only")
        self._app = _start_simulation_app(headless)
        # no app.close() on failure: Kit's fast shutdown would end the process and hide the error
        self._build(timestep, usd_path, tuple(bodies))

    def _build(self, timestep: float, usd_path: str | None, bodies: tuple[BodyPrim, ...]) -> None:
        # Isaac modules exist only once SimulationApp runs
        from isaacsim.core.api import World
        from isaacsim.core.api.materials import PhysicsMaterial
        from isaacsim.core.api.objects import GroundPlane
        from isaacsim.core.prims import Articulation, RigidPrim
        from isaacsim.core.utils.stage import add_reference_to_stage

        self.timestep = float(timestep)
        self.arm_joint_names = ARM_JOINTS
        self.gripper_joint_names = GRIPPER_JOINTS
        self.joint_names = ARM_JOINTS + GRIPPER_JOINTS
        self._rot_flange_ee = rot_z(HAND_YAW)
        self.flange_to_ee = (np.array([0.0, 0.0, TCP_OFFSET]), self._rot_flange_ee)

        # CPU PhysX (numpy backend): per-tick reads of one arm are cheaper there than on the GPU pipeline
        render_every = max(1, round(1.0 / (60.0 * self.timestep)))
        self.world = World(
            physics_dt=self.timestep,
            rendering_dt=self.timestep * render_every,
            stage_units_in_meters=1.0,
            backend="numpy",
            device="cpu",
        )
        table_material = PhysicsMaterial(
            "/World/Physics_Materials/table", static_friction=0.8, dynamic_friction=0.6, restitution=0.0
        )
        GroundPlane(TABLE_PRIM, name="table", z_position=0.0, physics_material=table_material)
        add_reference_to_stage(usd_path=_franka_usd_path(usd_path), prim_path=ROBOT_PRIM)
        # the world's objects, every one as its description says (the tools on the flange jointed to the hand)
        self.bodies = bodies
        author_bodies(self.world.stage, bodies, _rigid_body_paths(self.world.stage, ROBOT_PRIM))
        self.robot = Articulation(ROBOT_PRIM, name="franka")
        # never let the arm fall asleep while it holds still under impedance control (if the asset
        # has no PhysxArticulationAPI to carry the threshold, PhysX's default stays)
        with contextlib.suppress(Exception):
            self.robot.set_sleep_thresholds(np.zeros(1))
        self.world.reset()  # plays the timeline, creates the physics views
        self.robot.initialize()

        # one view over the objects that move (rigid bodies), in the world's order; the others stay as authored
        self._rigid = np.array([i for i, b in enumerate(bodies) if b.rigid], dtype=int)
        self.objects = None
        if self._rigid.size:
            rigid_paths = [bodies[i].path for i in self._rigid]
            self.objects = RigidPrim(
                rigid_paths, name="objects", reset_xform_properties=False, prepare_contact_sensors=False
            )
            self.objects.initialize()
            if list(self.objects.prim_paths) != rigid_paths:
                raise RuntimeError("the objects' view does not follow the world's order")
        self._authored = (
            np.array([b.pose.position for b in bodies], dtype=float).reshape(-1, 3),
            np.array([b.pose.orient for b in bodies], dtype=float).reshape(-1, 4),
        )
        # the tools on the flange: their indices in the objects' view, their poses in the hand frame
        self._tools = np.array([k for k, i in enumerate(self._rigid) if bodies[i].joint is not None], dtype=int)
        self._tool_poses = [bodies[self._rigid[k]].joint.local_pose0 for k in self._tools]

        r = self.robot
        dof_names = list(r.dof_names)
        missing = [n for n in self.joint_names if n not in dof_names]
        if missing:
            raise RuntimeError(f"the Franka asset lacks the joints {missing} (it has {dof_names})")
        self._arm = np.array([r.get_dof_index(n) for n in ARM_JOINTS])
        self._fingers = np.array([r.get_dof_index(n) for n in GRIPPER_JOINTS])
        self._all = np.concatenate([self._arm, self._fingers])
        body_names = list(r.body_names)
        if HAND_LINK not in body_names:
            raise RuntimeError(f"the Franka asset has no '{HAND_LINK}' link (it has {body_names})")
        n_blocks, _, n_cols = r.get_jacobian_shape()
        if n_cols != r.num_dof:
            raise RuntimeError("the Franka articulation is not fixed-base (its Jacobian has 6 root columns)")
        # A fixed-base articulation has no Jacobian block for its root link (panda_link0, body 0): block
        # i belongs to body i + 1, so the hand's block is its body index minus one. Its columns are the
        # DOFs in the articulation's order (the arm's are picked by index, normally the first 7), and
        # its linear rows are the world-frame velocity of the link's centre of mass (PhysX's dense
        # Jacobian), hence the shift to the EE point in measure.
        self._hand_body = r.get_body_index(HAND_LINK)
        self._hand_jacobian_block = self._hand_body - 1
        if not 0 <= self._hand_jacobian_block < n_blocks:
            raise RuntimeError(f"'{HAND_LINK}' is body {self._hand_body}, outside the {n_blocks} Jacobian blocks")

        # every link, in the articulation's body order: poses for the EE and TF, forces on the hand
        paths = _rigid_body_paths(self.world.stage, ROBOT_PRIM)
        unknown = [n for n in body_names if n not in paths]
        if unknown:
            raise RuntimeError(f"no rigid-body prims for the links {unknown} under {ROBOT_PRIM}")
        link_paths = [paths[n] for n in body_names]
        self.links = RigidPrim(
            link_paths, name="franka_links", reset_xform_properties=False, prepare_contact_sensors=False
        )
        self.links.initialize()
        if list(self.links.prim_paths) != link_paths:
            raise RuntimeError("the link view does not follow the articulation's body order")
        self._hand_only = np.array([self._hand_body])
        # TF frames: the links, the flange if the asset merged it into the hand, and the tools on the flange
        self._derive_flange = FLANGE_LINK not in body_names
        tools = tuple(bodies[self._rigid[k]].name for k in self._tools)
        self.frame_names = tuple(body_names) + ((FLANGE_LINK,) if self._derive_flange else ()) + tools

        # arm: pure torque control (no drive stiffness or damping), efforts limited like the motors
        n_arm = self._arm.size
        r.set_gains(kps=np.zeros((1, n_arm)), kds=np.zeros((1, n_arm)), joint_indices=self._arm)
        r.set_max_efforts(TORQUE_LIMITS[None, :], joint_indices=self._arm)
        # the robot carries its own weight (like MuJoCo's gravcomp): no gravity on any of its links
        r.set_body_disable_gravity(np.ones((1, r.num_bodies)))
        if not np.all(np.asarray(r.get_body_disable_gravity()) != 0):
            raise RuntimeError("Isaac Sim did not disable gravity on the Franka's links")

        base_position, base_quat = r.get_world_poses()
        self._base_position = np.asarray(base_position, dtype=float).reshape(3)
        self._base_quat = np.asarray(base_quat, dtype=float).reshape(4)  # (w, x, y, z)
        self._base_rotation_t = quat_wxyz_to_matrix(self._base_quat).T
        self._gravity_world = np.array([0.0, 0.0, -GRAVITY])
        com_positions, com_quats = r.get_body_coms(body_indices=self._hand_only)
        self._hand_mass = float(np.asarray(r.get_body_masses(body_indices=self._hand_only)).reshape(-1)[0])
        self._hand_com_own = np.asarray(com_positions, dtype=float).reshape(3)  # hand frame, without payload
        self._hand_com_quat = np.asarray(com_quats, dtype=float).reshape(1, 1, 4)
        self._hand_com = self._hand_com_own.copy()  # the point PhysX's hand Jacobian refers to
        # the tools on the flange, as one load in the hand frame: mass and centre of mass (PhysX's, from their shapes)
        self._tool_mass, self._tool_com = 0.0, np.zeros(3)
        if self._tools.size:
            masses = np.asarray(self.objects.get_masses(indices=self._tools), dtype=float).reshape(-1)
            coms = np.asarray(self.objects.get_coms(indices=self._tools)[0], dtype=float).reshape(-1, 3)
            in_hand = [pose * Pose(tuple(com)) for pose, com in zip(self._tool_poses, coms, strict=True)]
            self._tool_mass = float(masses.sum())
            self._tool_com = sum(m * np.array(p.position) for m, p in zip(masses, in_hand, strict=True)) / max(
                self._tool_mass, 1e-12
            )
        self._tool_gravity = np.zeros(7)  # the arm torques that hold the tools' weight

        self._tau = np.zeros(7)  # controller torque applied in the last step (after the limits)
        self._gravity = np.zeros(r.num_dof)
        self._wrench = np.zeros(6)  # base frame, at the EE point
        self._payload_mass = 0.0
        self._payload_com = np.zeros(3)  # hand frame
        self._ee_world = np.zeros(3)
        self._load_world = np.zeros(3)
        self._link_poses: tuple[np.ndarray, np.ndarray] | None = None  # link poses read in measure
        # (dq, coriolis, payload holding torque) at measure; then with the applied efforts
        self._pre_step: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._last_step: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._finger_target = FINGER_RANGE[1]
        self._state: ArmState | None = None
        self._tau_next = np.zeros(7)
        self.command_gripper(FINGER_RANGE[1], FRANKA_HAND_CONTINUOUS_FORCE)
        self._place_tools()

    def _place_tools(self) -> None:
        """Put the tools on the flange where their joints hold them (after the arm was moved at once)."""
        if not self._tools.size:
            return
        positions, quats = self.links.get_world_poses(indices=self._hand_only)
        hand = Pose(tuple(np.asarray(positions, dtype=float).reshape(3)), tuple(np.asarray(quats, float).reshape(4)))
        poses = [hand * local for local in self._tool_poses]
        self.objects.set_world_poses(
            positions=np.array([p.position for p in poses]),
            orientations=np.array([p.orient for p in poses]),
            indices=self._tools,
        )
        self.objects.set_velocities(np.zeros((self._tools.size, 6)), indices=self._tools)

    # ------------------------------------------------------------------ per tick
    def measure(self) -> ArmState:
        if self._state is None:
            self._state = self._measure()
        return self._state

    def set_torque(self, tau: np.ndarray) -> None:
        self._tau_next = np.asarray(tau, dtype=float)

    def _measure(self) -> ArmState:
        r = self.robot
        q = np.asarray(r.get_joint_positions(), dtype=float)[0]
        dq = np.asarray(r.get_joint_velocities(), dtype=float)[0]
        jacobians = np.asarray(r.get_jacobians(), dtype=float)[0]
        coriolis = np.asarray(r.get_coriolis_and_centrifugal_forces(), dtype=float)[0]
        self._gravity = np.asarray(r.get_generalized_gravity_forces(), dtype=float)[0]
        positions, quats = self.links.get_world_poses()
        self._link_poses = (np.asarray(positions, dtype=float), np.asarray(quats, dtype=float))
        hand_position = self._link_poses[0][self._hand_body]
        hand_rotation = quat_wxyz_to_matrix(self._link_poses[1][self._hand_body])

        ee_world = hand_position + hand_rotation[:, 2] * TCP_OFFSET
        com_world = hand_position + hand_rotation @ self._hand_com
        jacobian_world = shift_jacobian(jacobians[self._hand_jacobian_block][:, self._arm], com_world, ee_world)
        self._ee_world = ee_world
        holding = np.zeros(7)
        if self._payload_mass > 0.0:
            self._load_world = hand_position + hand_rotation @ self._payload_com
            load_jacobian = shift_jacobian(jacobian_world, ee_world, self._load_world)
            holding = -load_jacobian[:3].T @ (self._payload_mass * self._gravity_world)
        if self._tool_mass > 0.0:  # the tools' weight, carried by the motors like the arm's own
            tool_jacobian = shift_jacobian(jacobian_world, ee_world, hand_position + hand_rotation @ self._tool_com)
            self._tool_gravity = -tool_jacobian[:3].T @ (self._tool_mass * self._gravity_world)
        self._pre_step = (dq, coriolis, holding)
        rt = self._base_rotation_t
        rotation = rt @ hand_rotation  # the EE frame has the hand frame's orientation
        return ArmState(
            q=q[self._arm],
            dq=dq[self._arm],
            tau_measured=self._tau + self._gravity[self._arm] + self._tool_gravity,
            position=rt @ (ee_world - self._base_position),
            rotation=rotation,
            quat=matrix_to_quat_xyzw(rotation),
            jacobian=np.vstack((rt @ jacobian_world[:3], rt @ jacobian_world[3:])),
            coriolis=coriolis[self._arm],
        )

    def _step(self) -> None:
        r = self.robot
        self._state = None
        self._tau = clamp_motor_torque(self._tau_next, self._gravity[self._arm] + self._tool_gravity)
        r.set_joint_efforts(self._tau[None, :].astype(np.float32), joint_indices=self._arm)
        # PhysX clears applied forces after every step: the wrench and the payload's weight are
        # applied again before each one, at points measured in measure (world frame; the tensor
        # API adds the moment about the hand's centre of mass)
        if self._wrench.any():
            base_rotation = self._base_rotation_t.T
            self.links.apply_forces_and_torques_at_pos(
                forces=(base_rotation @ self._wrench[:3])[None, :],
                torques=(base_rotation @ self._wrench[3:])[None, :],
                positions=self._ee_world[None, :],
                indices=self._hand_only,
                is_global=True,
            )
        if self._payload_mass > 0.0:
            self.links.apply_forces_and_torques_at_pos(
                forces=(self._payload_mass * self._gravity_world)[None, :],
                positions=self._load_world[None, :],
                indices=self._hand_only,
                is_global=True,
            )
        if self._pre_step is not None:
            efforts = np.zeros(r.num_dof)
            efforts[self._arm] = self._tau
            self._last_step = (*self._pre_step, efforts)
        self.world.step(render=False)

    # ------------------------------------------------------------------ measurements
    def external_torque(self) -> np.ndarray:
        """From the equation of motion over the last step (gravity is off on the links):

        tau_ext = M (dq_after - dq_before) / dt + C(q, dq) dq - tau_applied, for the arm rows.
        Contacts, pushes and the applied wrench show up here (so do joint friction and limits); the
        payload's weight does not, as in the MuJoCo backend: the loop accounts for it.
        """
        if self._last_step is None:
            return np.zeros(7)
        dq_before, coriolis, holding, efforts = self._last_step
        r = self.robot
        dq_after = np.asarray(r.get_joint_velocities(), dtype=float)[0]
        mass = np.asarray(r.get_mass_matrices(), dtype=float)[0]
        tau = mass @ ((dq_after - dq_before) / self.timestep) + coriolis - efforts
        return tau[self._arm] + holding

    def joint_state(self) -> tuple[np.ndarray, np.ndarray]:
        r = self.robot
        q = np.asarray(r.get_joint_positions(), dtype=float)[0]
        dq = np.asarray(r.get_joint_velocities(), dtype=float)[0]
        return q[self._all], dq[self._all]

    def frame_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """Poses of `frame_names` in the base frame; the links as measured at the start of the step."""
        if self._link_poses is None:
            positions, quats = self.links.get_world_poses()
            self._link_poses = (np.asarray(positions, dtype=float), np.asarray(quats, dtype=float))
        positions, quats = self._link_poses
        if self._derive_flange:  # franka_description: the hand is the flange turned by HAND_YAW
            back = np.array([math.cos(-HAND_YAW / 2), 0.0, 0.0, math.sin(-HAND_YAW / 2)])
            positions = np.vstack([positions, positions[self._hand_body]])
            quats = np.vstack([quats, quat_multiply_wxyz(quats[self._hand_body], back)])
        if self._tools.size:
            tool_positions, tool_quats = self.objects.get_world_poses(indices=self._tools)
            positions = np.vstack([positions, np.asarray(tool_positions, dtype=float).reshape(-1, 3)])
            quats = np.vstack([quats, np.asarray(tool_quats, dtype=float).reshape(-1, 4)])
        base_conjugate = self._base_quat * np.array([1.0, -1.0, -1.0, -1.0])
        positions = (positions - self._base_position) @ self._base_rotation_t.T
        quats = quat_multiply_wxyz(base_conjugate, quats)
        return positions, quats[:, [1, 2, 3, 0]]

    def gripper_positions(self) -> np.ndarray:
        return np.asarray(self.robot.get_joint_positions(), dtype=float)[0][self._fingers]

    # ------------------------------------------------------------------ commands
    def command_gripper(self, position: float, max_effort: float) -> None:
        """Both fingers to `position` [m per finger, 0 closed .. 0.04 open], each pushing at most `max_effort` [N].

        The asset's finger position drives move them; their force limit makes a grasp effort-limited.
        A non-positive `max_effort` means the hand's continuous grasp force (70 N).
        """
        target = float(np.clip(position, *FINGER_RANGE)) if math.isfinite(position) else self._finger_target
        force = float(max_effort) if math.isfinite(max_effort) and max_effort > 0.0 else FRANKA_HAND_CONTINUOUS_FORCE
        force = min(force, GRIPPER_FORCE_MAX)
        self._finger_target = target
        r = self.robot
        r.set_max_efforts(np.full((1, 2), force), joint_indices=self._fingers)
        r.set_joint_position_targets(np.full((1, 2), target), joint_indices=self._fingers)

    def set_external_wrench(self, wrench: np.ndarray) -> None:
        """Force and torque (base frame) applied at the end-effector point, every step until changed."""
        self._wrench = np.array(wrench, dtype=float).reshape(6)

    def set_payload(self, mass: float, center_of_mass: np.ndarray, inertia: np.ndarray) -> None:
        """A load at the flange, as a point mass: its mass and centre of mass join the hand link, and its
        weight acts as a force at that point (the links carry no gravity). `inertia` is not modelled."""
        mass = max(0.0, float(mass))
        com_hand = self._rot_flange_ee.T @ np.asarray(center_of_mass, dtype=float).reshape(3)  # flange -> hand
        total = self._hand_mass + mass
        com = (self._hand_mass * self._hand_com_own + mass * com_hand) / total
        r = self.robot
        r.set_body_masses(np.array([[total]]), body_indices=self._hand_only)
        r.set_body_coms(positions=com[None, None, :], orientations=self._hand_com_quat, body_indices=self._hand_only)
        self._hand_com = com
        self._payload_mass, self._payload_com = mass, com_hand

    def set_arm_configuration(self, q: np.ndarray) -> None:
        r = self.robot
        q = np.asarray(q, dtype=float).reshape(7)
        r.set_joint_positions(q[None, :], joint_indices=self._arm)
        r.set_joint_velocities(np.zeros((1, self._all.size)), joint_indices=self._all)
        # set_joint_positions also moved every drive target to the current position: restore the fingers'
        r.set_joint_position_targets(np.full((1, 2), self._finger_target), joint_indices=self._fingers)
        self._tau = np.zeros(7)
        self._state = None
        self._link_poses = None
        self._pre_step = None
        self._last_step = None
        self._place_tools()  # the joints of the tools would otherwise pull them across the jump

    def object_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (n, 3) and (w, x, y, z) quaternions (n, 4) of every object, world frame, the
        world's order: the rigid bodies as PhysX has them, the static ones as authored."""
        positions, quats = self._authored[0].copy(), self._authored[1].copy()
        if self.objects is not None:
            rigid_positions, rigid_quats = self.objects.get_world_poses()
            positions[self._rigid] = np.asarray(rigid_positions, dtype=float).reshape(-1, 3)
            quats[self._rigid] = np.asarray(rigid_quats, dtype=float).reshape(-1, 4)
        return positions, quats

    def grasp_at_start(self, indices: Sequence[int]) -> None:
        """Put the objects `indices` (of `bodies`, mount gripper) in the hand at their poses in the EE
        frame and close the fingers on them (70 N), weightless and with the arm held still for
        HOLD_SETTLE_S, as the MuJoCo backend does; then the arm is set back at rest."""
        view = np.array([int(np.flatnonzero(self._rigid == i)[0]) for i in indices], dtype=int)
        if not view.size:
            return
        self._state = None
        s = self._measure()
        base = Pose(tuple(self._base_position), tuple(self._base_quat))
        ee = base * Pose.of(s.position, Rotation.from_matrix(s.rotation))
        poses = [ee * self.bodies[i].local_pose for i in indices]
        o = self.objects
        o.set_world_poses(
            positions=np.array([p.position for p in poses]),
            orientations=np.array([p.orient for p in poses]),
            indices=view,
        )
        o.set_velocities(np.zeros((view.size, 6)), indices=view)
        o.disable_gravities(indices=view)
        self.command_gripper(FINGER_RANGE[0], 0.0)
        q0 = s.q.copy()
        r = self.robot
        r.set_joint_efforts(np.zeros((1, self._arm.size), dtype=np.float32), joint_indices=self._arm)
        for _ in range(round(HOLD_SETTLE_S / self.timestep)):
            r.set_joint_positions(q0[None, :], joint_indices=self._arm)
            r.set_joint_velocities(np.zeros((1, self._arm.size)), joint_indices=self._arm)
            r.set_joint_position_targets(np.full((1, 2), self._finger_target), joint_indices=self._fingers)
            self.world.step(render=False)
        o.enable_gravities(indices=view)
        self.set_arm_configuration(q0)

    def close(self, exit_code: int = 0) -> None:
        """Shut Isaac Sim down. With Kit's fast shutdown (its default) this ends the process with `exit_code`."""
        app, self._app = getattr(self, "_app", None), None
        if app is not None:
            app.close(exit_code=exit_code)


class IsaacWorld(PhysicsWorld):
    """A world of one robot at the origin (CAPABILITIES['isaac']) and its objects: those in the world
    or in the gripper are the world's frames, the tools on the flange the robot's."""

    capabilities = CAPABILITIES["isaac"]

    def __init__(self, world: WorldSpec, timestep: float = 0.001, headless: bool = True) -> None:
        (robot,) = world.robots
        if any(robot.base_position) or robot.base_yaw:
            raise ValueError("the isaac backend places its robot at the world origin: base_position 0, base_yaw 0")
        # the objects' prims before Isaac Sim boots (a minute): a mesh it cannot read stops the start at once
        self.spec = world
        self.bodies = translate_world(world)
        self.frame_names = world_frame_names(self.bodies)
        self._frames = np.array([i for i, b in enumerate(self.bodies) if b.mount != "flange"], dtype=int)
        self.robot = IsaacRobot(timestep, headless=headless, gripper=robot.gripper_type, bodies=self.bodies)
        self.robots = (self.robot,)
        self.timestep = timestep

    def begin_step(self) -> None:
        self.robot._state = None

    def start(self) -> None:
        """The objects the gripper holds at start go into it, the fingers closed on them."""
        held = [i for i, b in enumerate(self.bodies) if b.mount == "gripper"]
        if held:
            self.robot.grasp_at_start(held)

    def object_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """Every object of the world's spec, in its order, world frame, (x, y, z, w) quaternions."""
        positions, quats = self.robot.object_poses()
        return positions, quats[:, [1, 2, 3, 0]]

    def frame_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """The objects of `frame_names` (all but the tools on the flange), world frame."""
        positions, quats = self.object_poses()
        return positions[self._frames], quats[self._frames]

    def contacts(self) -> set[frozenset[str]]:
        raise NotImplementedError("the isaac backend reports no contacts yet (capabilities.contacts is False)")

    def end_step(self) -> None:
        self.robot._step()

    def close(self) -> None:
        self.robot.close()
