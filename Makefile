# Two commands do everything on a fresh machine (README.md; set-up is cached in .venv/ and install/):
#   make sim    the simulated Franka (MuJoCo) + franka_server_ros2; the banner names the world's own addresses
#   make test   the test suite over real ROS 2, real HTTP and real physics. It also builds .venv-hil-serl/, HIL-SERL's
#               own environment (scripts/hil_serl_env.sh: Python 3.11, about 2 GB, from $HIL_SERL_DIR, default
#               ../shared/hil-serl), and, as root, installs Debian's xvfb and chromium for the tests that need them;
#               without root it says what to install and runs the tests anyway (those tests then fail)
# HIL-SERL's example experiments, one command per step (scripts/hil_serl.py --help):
#   make experiment TASK=ram_insertion STEP=successes|classifier|demos|train ARGS="--demos 2 ..."
#   make experiment TASK=ram_insertion_state STEP=loop   HIL-SERL learning ram_insertion from the state, unattended
# More: make shell (a shell in the environment), make bench, make bench-pipeline, make bench-learning,
# make bench-worlds (N worlds feeding one learner; ARGS=--faults: a loop with faults injected), make lint,
# make clean (deletes .venv/, .venv-hil-serl/ (2 GB to rebuild), build/, install/, log/; runs/ is kept).
SHELL := /bin/bash
RUN := scripts/run.sh
ARGS ?=
TASK ?= ram_insertion
STEP ?=

.PHONY: sim test experiment shell bench bench-pipeline bench-learning bench-worlds lint env clean

sim:
	@$(RUN) scripts/sim_banner.sh ros2 launch isaac_franka_bridge sim.launch.py $(ARGS)

test:
	@scripts/install_browser.sh --optional
	@scripts/install_xvfb.sh --optional
	@scripts/hil_serl_env.sh
	@$(RUN) python -m pytest tests $(ARGS)

experiment:
	@python3 scripts/hil_serl.py $(TASK) $(or $(STEP),--help) $(ARGS)

bench:
	@$(RUN) python benchmarks/run.py $(ARGS)

bench-pipeline:
	@$(RUN) python benchmarks/run.py --pipeline-only $(ARGS)

bench-learning:
	@$(RUN) python benchmarks/run.py --learning-only $(ARGS)

bench-worlds:
	@$(RUN) python benchmarks/worlds.py $(ARGS)

shell:
	@$(RUN) bash --rcfile <(echo 'PS1="(franka-sim) $$PS1"')

lint:
	@$(RUN) python -m ruff check .

env:
	@scripts/bootstrap.sh

clean:
	rm -rf .venv .venv-hil-serl build install log
