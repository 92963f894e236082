# Two commands on a fresh machine with Python 3.11: `make reproduce` and `make test`.
# Both create .venv and install the project first (once; reinstalled when pyproject.toml changes).

PYTHON ?= python3.11
VENV ?= .venv
CORES ?= $(shell nproc 2>/dev/null || echo 2)
# llama-cpp-python is compiled from source once, for a portable x86-64 (AVX2) target rather
# than -march=native, and kept as a wheel outside the clone so later installs take seconds.
LLAMA_CPP_VERSION ?= 0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
WHEELHOUSE ?= $(HOME)/.cache/rubriclab/wheels/llama-cpp-python-$(LLAMA_CPP_VERSION)-avx2
STAMP := $(VENV)/.installed

.PHONY: reproduce test test-long report dry-run-paper plan plan-paper plan-pilot pilot rehearse \
	rehearse-pilot rehearse-cluster known-truth known-truth-sweep install clean-outputs

# Values from the command line or the environment (RUN, BASE, RUBRICLAB_DATA_MIRROR and the
# data folders that default to it) are taken as written ($(value ...): make expands nothing in
# them) and reach each command as one single-quoted word, so a ';', '$' or space in one is
# never run by the shell. `quote`: a value in single quotes, each ' in it written '\''.
quote = '$(subst ','\'',$(1))'
# A run name (RUN, BASE) is checked before any command: letters, digits, '.', '_' and '-', at
# most 100 characters, as the config schema wants of `run` and `base_run`.
check_name = $(if $(value $(1)),$(if $(shell v=$(call quote,$(value $(1))); case "$$v" in \
	(*[!A-Za-z0-9._-]*) ;; (*) [ $${#v} -le 100 ] && echo ok ;; esac),,$(error $(1)=$(value \
	$(1)) is not a run name: letters, digits, '.', '_' and '-', at most 100 characters)))

# RUN=<name>: a named run, written under runs/<name>/ (see docs/usage.md, "Run an ablation");
# BASE=<name>: the run it is an ablation of, whose up-to-date jobs it copies instead of rerunning;
# CONFIG=<file(s)>: config files read after config/config.yaml (a model swap, say), each its own
# quoted word (several are separated by spaces; a file name cannot hold one).
RUN ?=
BASE ?=
CONFIG ?=
reproduce: $(STAMP)
	$(call check_name,RUN)$(call check_name,BASE)$(VENV)/bin/snakemake --cores $(CORES) \
		$(if $(value CONFIG),--configfile config/config.yaml $(foreach f,$(value CONFIG),$(call quote,$(f)))) \
		$(if $(value RUN)$(value BASE),--config $(if $(value RUN),run=$(call quote,$(value RUN))) \
		$(if $(value BASE),base_run=$(call quote,$(value BASE))))

# The suite in lanes (benchmarks/README.md has each lane's time): `make test` runs the unit lane,
# every test not marked `long`: units, the checks before the first job, and the pipeline runs
# the tests share; `make test-long` runs the long lane: the reduced rehearsal, the runs that are
# killed, interrupted or cut off, and the other long end-to-end runs; `make lint` the static
# checks. .ci/run runs all three.
# TEST_WORKERS: processes a lane runs on (pytest-xdist), each taking whole files, the longest
# first; 0 runs it in one. One per core.
TEST_WORKERS ?= $(CORES)
test_workers = $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
test: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not long" $(test_workers)

test-long: $(STAMP)
	$(VENV)/bin/python -m pytest -m long $(test_workers)

# With RUN=<name>: runs/<name>/report.html, from the config that run recorded. Without RUN, in a
# folder that holds named runs only (after the smoke test, say), it names them and stops.
named_runs = cd runs 2>/dev/null && ls -d */results/effective_config.yaml 2>/dev/null | cut -d/ -f1
unnamed_report_check = if [ ! -f results/effective_config.yaml ] && [ -n "$$($(named_runs))" ]; then \
	echo "make report: no unnamed run here (no results/effective_config.yaml); the named runs here:" \
	$$($(named_runs) | tr '\n' ' ')"- type make report RUN=<name>, e.g. make report RUN=$$($(named_runs) | head -n 1)" >&2; \
	exit 2; fi;
report: $(STAMP)
	@$(call check_name,RUN)$(if $(value RUN),,$(unnamed_report_check))
	$(VENV)/bin/snakemake --report report.html \
		$(if $(value RUN),--configfile $(call quote,runs/$(value RUN)/results/effective_config.yaml))

dry-run-paper: $(STAMP)
	$(VENV)/bin/snakemake -n --configfile config/paper.yaml

# Requests, tokens, dollars and hours of a run before any model is called (rubriclab.plan):
# figures/plan.md and results/plan/plan.csv. PLAN_DATA: a local mirror of the raw data (the
# plan prepares the data as the run would); empty downloads it from the datasets' sources.
ifeq ($(origin PLAN_DATA),undefined)
PLAN_DATA := $(or $(value RUBRICLAB_DATA_MIRROR),$(wildcard ../shared/data))
endif
PLAN_ARGS = --cores $(CORES) $(if $(value PLAN_DATA),--data-mirror $(call quote,$(value PLAN_DATA)))
plan: $(STAMP)
	$(VENV)/bin/rubriclab plan $(PLAN_ARGS)

# PILOT=<folder>: a pilot's working directory (runs/pilot after `make pilot`), whose measured
# answers' lengths, thinking, batch prompt-cache hits and latency replace the plan's assumptions.
plan-paper: $(STAMP)
	$(VENV)/bin/rubriclab plan --configfile config/paper.yaml $(PLAN_ARGS) \
		$(if $(value PILOT),--measured-from $(call quote,$(value PILOT)))

# The pilot (config/pilot.yaml, given after config/paper.yaml): every model and provider path of
# the paper run at sizes whose plan is at most $10 at its high total, under llm.budget_usd $10.
# Its plan first (free), then the paid run, written under runs/pilot/ (docs/paper_scale.md).
PILOT_CONFIG = config/paper.yaml config/pilot.yaml
plan-pilot: $(STAMP)
	$(VENV)/bin/rubriclab plan --configfile $(PILOT_CONFIG) --config run=pilot $(PLAN_ARGS)

pilot: plan-pilot
	$(VENV)/bin/snakemake --cores $(CORES) --configfile $(PILOT_CONFIG) --config run=pilot \
		$(if $(value PLAN_DATA),data_mirror=$(call quote,$(value PLAN_DATA)))

# The paper-scale run through litellm's real HTTP path, offline: every model of
# config/paper.yaml answered by a loopback server with providers' faults (rubriclab.rehearsal).
ifeq ($(origin REHEARSAL_DATA),undefined)
REHEARSAL_DATA := $(or $(value RUBRICLAB_DATA_MIRROR),../shared/data)
endif
REHEARSAL_DIR ?= rehearsal
rehearse: $(STAMP)
	$(VENV)/bin/python -m rubriclab.rehearsal --configfile config/paper.yaml \
		--workdir $(call quote,$(value REHEARSAL_DIR)) --cores $(CORES) \
		--data-mirror $(call quote,$(value REHEARSAL_DATA)) --expect paper

# The pilot, rehearsed the same way (its sizes checked against its own config).
REHEARSAL_PILOT_DIR ?= rehearsal-pilot
rehearse-pilot: $(STAMP)
	$(VENV)/bin/python -m rubriclab.rehearsal --configfile $(PILOT_CONFIG) \
		--workdir $(call quote,$(value REHEARSAL_PILOT_DIR)) --cores $(CORES) \
		--data-mirror $(call quote,$(value REHEARSAL_DATA))

# The reduced rehearsal as a run on several hosts, on this machine (rubriclab.rehearsal.cluster,
# docs/cluster.md): one machine, then profiles/cluster-generic/ (each job a separate process,
# its files through the fs storage plugin), then two such runs on one cache with one killed;
# the server counts one answer per distinct request. REHEARSAL_CACHE: sqlite (a fresh SQLite
# cache per run) or a postgresql://... URL (a fresh database per run). Needs rsync.
# REHEARSAL_TARGETS: some outputs only (e.g. figures/verify/table_calibration.md), for a busy machine.
REHEARSAL_CACHE ?= sqlite
REHEARSAL_TARGETS ?=
REHEARSAL_CLUSTER_DIR ?= rehearsal-cluster
# PROFILE=slurm: verify's calibration table and carry's Figure 2 (or REHEARSAL_TARGETS) through
# profiles/slurm on a one-node Slurm and a PostgreSQL server started for it (root, Debian's
# slurmctld slurmd slurm-client munge and postgresql packages), the head killed once and
# started again, against one machine (benchmarks/cluster_rehearsal_postgres.py,
# rubriclab.rehearsal.slurm). Add REHEARSAL_SLURM=existing to use the Slurm sinfo reaches.
PROFILE ?= cluster-generic
REHEARSAL_SLURM ?= one-node
rehearse-cluster: $(STAMP)
ifeq ($(PROFILE),slurm)
	PYTHONPATH=src $(VENV)/bin/python benchmarks/cluster_rehearsal_postgres.py --profile slurm \
		$(if $(filter existing,$(REHEARSAL_SLURM)),--existing-slurm) --cores $(CORES) \
		--workdir $(call quote,$(value REHEARSAL_CLUSTER_DIR)) \
		--data-mirror $(call quote,$(value REHEARSAL_DATA)) \
		$(if $(value REHEARSAL_TARGETS),--target $(foreach t,$(value REHEARSAL_TARGETS),$(call quote,$(t))))
else ifeq ($(PROFILE),cluster-generic)
	$(VENV)/bin/python -m rubriclab.rehearsal.cluster --cores $(CORES) \
		--workdir $(call quote,$(value REHEARSAL_CLUSTER_DIR)) \
		--data-mirror $(call quote,$(value REHEARSAL_DATA)) --cache $(call quote,$(value REHEARSAL_CACHE)) \
		$(if $(value REHEARSAL_TARGETS),--target $(foreach t,$(value REHEARSAL_TARGETS),$(call quote,$(t))))
else
	$(error PROFILE=$(PROFILE): slurm or cluster-generic)
endif

# The known-truth world, offline: scripted models that answer from the ground truth the run
# prepares, with set judge error rates (config/known_truth.yaml, rubriclab.known_truth), so the
# outputs can be checked against what the papers claim; written under runs/known-truth/.
# (A relative data folder is made absolute by the named run itself, rubriclab.runs.)
ifeq ($(origin KNOWN_TRUTH_DATA),undefined)
KNOWN_TRUTH_DATA := $(or $(value RUBRICLAB_DATA_MIRROR),$(wildcard ../shared/data))
endif
known-truth: $(STAMP)
	$(VENV)/bin/snakemake --cores $(CORES) --configfile config/config.yaml config/known_truth.yaml \
		--config run=known-truth \
		$(if $(value KNOWN_TRUTH_DATA),data_mirror=$(call quote,$(value KNOWN_TRUTH_DATA)))

# The same world over a grid of judge error rates (TPR x TNR in KNOWN_TRUTH_RATES), one named run
# per point (runs/sweep-*/): where each claim of the replication page shows
# (runs/known-truth-sweep/known_truth_sweep.md; docs/replication.md quotes it).
KNOWN_TRUTH_RATES ?= 0.90 0.95 0.99
known-truth-sweep: $(STAMP)
	$(VENV)/bin/python benchmarks/known_truth_sweep.py --cores $(CORES) --rates $(KNOWN_TRUTH_RATES) \
		$(if $(value KNOWN_TRUTH_DATA),--data-mirror $(call quote,$(value KNOWN_TRUTH_DATA)))

# The static checks, in this order, stopping at the first that fails: ruff (pyflakes and the
# import contract: litellm and llama_cpp only in rubriclab.llm), mypy on src/rubriclab,
# tests/structure.py (no import circle, no import of a higher floor, no file in src/ over 600
# lines, no provider prefix outside rubriclab/llm/providers.py), snakefmt --check and
# snakemake --lint. Their settings are in pyproject.toml.
.PHONY: lint
lint: $(STAMP)
	@echo "make lint: ruff check" && $(VENV)/bin/ruff check --output-format concise . \
		|| { echo "make lint: ruff check failed (findings above)" >&2; exit 1; }
	@echo "make lint: mypy src/rubriclab" && $(VENV)/bin/mypy src/rubriclab \
		|| { echo "make lint: mypy failed (findings above)" >&2; exit 1; }
	@echo "make lint: python -m tests.structure" && $(VENV)/bin/python -m tests.structure \
		|| { echo "make lint: the structure check failed (findings above)" >&2; exit 1; }
	@echo "make lint: snakefmt --check Snakefile workflow/" \
		&& $(VENV)/bin/snakefmt --check Snakefile workflow/ \
		|| { echo "make lint: snakefmt --check failed: run snakefmt Snakefile workflow/" >&2; exit 1; }
	@echo "make lint: snakemake --lint" && $(VENV)/bin/snakemake --lint \
		|| { echo "make lint: snakemake --lint failed (lints above)" >&2; exit 1; }
	@echo "make lint: all static checks passed"

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	if ! ls $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1; then \
		mkdir -p $(WHEELHOUSE) && \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$(CORES) \
		$(VENV)/bin/python -m pip wheel --no-deps --no-cache-dir -w $(WHEELHOUSE) \
			llama-cpp-python==$(LLAMA_CPP_VERSION); \
	fi
	$(VENV)/bin/python -m pip install --quiet --find-links $(WHEELHOUSE) -e '.[pipeline,local,test,cluster]'
	touch $(STAMP)

# Outputs only (named runs' folders included): the model-call cache (.cache/) is kept, so
# paid calls are never lost.
clean-outputs:
	rm -rf results figures logs report.html runs
