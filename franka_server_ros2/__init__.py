"""franka_server_ros2: HIL-SERL's franka_server HTTP routes over ROS 2.

  robot.py          what the routes need of a robot (a Protocol), its errors, state and settings
  robot_client.py   the rclpy node implementing it: state topics in, commands out
  app.py            create_app(robot, cameras, settings): routes that only parse, call and format
  bodies.py         parsing and validation of request bodies (400 on anything malformed)
  grippers.py       the original gripper servers' behaviour (Robotiq 2F-85, Franka hand)
  cameras.py        camera frames from ROS 2 for the camera routes; camera_specs.py their YAML
  process.py        a node never outlives its launch
  main.py           the process: ROS node in a background executor, Flask in front
It does not know whether a simulator or the real robot is behind the topics, and imports nothing
of the simulator.
"""
