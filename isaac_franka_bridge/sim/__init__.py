"""The simulation loop shared by every physics backend (no ROS here)."""
