#!/usr/bin/env bash
# Says where to look, then runs the given command (the launch of the simulation).
cat <<'TXT'
------------------------------------------------------------------------------------------
 Simulated Franka (MuJoCo) + franka_server_ros2
   HTTP:     curl -X POST http://127.0.0.1:5000/getstate
             curl -X POST http://127.0.0.1:5000/pose -H 'Content-Type: application/json' \
                  -d '{"arr": [0.55, 0.0, 0.35, 0.9239, 0.3827, 0.0, 0.0]}'
   ROS 2:    scripts/run.sh ros2 topic echo /franka_state_controller/O_T_EE
             scripts/run.sh ros2 param list /cartesian_impedance_controller
   Cameras:  wrist_1, wrist_2 (config/cameras.yaml; cameras_config:=none turns them off)
             scripts/run.sh ros2 topic hz /wrist_1/image_raw
             curl http://127.0.0.1:5000/cameras
             stock env: pip install ./clients/virtual_realsense, then FRANKA_SIM_CAMERAS=1
   Stop:     Ctrl-C
------------------------------------------------------------------------------------------
TXT
exec "$@"
