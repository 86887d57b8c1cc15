"""franka_server_ros2: HIL-SERL's franka_server HTTP routes over ROS 2.

  robot_client.py   rclpy node: subscribes to the state topics, commands the robot
  grippers.py       gripper types (Robotiq 2F-85, Franka hand) and their normalisation
  requests.py       parsing and validation of request bodies (400 on anything malformed)
  app.py            the Flask application factory: routes that only parse, call and format
  main.py           the process: ROS node in a background executor, Flask in front
It does not know whether a simulator or the real robot is behind the topics.
"""
