"""ROS 2 I/O of the sim bridge: nodes that only translate between ROS and the simulation loop."""
