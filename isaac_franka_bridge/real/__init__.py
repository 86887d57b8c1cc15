"""The real arm behind the same server: franka_ros2's state and commands turned into the contract's.

Pure conversion (no ROS, no franka_ros2 needed): `kinematics` (the arm's zero Jacobian from its
published Denavit-Hartenberg parameters), `state` (a FrankaRobotState as the contract's state topics),
`compliance` (the serl compliance parameters as a Cartesian controller's own), `gripper` (the Franka
hand's GripperCommand goals as franka_gripper's move and grasp). `adapter_node` is the ROS 2 node that
uses them; it is imported only by real.launch.py's executable, where franka_ros2 is installed.
"""
