"""``-f`` on every link type the reader accepts: libpcap compiles for the DLT_ value of the capture's LINKTYPE_
value (pcap-common.c ``linktype_to_dlt``: LINKTYPE_RAW 101 and the raw-IP 12/14 of old files are the platform's
DLT_RAW), and an expression it cannot compile for a capture's link type (``vlan`` on LINUX_SLL2, ``ether host``
on raw IP) is one line, exit 2, naming -f and the link type, as ``tcpdump -r`` refuses it.

The captures are FIX_SAMPLE's 17 frames (IPv4 VXLAN to UDP port 4789, every frame) re-framed for each link type.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE, ROOT

from gro_replay.batch import replay_one
from gro_replay.capture.reader import open_capture
from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.sim import ReplayConfig

pytest.importorskip("pcapy", reason="the bpf extra (pcapy-ng) is part of the test extra")

N = 17  # FIX_SAMPLE's frames: IPv4, UDP to 4789, no VLAN tag


def _records():
    with open_capture(str(FIX_SAMPLE)) as cap:
        recs = [(ts, buf) for ts, buf, _o, _lt in cap]
    assert len(recs) == N
    return recs


def _sll2(eth: bytes) -> bytes:
    # struct sll2_header: protocol, reserved, if_index, hatype (ARPHRD_ETHER), pkttype, halen, addr[8]
    return struct.pack("!HHIHBB8s", 0x0800, 0, 2, 1, 0, 6, eth[6:12] + bytes(2)) + eth[14:]


def _write(path, linktype: int, cut) -> str:
    with PcapWriter(path, linktype=linktype) as w:
        for ts, buf in _records():
            w.write(ts, cut(buf))
    return str(path)


def _run(args, stdin=None):
    return CliRunner().invoke(main, [*args, "--format", "json", "-q"], input=stdin)


@pytest.mark.parametrize("linktype", [101, 12, 14, 228])
def test_filter_on_raw_ip_capture_is_compiled_for_dlt_raw(tmp_path, linktype):
    cap = _write(tmp_path / "raw.pcap", linktype, lambda b: b[14:])
    r = _run([cap, "-f", "udp dst port 4789"])
    assert r.exit_code == 0, r.output
    inp = json.loads(r.stdout)["input"]
    assert inp["frames_replayed"] == N and inp["filtered"] == {}
    r = _run([cap, "-f", "ip and udp dst port 9"])  # compiles, matches none of the 17
    inp = json.loads(r.stdout)["input"]
    assert inp["frames_replayed"] == 0 and inp["filtered"] == {"bpf": N} and inp["frames_read"] == N
    # libpcap proves "ip6" rejects every packet of DLT_IPV4 (228): the records are rejected, counted
    r = _run([cap, "-f", "ip6"])
    assert r.exit_code == 0 and json.loads(r.stdout)["input"]["filtered"] == {"bpf": N}


@pytest.mark.parametrize("linktype", [101, 12, 14, 228])
def test_ethernet_only_filter_on_raw_ip_is_one_line_exit_2(tmp_path, linktype):
    cap = _write(tmp_path / "raw.pcap", linktype, lambda b: b[14:])
    r = _run([cap, "-f", "ether host 02:00:00:00:00:01"])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "-f 'ether host 02:00:00:00:00:01' cannot be compiled for the capture's link type " in r.stderr
    assert f"link type {linktype}" in r.stderr and "ethernet addresses supported only on" in r.stderr


@pytest.mark.parametrize(
    "expr, why",
    [
        ("vlan and udp", "no VLAN support for Linux cooked v2"),
        ("vlan", "no VLAN support for Linux cooked v2"),
        ("mpls", "no MPLS support for Linux cooked v2"),
        ("ether host 02:00:00:00:00:01", "ethernet addresses supported only on"),
    ],
)
@pytest.mark.parametrize("stdin", [False, True])
def test_filter_that_cannot_compile_for_sll2_is_one_line_exit_2(tmp_path, expr, why, stdin):
    cap = _write(tmp_path / "sll2.pcap", 276, _sll2)
    args = ["-m", "gro_replay", "-" if stdin else cap, "-f", expr, "--format", "json", "-q"]
    with open(cap, "rb") as f:
        r = subprocess.run(
            [sys.executable, *args],
            stdin=f if stdin else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(
        f"Error: -f {expr!r} cannot be compiled for the capture's link type 276 (LINUX_SLL2): "
    )
    assert why in line
    assert r.stdout == ""  # no document from a run that stopped


def test_filter_on_sll2_that_compiles_is_applied(tmp_path):
    cap = _write(tmp_path / "sll2.pcap", 276, _sll2)
    inp = json.loads(_run([cap, "-f", "udp dst port 4789"]).stdout)["input"]
    assert inp["frames_replayed"] == N and inp["filtered"] == {}
    inp = json.loads(_run([cap, "-f", "tcp"]).stdout)["input"]
    assert inp["frames_replayed"] == 0 and inp["filtered"] == {"bpf": N}


def test_filter_that_cannot_compile_in_explain_and_batch(tmp_path):
    cap = _write(tmp_path / "sll2.pcap", 276, _sll2)
    r = CliRunner().invoke(main, ["explain", cap, "-f", "vlan", "-q"])
    assert r.exit_code == 2 and "link type 276 (LINUX_SLL2)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    # batch: the capture's error line (replay_one runs on each worker), the other captures go on
    one = replay_one(cap, ReplayConfig(capture_filter="vlan"))
    assert one["document"] is None
    assert one["error"].startswith(
        "-f 'vlan' cannot be compiled for the capture's link type 276 (LINUX_SLL2): "
    )


def _pcapng_eth_and_raw(path) -> str:
    """A pcapng: interface 0 EN10MB, interface 1 LINKTYPE_RAW (101); FIX_SAMPLE's frames alternate between them."""
    from test_reader import epb, idb, shb  # the pcapng block builders of the reader's tests

    data = shb() + idb(1, tsresol=9) + idb(101, tsresol=9)
    for i, (ts, buf) in enumerate(_records()):
        data += epb(i % 2, ts, buf if i % 2 == 0 else buf[14:])
    path.write_bytes(data)
    return str(path)


def test_filter_on_pcapng_raw_interface(tmp_path):
    cap = _pcapng_eth_and_raw(tmp_path / "two.pcapng")
    inp = json.loads(_run([cap, "-f", "udp dst port 4789", "--interface", "1"]).stdout)["input"]
    assert inp["frames_replayed"] == N // 2 and inp["filtered"] == {}
    r = _run([cap, "-f", "ether host 02:00:00:00:00:01", "--interface", "1"])
    assert r.exit_code == 2 and "link type 101 (RAW)" in r.stderr
