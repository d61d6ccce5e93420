# gro-replay developer targets. Each section owns its variables; append new sections below.

.DEFAULT_GOAL := help
.PHONY: help deps install test lint demo man

help:
	@echo "make demo     install and compare pre-/post-fix GRO on the shipped fix scenario"
	@echo "make test     install everything the tests need (Debian + PyPI) and run the whole suite"
	@echo "make lint     ruff check + ruff format --check + mypy (the one lint command; CI runs it)"
	@echo "make man      man pages from the commands' help into man/ (read: man -l man/gro-replay.1)"
	@echo "make samples  regenerate sample_pcaps/ byte-identically"
	@echo "make bench    throughput / memory benchmark (see bench/)"
	@echo "make fuzz     hypothesis fuzzing of reader, decoder, replay and options for FUZZ_SECONDS (default 600) in all"

# Debian packages some tests use (tshark reads --write-pcap output back; tcpdump copies the triage captures as a user
# would; ethtool, iproute2 for the kernel backend; man-db and groff render the generated man pages; b3sum checks
# the documents' BLAKE3 digests).
DEBS := tshark tcpdump ethtool iproute2 man-db groff-base b3sum
deps:
	@missing=""; for c in tshark capinfos tcpdump ethtool ip man groff b3sum; do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq $(DEBS) >/dev/null; \
	  else echo "note: install $(DEBS) (Debian) for the tshark and kernel-backend tests"; fi; fi

install:
	$(PYTHON) -m pip install -q -e '.[test]'

test: deps install
	$(PYTHON) -m pytest -p no:cacheprovider -rs

lint:
	$(PYTHON) -m ruff check gro_replay tests bench
	$(PYTHON) -m ruff format --check gro_replay tests bench
	$(PYTHON) -m mypy

man:
	$(PYTHON) -m gro_replay.manpage man

demo:
	$(PYTHON) -m pip install -q .
	gro-replay sample_pcaps/vxlan-zero-csum-fix-89e5c58fc1e2.pcap

# ---- samples: regenerate sample_pcaps/ byte-identically ------------------------------------------------
PYTHON ?= python3
SAMPLES_DIR ?= sample_pcaps
# `gro-replay synth` when the console script is installed and offers it, else the module; resolved once,
# and only when a recipe uses it.
SYNTH ?= $(eval SYNTH := $(shell gro-replay synth --help >/dev/null 2>&1 && echo 'gro-replay synth' || echo '$(PYTHON) -m gro_replay.cli.synth'))$(SYNTH)

.PHONY: samples
samples:
	$(SYNTH) --encap vxlan --port 4789 --outer-ipv4 --inner-ipv4 --outer-csum zero --timestamps --flows 1 --frames 17 --mss 1398 --last-payload 672 --gap-us 1 --pause-every 10 --pause-us 10 $(SAMPLES_DIR)/vxlan-zero-csum-fix-89e5c58fc1e2.pcap
	$(SYNTH) --encap geneve --port 6081 --geneve-opt-bytes 8 --outer-ipv6 --inner-ipv4 --outer-csum computed --timestamps --flows 4 --interleave rr --frames 64 --gap-us 1 $(SAMPLES_DIR)/geneve-ipv6-bulk.pcap
	$(SYNTH) --encap vxlan --port 4789 --outer-ipv4 --inner-ipv4 --outer-csum computed --no-timestamps --flows 4 --interleave 8 --frames 100 --gap-us 1 $(SAMPLES_DIR)/vxlan-4flows-computed-csum.pcap

# ---- bench: frames/s, peak RSS and the tshark ratio (issue 6); captures cached in bench/cache/ ------------
# `make bench` measures the 1M-frame captures (and the 4M-frame one for memory), prints the profile's top
# entries, then times `gro-replay batch` over 20 captures against serial runs. Smoke run:
# `make bench BENCH_ARGS=--quick BENCH_BATCH_ARGS='--frames 2000'`.
PYTHON ?= python3
BENCH_ARGS ?= --profile
BENCH_BATCH_ARGS ?=
# bench/modes.py: the overlay-node mix and the bulk capture as pcap, pcapng, gzip, stdin, --trace, explain
BENCH_MODES_ARGS ?= --profile

.PHONY: bench
bench:
	$(PYTHON) bench/run.py $(BENCH_ARGS)
	$(PYTHON) bench/batch.py $(BENCH_BATCH_ARGS)
	$(PYTHON) bench/modes.py $(BENCH_MODES_ARGS)

# ---- fuzz: hypothesis mutation/property fuzzing of reader, decoder, replay and CLI options (tests/test_fuzz.py) --
# The suite runs a short derandomized pass of the same targets; `make fuzz` runs them with random seeds for
# FUZZ_SECONDS seconds in all (a failure prints hypothesis' shrunk input: add it to tests/test_robustness.py).
PYTHON ?= python3
FUZZ_SECONDS ?= 600

.PHONY: fuzz
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(PYTHON) -m pytest -p no:cacheprovider -q tests/test_fuzz.py
