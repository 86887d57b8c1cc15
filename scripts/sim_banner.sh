#!/usr/bin/env bash
# Says where to look, then runs the given command (the launch of the simulation).
cat <<'TXT'
------------------------------------------------------------------------------------------
 Simulated Franka world (MuJoCo) + one franka_server_ros2 per robot
   Servers:  each logs "serving the franka_server routes on http://..." below
             (default task pick_cube: http://127.0.0.1:5000/; task:=ram_insertion: 127.0.0.2)
   Teleop:   http://127.0.0.1:5000/teleop in a browser: cameras, state, keys as a SpaceMouse
   HTTP:     curl -X POST http://127.0.0.1:5000/getstate
             curl -X POST http://127.0.0.1:5000/pose -H 'Content-Type: application/json' \
                  -d '{"arr": [0.55, 0.0, 0.35, 0.9239, 0.3827, 0.0, 0.0]}'
   ROS 2:    scripts/run.sh ros2 topic echo /franka_state_controller/O_T_EE   (/left/... with namespaces)
             scripts/run.sh ros2 param list /cartesian_impedance_controller
   Cameras:  pick_cube: wrist_1, wrist_2 (config/cameras.yaml; cameras_config:=none turns them off)
             curl http://127.0.0.1:5000/cameras
             stock env: pip install ./clients/virtual_realsense ./clients/virtual_spacemouse, then
             FRANKA_SIM_CAMERAS=1 FRANKA_SIM_SPACEMOUSE=1 FRANKA_SIM_KEYS=1 (docs/human_in_the_loop.md)
   Stop:     Ctrl-C (or SIGTERM): every node stops
------------------------------------------------------------------------------------------
TXT
exec "$@"
