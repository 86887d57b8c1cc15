"""Scripted SpaceMouse experts for HIL-SERL's example experiments on the Franka simulation.

`python -m scripted_expert --task <task>` (__main__.py); `experts.EXPERTS[task](urls).run()` from Python.
Each reads the simulator's ground truth (GET /task) and the robot's state (POST /getstate) and posts the
SpaceMouse input a person would give (POST /spacemouse) until the task succeeds (experts.py, motion.py).
"""

__version__ = "0.1.0"
