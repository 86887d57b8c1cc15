#!/usr/bin/env python3
"""Smoke test of the Isaac Sim backend on a GPU host (scripts/gpu_check.sh runs it).

It starts IsaacWorld (one Franka) headless and drives it with the shared CartesianImpedanceController through
the shared SimulationLoop (its own thread, real_time_factor=0), as the sim bridge does, and checks:
  1. kinematics: the EE pose at the reset configuration matches Franka's published kinematics
     (DH parameters + flange + Franka Hand EE offset) within 5 mm / 0.05 rad;
  2. tracking (the pass criterion of the task): after 2000 ticks toward a target 3 cm away along x,
     the EE is within 2 mm of it; tick time median / p99 are printed;
  3. Jacobian: J dq matches the finite-difference EE velocity during a move with rotation (median
     relative error < 10 %, linear and angular);
  4. external force: a 10 N push along y displaces the EE by about F / K (+-25 %) and the estimated
     external force (from external_torque) is about 10 N (+-3 N);
  5. objects (first, in a process of its own: Isaac Sim runs once per process): a world of every kind
     of object (box, cylinder, sphere, ellipsoid, an OBJ mesh, a compound, a fixed post, a tool on the
     flange, a cube held by the gripper at start) built from its description, 1 s under the impedance
     controller holding the reset pose: the free ones rest on the table where they were put (height
     within 3 mm, 1 cm across), the post has not moved, the tool stays on the flange (2 mm, 0.02 rad)
     and the cube in the hand (5 mm from the EE).
Exit code 0 only if every check passes. Kit's fast shutdown ends the process in backend.close().
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, no install needed

from isaac_franka_bridge.backends.isaac_backend import FLANGE_LINK, IsaacWorld  # noqa: E402
from isaac_franka_bridge.backends.isaac_scene import Pose, panda_flange_pose  # noqa: E402
from isaac_franka_bridge.controller import CartesianImpedanceController  # noqa: E402
from isaac_franka_bridge.controller.impedance import quat_conjugate, quat_multiply  # noqa: E402
from isaac_franka_bridge.sim.loop import SimulationLoop  # noqa: E402
from isaac_franka_bridge.sim.state import RobotSnapshot  # noqa: E402
from isaac_franka_bridge.world import ObjectSpec, PartSpec, RobotSpec, WorldSpec, check_world, one_robot_world  # noqa: E402

RESET_Q = np.array([0.0, 0.0, 0.0, -1.9, 0.0, 2.0, 0.0])  # the sim bridge's default reset configuration
TARGET_OFFSET = np.array([0.03, 0.0, 0.0])  # [m]
TRACKING_TICKS = 2000
TRACKING_TOLERANCE = 0.002  # [m]
PUSH_FORCE = np.array([0.0, 10.0, 0.0])  # [N], base frame
STIFFNESS = 2000.0  # [N/m] the controller's default translational stiffness

EE_D, HAND_YAW = 0.1034, -math.pi / 4  # Franka Hand: flange -> EE (public facts)
SETTLE_TICKS = 1000  # objects: 1 s of simulation after the start
WEDGE_OBJ = """# a 4 x 3 x 2 cm box around its centre, quads
v -0.02 -0.015 -0.01\nv 0.02 -0.015 -0.01\nv 0.02 0.015 -0.01\nv -0.02 0.015 -0.01
v -0.02 -0.015 0.01\nv 0.02 -0.015 0.01\nv 0.02 0.015 0.01\nv -0.02 0.015 0.01
f 1 4 3 2\nf 5 6 7 8\nf 1 2 6 5\nf 2 3 7 6\nf 3 4 8 7\nf 4 1 5 8
"""


def franka_ee_pose(q: np.ndarray) -> np.ndarray:
    """O_T_EE of a Panda with the Franka Hand (4x4): the published DH kinematics (isaac_scene's)."""
    c, s = math.cos(HAND_YAW), math.sin(HAND_YAW)
    hand = np.array([[c, -s, 0.0, 0.0], [s, c, 0.0, 0.0], [0.0, 0.0, 1.0, EE_D], [0.0, 0.0, 0.0, 1.0]])
    return panda_flange_pose(q) @ hand


def rotation_angle(r1: np.ndarray, r2: np.ndarray) -> float:
    return math.acos(max(-1.0, min(1.0, (np.trace(r1.T @ r2) - 1.0) / 2.0)))


def quat_about_z(angle: float, quat: np.ndarray) -> np.ndarray:
    """`quat` (x, y, z, w) rotated by `angle` about the base z axis."""
    return quat_multiply(np.array([0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)]), quat)


class Recorder:
    """Keeps every snapshot the loop publishes (one per tick at 1 kHz)."""

    def __init__(self) -> None:
        self.snapshots: list[RobotSnapshot] = []

    def __call__(self, sim_time: float, snapshots: list[RobotSnapshot]) -> None:
        self.snapshots.append(snapshots[0])


def run_ticks(loop: SimulationLoop, ticks: int, timeout: float = 600.0) -> float:
    """Run the loop's thread for about `ticks` ticks; returns the wall time it took."""
    goal = loop.ticks + ticks
    start = time.perf_counter()
    loop.start()
    while loop.ticks < goal and time.perf_counter() - start < timeout:
        if not loop.running:
            raise RuntimeError("the simulation loop stopped (see the log above)")
        time.sleep(0.002)
    loop.stop()
    if loop.ticks < goal:
        raise RuntimeError(f"only {loop.ticks} of {goal} ticks in {timeout:.0f} s")
    return time.perf_counter() - start


def check(name: str, ok: bool, detail: str) -> bool:
    print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}", flush=True)
    return ok


def jacobian_errors(snapshots: list[RobotSnapshot], dt: float) -> tuple[float, float]:
    """Median relative error of J dq against the finite-difference EE velocity (linear, angular)."""
    linear, angular = [], []
    for before, after in zip(snapshots, snapshots[1:], strict=False):
        v_fd = (after.position - before.position) / dt
        dq = quat_multiply(after.quat, quat_conjugate(before.quat))
        w_fd = 2.0 * np.sign(dq[3] or 1.0) * dq[:3] / dt
        v_j, w_j = after.twist[:3], after.twist[3:]  # semi-implicit step: q_after = q_before + dt dq_after
        if np.linalg.norm(v_j) > 0.005:
            linear.append(np.linalg.norm(v_fd - v_j) / np.linalg.norm(v_j))
        if np.linalg.norm(w_j) > 0.02:
            angular.append(np.linalg.norm(w_fd - w_j) / np.linalg.norm(w_j))
    median = lambda values: float(np.median(values)) if values else float("nan")  # noqa: E731
    return median(linear), median(angular)


def objects_world(directory: str) -> tuple[WorldSpec, dict[str, float]]:
    """One Franka and every kind of object, away from the arm; and the height each free one rests at."""
    mesh = os.path.join(directory, "wedge.obj")
    with open(mesh, "w") as f:
        f.write(WEDGE_OBJ)
    objects = (
        ObjectSpec("block", "box", (0.04, 0.04, 0.04), (0.5, 0.25, 0.02), (0.0, 0.0, 0.3), 0.1),
        ObjectSpec("can", "cylinder", (0.03, 0.1), (0.62, 0.25, 0.05), mass=0.2, rgba=(0.2, 0.6, 0.2, 1.0)),
        ObjectSpec("ball", "sphere", (0.025,), (0.5, -0.25, 0.025), mass=0.05),
        ObjectSpec("egg", "ellipsoid", (0.06, 0.04, 0.04), (0.62, -0.25, 0.02), mass=0.06),  # on its side
        ObjectSpec("wedge", "mesh", (1.0, 1.0, 1.0), (0.7, 0.15, 0.01), (0.0, 0.0, 0.5), 0.08, mesh=mesh),
        ObjectSpec(
            "gadget",  # its frame at its bottom: a plate and a knob
            position=(0.45, -0.38, 0.0),
            mass=0.15,
            parts=(
                PartSpec("box", (0.06, 0.06, 0.02), (0.0, 0.0, 0.01)),
                PartSpec("sphere", (0.015,), (0.0, 0.0, 0.035), rgba=(0.1, 0.1, 0.9, 1.0)),
            ),
        ),
        ObjectSpec("post", "cylinder", (0.02, 0.3), (0.35, 0.4, 0.15), mass=0.0),
        ObjectSpec("tool", "box", (0.02, 0.02, 0.02), (0.0, 0.0, 0.15), mass=0.05, mount="flange"),
        ObjectSpec("held", "box", (0.03, 0.03, 0.03), (0.0, 0.0, 0.0), mass=0.05, mount="gripper"),
    )
    rest = {"block": 0.02, "can": 0.05, "ball": 0.025, "egg": 0.02, "wedge": 0.01, "gadget": 0.0}
    return check_world([RobotSpec(gripper_type="Franka", cameras_config="")], objects), rest


def objects_main(args: argparse.Namespace) -> int:
    """Check 5 (its own process): the world's objects built, started and stepped."""
    results = []
    with tempfile.TemporaryDirectory() as directory:
        spec, rest = objects_world(directory)
        world = IsaacWorld(spec, headless=not args.gui)
    backend = world.robot
    try:
        names = [o.name for o in spec.objects]
        results.append(
            check(
                "object frames",
                world.frame_names == tuple(n for n in names if n != "tool") and backend.frame_names[-1] == "tool",
                f"world frames {world.frame_names}, the robot's last {backend.frame_names[-1]}",
            )
        )
        backend.set_arm_configuration(RESET_Q)
        world.start()  # the gripper closes on 'held'
        world.begin_step()
        s = backend.measure()
        recorder = Recorder()
        controller = CartesianImpedanceController()
        loop = SimulationLoop(world, [controller], recorder, publish_rate=1000.0, real_time_factor=0.0)
        loop.robots[0].start_controller()
        controller.set_target(s.position, s.quat)
        run_ticks(loop, SETTLE_TICKS)
        positions, quats = world.object_poses()
        pose = {n: (positions[i], quats[i]) for i, n in enumerate(names)}
        print("object poses after 1 s (world frame, x y z, qx qy qz qw):", flush=True)
        for name in names:
            print(f"  {name:7s} {np.round(pose[name][0], 4)} {np.round(pose[name][1], 4)}", flush=True)
        results.append(
            check("object quaternions", bool(np.allclose(np.linalg.norm(quats, axis=1), 1.0, atol=1e-4)), "unit")
        )
        frame_positions, _ = world.frame_poses()
        results.append(
            check(
                "object frames follow object_poses",
                bool(np.allclose(frame_positions, positions[[names.index(n) for n in world.frame_names]])),
                "same poses",
            )
        )
        for obj in spec.objects:
            if obj.name not in rest:
                continue
            position = pose[obj.name][0]
            drift = float(np.linalg.norm(position[:2] - np.array(obj.position[:2])))
            height = float(position[2] - rest[obj.name])
            results.append(
                check(
                    f"{obj.name} rests on the table",
                    abs(height) < 0.003 and drift < 0.01,
                    f"{height * 1e3:+.1f} mm from its resting height, {drift * 1e3:.1f} mm across",
                )
            )
        post = spec.objects[names.index("post")]
        expected = Pose.from_rpy(post.position, post.rpy)
        results.append(
            check(
                "the fixed post stays",
                bool(np.allclose(pose["post"][0], expected.position, atol=1e-6)),
                f"at {np.round(pose['post'][0], 4)}",
            )
        )
        # the tool: its pose against the flange's (the robot's frames, base frame = world frame here)
        frame_positions, frame_quats = backend.frame_poses()
        flange_index = backend.frame_names.index(FLANGE_LINK)
        x, y, z, w = frame_quats[flange_index]
        flange = Pose(tuple(frame_positions[flange_index]), (w, x, y, z))
        tool_spec = spec.objects[names.index("tool")]
        want = flange * Pose.from_rpy(tool_spec.position, tool_spec.rpy)
        x, y, z, w = pose["tool"][1]
        off = float(np.linalg.norm(pose["tool"][0] - np.array(want.position)))
        angle = (want.inverse() * Pose((0.0, 0.0, 0.0), (w, x, y, z))).rotation.magnitude()
        results.append(
            check("the tool stays on the flange", off < 0.002 and angle < 0.02, f"{off * 1e3:.2f} mm, {angle:.4f} rad")
        )
        final = recorder.snapshots[-1]  # EE in the base frame = world frame (the robot stands at the origin)
        held = float(np.linalg.norm(pose["held"][0] - final.position))
        results.append(
            check(
                "the gripper holds its cube",
                held < 0.005 and pose["held"][0][2] > 0.2,
                f"{held * 1e3:.1f} mm from the EE, at z = {pose['held'][0][2]:.3f} m; fingers at "
                f"{np.round(backend.gripper_positions(), 4)} m",
            )
        )
    except Exception:
        traceback.print_exc()
        results.append(False)
    ok = bool(results) and all(results)
    print("isaac smoke test (objects): " + ("PASSED" if ok else "FAILED"), flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    backend.close(exit_code=0 if ok else 1)  # Kit's fast shutdown ends the process here
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gui", action="store_true", help="open Isaac Sim's window (default: headless)")
    parser.add_argument("--objects", action="store_true", help="run only check 5 (the objects), in this process")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    if args.objects:
        return objects_main(args)
    results = []

    # 5. objects, first, in a process of its own (one Isaac Sim per process; never two at once)
    command = [sys.executable, str(Path(__file__).resolve()), "--objects"] + (["--gui"] if args.gui else [])
    objects = subprocess.run(command, check=False).returncode
    results.append(check("objects", objects == 0, f"'{' '.join(command[1:])}' exited {objects}"))

    t0 = time.perf_counter()
    world = IsaacWorld(one_robot_world("Franka"), headless=not args.gui)
    backend = world.robot
    print(f"Isaac Sim started and the Franka loaded in {time.perf_counter() - t0:.1f} s", flush=True)
    try:
        backend.set_arm_configuration(RESET_Q)
        world.begin_step()
        s = backend.measure()
        expected = franka_ee_pose(s.q)
        results.append(
            check(
                "kinematics",
                np.linalg.norm(s.position - expected[:3, 3]) < 0.005
                and rotation_angle(s.rotation, expected[:3, :3]) < 0.05,
                f"EE {np.round(s.position, 4)} vs Franka FK {np.round(expected[:3, 3], 4)}, "
                f"rotation off by {rotation_angle(s.rotation, expected[:3, :3]):.4f} rad",
            )
        )

        recorder = Recorder()
        controller = CartesianImpedanceController()
        loop = SimulationLoop(world, [controller], recorder, publish_rate=1000.0, real_time_factor=0.0)
        loop.robots[0].start_controller()
        start_position, start_quat = s.position.copy(), s.quat.copy()

        # between runs the loop's thread is stopped, so the controller and backend are called directly
        # 2. tracking: 3 cm along x
        target = start_position + TARGET_OFFSET
        controller.set_target(target, start_quat)
        wall = run_ticks(loop, TRACKING_TICKS)
        ticks_ms = np.array(loop.tick_durations) * 1e3
        final = recorder.snapshots[-1]
        error = float(np.linalg.norm(final.position - target))
        rtf = TRACKING_TICKS * world.timestep / wall
        print(
            f"{TRACKING_TICKS} ticks in {wall:.2f} s (real-time factor {rtf:.2f}); "
            f"tick time median {np.median(ticks_ms):.3f} ms, p99 {np.percentile(ticks_ms, 99):.3f} ms",
            flush=True,
        )
        results.append(check("tracking", error < TRACKING_TOLERANCE, f"final error {error * 1e3:.2f} mm (limit 2 mm)"))

        # 3. Jacobian: back to the start with a 0.1 rad turn about z
        first = len(recorder.snapshots)
        controller.set_target(start_position, quat_about_z(0.1, start_quat))
        run_ticks(loop, 1000)
        linear, angular = jacobian_errors(recorder.snapshots[first:], world.timestep)
        results.append(
            check(
                "jacobian",
                linear < 0.1 and angular < 0.1,
                f"median relative error of J dq: linear {linear:.3f}, angular {angular:.3f} (limit 0.1)",
            )
        )

        # 4. external force: 10 N along y at the EE
        before = recorder.snapshots[-1].position.copy()
        backend.set_external_wrench(np.concatenate([PUSH_FORCE, np.zeros(3)]))  # loop stopped: direct call
        run_ticks(loop, 1500)
        settled = recorder.snapshots[-200:]
        offset = np.mean([snap.position for snap in settled], axis=0) - before
        # K_F_ext_hat_K is the force the robot exerts on its surroundings, in the EE frame: norm only
        estimated = float(np.mean([np.linalg.norm(snap.wrench[:3]) for snap in settled]))
        expected_offset = PUSH_FORCE[1] / STIFFNESS
        results.append(
            check(
                "external force",
                abs(offset[1] - expected_offset) < 0.25 * expected_offset and abs(estimated - 10.0) < 3.0,
                f"offset {offset[1] * 1e3:.2f} mm (F/K = {expected_offset * 1e3:.1f} mm), "
                f"estimated external force {estimated:.1f} N (applied 10 N)",
            )
        )
        backend.set_external_wrench(np.zeros(6))
    except Exception:
        traceback.print_exc()
        results.append(False)
    ok = bool(results) and all(results)
    print("isaac smoke test: " + ("PASSED" if ok else "FAILED"), flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    backend.close(exit_code=0 if ok else 1)  # Kit's fast shutdown ends the process here
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        code = main()
    except Exception:  # Isaac Sim did not start: nothing to close
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)  # an atexit handler of Kit would otherwise turn this into exit code 0
    sys.exit(code)
