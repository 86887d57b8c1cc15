"""Simulated Franka arm for HIL-SERL over ROS 2.

Layout (the architecture, one concern per folder):
  controller/  the real robot's Cartesian impedance law, pure numpy (no ROS, no simulator)
  sim/         the simulation loop shared by every backend: pacing, modes, snapshots
  backends/    physics only: MuJoCo (CPU) and Isaac Sim (GPU) behind one small interface
  ros/         ROS 2 I/O only: parameters, topics, services, actions, diagnostics
"""
