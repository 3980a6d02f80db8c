# Every target sets up the environment first (idempotent, quick the second time).
SHELL := /bin/bash
VENV  := .venv
BIN   := $(VENV)/bin
RUN   := PATH="$(CURDIR)/$(BIN):$$PATH"

.PHONY: setup figures reference repro test unit smoke lab paper default bench ae-table lock clean help course grade course-bench replicate compare-claims decide

help:
	@echo "make figures the kick-the-tires command: set up, restore the shipped reference run (reference/, dvc pull) into results/, run only the report stages and claims: every figure and results/claims/claims.md, naming the reference host (about 5 min)"
	@echo "make repro   set up, print the plan (each stale stage's forecast, the total), then dvc repro on params.yaml (the default profile)"
	@echo "make repro STAGES=\"deepio\"  re-measure only those stages and what depends on them (a claim's stages and minutes: results/claims/claims.md)"
	@echo "make test    set up, then unit tests and a smoke run of every notebook"
	@echo "make lab     set up, then JupyterLab on the project kernel, at the project root (notebooks/, results/)"
	@echo "make paper   switch params.yaml to the paper profile, print its plan (time and disk per stage), dvc repro"
	@echo "make default switch params.yaml back to the default profile"
	@echo "make bench   benchmark tables: pipeline vs fio, tracing overhead, emulator vs DLIO vs fio, UNET3D CPU convolution path, LMDBIO's hand-over under MPICH's wait settings (first runs the stale stages they read)"
	@echo "make ae-table  README's time and disk figures and docs/ae-table.md (with the plan's forecast against actual), from the last run"
	@echo "make course  the course: student bundle (hand out) and autograder of every lab (course/dist/)"
	@echo "make grade LAB=lab01 SUB=folder/|one.ipynb [TIMEOUT=600] [JOBS=cores]  grade a class: grades.csv, answers/ (otter, each submission in a bubblewrap sandbox, no Docker)"
	@echo "make replicate STAGES=\"blog lmdbio\"  re-measure those stages (default all) into replicate/ and compare the findings with results/"
	@echo "make decide [MINUTES=30]  after make repro: spend the minutes on the inconclusive findings the forecast says more runs decide (appended rows, params.yaml decide:, dvc.lock)"
	@echo "make compare-claims [A=a/claims.csv B=b/claims.csv]  two whole runs' verdicts: holds/fails flips (named when at a margin's edge), moves to or from inconclusive, disjoint intervals; without A and B: the reference run's against results/claims/claims.csv (after make repro)"
	@echo "make reference [SOURCE=checkout]  on the reference box after a whole make repro: re-record reference/run (and env/reference-times.csv) from it, dvc push to reference/store; commit reference/ and env/"
	@echo "make course-bench  time each lab's solution (default profile) into course/README.md"
	@echo "make lock    re-pin env/requirements.lock (and env/dlio.lock) from env/*.in"
	@echo "make clean   remove results, generated data, explore/ and tier copies (not .venv)"

setup:
	@bash env/setup.sh

# the reference run (reference/run, pulled from the in-repository DVC remote reference/store) into
# results/, then only the report stages and claims (dvc repro --single-item --force each); the
# log ends saying that no measuring stage ran (the restored files still the reference's bytes)
figures: setup
	$(RUN) python -m experiments.review.refrun figures

# on the reference box, after a whole `make repro` (SOURCE: that checkout, default this one):
# after a change to what a measuring stage writes (docs/reviewers.md#the-reference-run)
reference: setup
	$(RUN) python -m experiments.review.refrun record --source "$(or $(SOURCE),.)"
	$(RUN) python -m experiments.pipeline.forecast record --source "$(or $(SOURCE),.)"

# the plan first (each stale stage's forecast and the total, results/plan.json), then the stages;
# the log ends with the AE table's summary and the forecast against actual (DVC's git hints:
# core.autostage in .dvc/config stages dvc.lock instead of asking for it)
# STAGES="a b": only those stages re-measured (forced) and what depends on them, the stale stages
# upstream of them first (experiments/pipeline/forecast.py repro_commands); an unknown name stops in the plan
repro: setup
	@$(RUN) python -m experiments.review.refrun clear
	@$(RUN) python -m experiments.pipeline.forecast plan $(if $(strip $(STAGES)),--stages "$(STAGES)")
	$(RUN) $(if $(strip $(STAGES)),python -m experiments.pipeline.forecast repro --stages "$(STAGES)",dvc repro)
	@$(RUN) python -m experiments.pipeline.forecast after
	@$(RUN) python -m experiments.pipeline.ae_table --print

test: setup
	$(RUN) python -m pytest

unit: setup
	$(RUN) python -m pytest -m "not smoke"

smoke: setup
	$(RUN) python -m pytest -m smoke

lab: setup
	$(RUN) jupyter lab --notebook-dir=. $(if $(filter 0,$(shell id -u)),--allow-root)

paper: setup
	@$(RUN) python -m experiments.review.refrun clear
	$(RUN) python -m experiments.pipeline.profile paper
	@$(RUN) python -m experiments.pipeline.forecast plan
	$(RUN) dvc repro
	@$(RUN) python -m experiments.pipeline.ae_table --print

default: setup
	$(RUN) python -m experiments.pipeline.profile default

# each bench's stderr routed as the pipeline's kernels: TensorFlow's start-up lines kept off the
# console, every line in data/bench/<module>.stderr.log (experiments/pipeline/quietrun.py)
# First the stale stages the tables read: tf.data and fio (experiments.pipeline.bench), the traced
# comparison with its workload data, compute model and checkpoint patterns
# (experiments.sidebyside.bench) and LLM checkpointing (its rows in the storage engineer's table);
# from a fresh clone most of the thesis's stages run first.
bench: setup
	$(RUN) dvc repro tfdata_read_report traced_comparison llm_checkpoint
	$(RUN) python -m experiments.pipeline.quietrun python -m experiments.pipeline.bench
	$(RUN) python -m experiments.pipeline.quietrun python -m experiments.trace.bench
	$(RUN) python -m experiments.pipeline.quietrun python -m experiments.sidebyside.bench
	$(RUN) python -m experiments.pipeline.quietrun python -m experiments.workloads.onednn_bench
	$(RUN) python -m experiments.pipeline.quietrun python -m experiments.lmdbio.waits_bench

ae-table: setup
	$(RUN) python -m experiments.pipeline.ae_table

replicate: setup
	@$(RUN) python -m experiments.review.refrun guard replicate
	$(RUN) python -m experiments.review.replicate --stages "$(STAGES)"

decide: setup
	@$(RUN) python -m experiments.review.refrun guard decide
	$(RUN) python -m experiments.review.decide --minutes $(or $(MINUTES),30)
	@$(RUN) python -m experiments.pipeline.ae_table --print

# without A and B: the reference run's claims table (pulled when absent) against this box's
compare-claims: setup
	@test -n "$(A)" -a -n "$(B)" -o -z "$(A)$(B)" || { echo "usage: make compare-claims [A=first/claims.csv B=second/claims.csv] (neither: the reference run's against results/claims/claims.csv)" >&2; exit 2; }
	$(RUN) python -m experiments.review.compare $(if $(A),"$(A)" "$(B)","$$($(RUN) python -m experiments.review.refrun claims)" results/claims/claims.csv)

course: setup
	$(RUN) python -m experiments.course.build

grade: setup
	@test -n "$(LAB)" -a -n "$(SUB)" || { echo "usage: make grade LAB=lab01 SUB=folder/|submission.ipynb [TIMEOUT=600] [JOBS=cores]" >&2; exit 2; }
	$(RUN) python -m experiments.course.grade "$(LAB)" "$(SUB)" $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(JOBS),--jobs $(JOBS))

course-bench: setup
	$(RUN) python -m experiments.course.bench

lock:
	uv pip compile env/requirements.in --override env/overrides.txt --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 -o env/requirements.lock
	python3 env/lock_to_conda.py
	bash env/setup-dlio.sh lock

clean: setup
	rm -rf results/*/ results/.reference.json data/*/ explore/ course/dist/ $$($(RUN) python -m experiments.host.tiers dirs --own)
