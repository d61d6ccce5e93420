# gro-replay developer targets. Each section owns its variables; append new sections below.

# ---- samples: regenerate sample_pcaps/ byte-identically ------------------------------------------------
PYTHON ?= python3
SAMPLES_DIR ?= sample_pcaps
# `gro-replay synth` when the console script is installed and offers it, else the module; resolved once,
# and only when a recipe uses it.
SYNTH ?= $(eval SYNTH := $(shell gro-replay synth --help >/dev/null 2>&1 && echo 'gro-replay synth' || echo '$(PYTHON) -m gro_replay.cli_synth'))$(SYNTH)

.PHONY: samples
samples:
	$(SYNTH) --encap vxlan --port 4789 --outer-ipv4 --inner-ipv4 --outer-csum zero --timestamps --flows 1 --frames 17 --mss 1398 --last-payload 672 --gap-us 1 --pause-every 10 --pause-us 10 $(SAMPLES_DIR)/vxlan-zero-csum-fix-89e5c58fc1e2.pcap
	$(SYNTH) --encap geneve --port 6081 --geneve-opt-bytes 8 --outer-ipv6 --inner-ipv4 --outer-csum computed --timestamps --flows 4 --interleave rr --frames 64 --gap-us 1 $(SAMPLES_DIR)/geneve-ipv6-bulk.pcap
	$(SYNTH) --encap vxlan --port 4789 --outer-ipv4 --inner-ipv4 --outer-csum computed --no-timestamps --flows 4 --interleave 8 --frames 100 --gap-us 1 $(SAMPLES_DIR)/vxlan-4flows-computed-csum.pcap
