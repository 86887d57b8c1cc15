"""A virtual 3Dconnexion SpaceMouse and keyboard for HIL-SERL's scripts on the Franka simulation.

`easyhid` (easyhid.py) presents a SpaceMouse Wireless per simulated server, whose reports (report.py)
carry the state posted to the server's `/spacemouse` (by the teleop page or a scripted expert), so that
HIL-SERL's own pyspacemouse opens and decodes it unaltered. `pynput.keyboard` (pynput/keyboard.py)
delivers the keys posted to `/keys` to the scripts' listeners. virtual_spacemouse_hook switches the
imports with `FRANKA_SIM_SPACEMOUSE=1` and `FRANKA_SIM_KEYS=1`; without them the real packages are used.
"""

__version__ = "0.1.0"
