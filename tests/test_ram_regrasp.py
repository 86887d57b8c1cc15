"""RAMEnv's F1 regrasp (HIL-SERL's examples/experiments/ram_insertion/wrapper.py), unaltered, against the simulated
ram_insertion world: F1 (the virtual keyboard), RAMEnv's reset lifts, asks "Press enter to release gripper..."
(answered on its stdin), opens the gripper, asks "Place RAM in holder and press enter to grasp..." (the test does
the person's part, POST /task/place {"place": "holder"}, then answers), takes the stick from the holder at the
config's GRASP_POSE with close_gripper_slow and goes back to its reset pose. The stick is back in the hand, and the
next insertion seats it. Real launch (with the experiment's two wrist cameras, which RAMEnv reads), real HTTP,
MuJoCo; HIL-SERL's own RAMEnv, FrankaEnv, RSCapture/VideoCapture (over the virtual RealSense) and pynput (over the
virtual keyboard) in HIL-SERL's environment (tests/hil_serl.py)."""

from __future__ import annotations

import time

import hil_serl
import numpy as np
from example_configs import RAM_INSERTION
from test_tasks import in_hand, task_world, truth

from conftest import wait_until

# RAMEnv with the config's every value but where the server is (a free port here) and DISPLAY_IMAGE (no screen);
# F1 is pressed once its first reset is done, then the regrasp's reset; then steps toward the pose the test gives
RAMENV = """
import sys, numpy as np
from experiments.ram_insertion.config import EnvConfig
from experiments.ram_insertion.wrapper import RAMEnv

class Config(EnvConfig):
    SERVER_URL = sys.argv[1]
    DISPLAY_IMAGE = False

env = RAMEnv(fake_env=False, save_video=False, config=Config())
env.reset()
print("RESET DONE", flush=True)
while not env.should_regrasp:  # F1 on the keyboard
    env.step(np.zeros(7))
env.reset()  # the regrasp, its prompts answered on stdin, then the reset
print("REGRASPED", flush=True)
from scipy.spatial.transform import Rotation
aim = np.array([float(v) for v in input("aim? ").split()])  # x, y, z, euler xyz
for _ in range(60):  # a policy toward the aim: RAMEnv.step's relative moves within ACTION_SCALE and the limits
    action = np.zeros(7)
    action[:3] = (aim[:3] - env.currpos[:3]) / env.action_scale[0]
    turn = Rotation.from_euler("xyz", aim[3:]) * Rotation.from_quat(env.currpos[3:]).inv()
    action[3:6] = turn.as_rotvec() / env.action_scale[1]
    env.step(np.clip(action, -1, 1))
print("INSERTED", flush=True)
"""
HELD_AT_START = np.array([0.0, 0.0, 0.0127])  # the stick's centre in the end-effector frame (ram_insertion.yaml)


@hil_serl.may_build
def test_ramenvs_regrasp_takes_the_stick_from_the_holder_and_the_next_insertion_seats():
    with task_world("ram_insertion", "cameras_config:=", "camera_render_divisor:=4") as (clients, _):
        robot = clients[""]
        env = {"FRANKA_SIM_URL": robot.url, **{f"FRANKA_SIM_{d}": "1" for d in ("CAMERAS", "SPACEMOUSE", "KEYS")}}
        code = ["-c", RAMENV, robot.url]
        with hil_serl.Session(code, env=env, cwd=hil_serl.EXAMPLES) as ramenv:
            ramenv.expect("RESET DONE", 120.0)
            assert robot.ok("keys", {"key": "f1"})
            ramenv.expect("Press enter to release gripper", 30.0)
            ramenv.answer()
            ramenv.expect("Place RAM in holder and press enter to grasp", 30.0)
            assert wait_until(lambda: robot.state()["gripper_pos"] > 0.85, 5.0)  # opened: the stick dropped
            time.sleep(1.0)
            assert robot.ok("task/place", {"place": "holder"}) == "Placed ram in holder"  # the person's part
            ramenv.answer()
            ramenv.expect("REGRASPED", 60.0)
            # back in the hand, closed on it: as deep as at the start within 4 mm (where the hand closed as it came
            # down), along the stick within RAMEnv's own randomisation of the grasp (+-5 mm in x), between the pads
            held = in_hand(robot, "ram")
            assert robot.state()["gripper_pos"] < 0.1
            assert abs(held[2] - HELD_AT_START[2]) < 0.004 and abs(held[0]) < 0.006 and abs(held[1]) < 0.001, held
            # the insertion: TARGET_POSE, moved by where the stick sits in the hand (what a policy that sees the
            # stick does; EE x is the base's x, EE y its -y at this orientation), pressed 5 mm down
            target = RAM_INSERTION.target_pose
            aim = [target[0] - (held[0] - HELD_AT_START[0]), target[1] + held[1], target[2] - 0.005, *target[3:]]
            ramenv.expect("aim?", 30.0)
            ramenv.answer(" ".join(f"{v:.6f}" for v in aim))
            ramenv.expect("INSERTED", 60.0)
        seated = truth(robot)
        assert seated["success"], seated["detail"]
        assert np.linalg.norm(in_hand(robot, "ram") - held) < 0.001  # and it did not move in the hand doing so
