"""The README's picture: a task's world as the MuJoCo backend builds it, at its start, from a free camera.

    scripts/run.sh python scripts/render_scene.py ram_insertion docs/images/ram_insertion.png

No ROS, no simulation loop: the world of config/tasks/<task>.yaml (MujocoWorld), its start (each arm at its
reset joints, an object held from the start put in the gripper), one off-screen frame (MUJOCO_GL=egl on the CPU).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cv2
import mujoco
import numpy as np

from isaac_franka_bridge.backends.mujoco_backend import MujocoWorld
from isaac_franka_bridge.world import load_world

ROOT = Path(__file__).resolve().parent.parent


def render(task: str, width: int, height: int, lookat, distance: float, azimuth: float, elevation: float) -> np.ndarray:
    world = MujocoWorld(load_world(str(ROOT / "config" / "tasks" / f"{task}.yaml")))
    for robot in world.robots:  # as the simulation starts them: at their reset joints
        robot.set_arm_configuration(np.array(robot.spec.reset_joint_target))
    world.start()
    model, data = world.model, world.data
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, height)
    camera = mujoco.MjvCamera()
    camera.lookat[:], camera.distance, camera.azimuth, camera.elevation = lookat, distance, azimuth, elevation
    with mujoco.Renderer(model, height, width) as renderer:
        renderer.update_scene(data, camera)
        return renderer.render()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", help="a task file's name in config/tasks")
    parser.add_argument("output", type=Path, help="the PNG to write")
    parser.add_argument("--size", type=int, nargs=2, default=(960, 540), metavar=("W", "H"))
    parser.add_argument("--lookat", type=float, nargs=3, default=(0.33, -0.05, 0.3), metavar=("X", "Y", "Z"))
    parser.add_argument("--distance", type=float, default=1.35)
    parser.add_argument("--azimuth", type=float, default=240.0)
    parser.add_argument("--elevation", type=float, default=-18.0)
    args = parser.parse_args()
    rgb = render(args.task, *args.size, args.lookat, args.distance, args.azimuth, args.elevation)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(args.output), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    print(args.output)


if __name__ == "__main__":
    main()
