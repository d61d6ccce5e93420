"""Captures with several interfaces (issue 10 item 6): ``tcpdump -i any`` (Linux cooked v2: one ifindex per
packet) and pcapng with several interface description blocks.

Kernel truth (../shared/triage/README.md, checked on Linux 6.18): the decapsulated copies that ``-i any`` records
on the tunnel device never reach the physical device's NAPI, so the phys stage replays the interface that carries
the tunnel traffic; the report says the capture holds several interfaces and the same packets twice.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import dpkt
import pytest
from conftest import CLI, ROOT, SHARED_CAPTURES, cli_env, without_engine

from gro_replay.capture.reader import CaptureError
from gro_replay.cli import main
from gro_replay.synth import Scenario, synth_frames

TRIAGE = SHARED_CAPTURES.parent / "triage"
SLL2 = TRIAGE / "tcpdump-any-sll2.pcap"


@pytest.fixture
def sll2() -> str:
    if not SLL2.is_file():
        pytest.skip(f"triage capture not present ({SLL2})")
    return str(SLL2)


def _json(runner, *args) -> dict:
    r = runner.invoke(main, [*map(str, args), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _phys(doc) -> list:
    return [(k["name"], k["stages"]["phys"], k["stages"]["tunnel"]) for k in doc["kernels"]]


def test_tcpdump_any_replays_the_tunnel_interface_and_warns(runner, sll2):
    doc = _json(runner, sll2)
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"]) == (40, 20)
    assert inp["skipped"] == {"other_interface": 20}
    assert inp["classes"] == {"tunnel_tcp": 20}
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert note.startswith(
        "the capture holds 2 interfaces (ifindex 2: 20 frames, 20 tunnel; ifindex 5: 20 frames"
    )
    assert (
        "the same packets twice: 20 on ifindex 5 carry the inner packets of ifindex 2's tunnel frames" in note
    )
    assert "replaying ifindex 2 only" in note
    assert [(i["interface"], i["replayed"]) for i in inp["interfaces"]] == [
        ("ifindex 2", True),
        ("ifindex 5", False),
    ]
    # phys stage: the 20 VXLAN frames only (outer checksum 0, CHECKSUM_UNNECESSARY level 0): pre-fix the gate
    # refuses each (20 single skbs), post-fix one burst of 1 µs gaps merges; the decapsulated copies add nothing
    pre, post = doc["kernels"]
    assert pre["stages"]["phys"]["frames_in"] == post["stages"]["phys"]["frames_in"] == 20
    assert (pre["stages"]["phys"]["skbs_delivered"], post["stages"]["phys"]["skbs_delivered"]) == (20, 1)
    # on the batch path (capture/cooked.py): the 20 frames are 1 µs apart, one poll
    assert doc["engine"] == {"path": "batch", "reasons": [], "polls": 1, "polls_cached": 0}
    assert _phys(doc) == _phys(_json(runner, sll2, "--interface", "2"))
    r = runner.invoke(main, [sll2, "-q", "--no-hist"])
    assert "note: the capture holds 2 interfaces" in r.stdout


def test_diff_of_two_interfaces_names_each_and_no_skb_is_no_mean(runner, sll2, tmp_path):
    """``diff`` of the capture's default replay (ifindex 2, the tunnel frames) against ``--interface 5`` (the
    decapsulated copies, plain TCP: no tunnel device sees them) names the interface each document replayed
    (newcomer37: the note said ``config interface: null → "5"``), and the tunnel stage that delivers no skb in the
    current has no segments per skb: "–" and "no skb", as the replay's table prints it, not a mean of 0.00. The
    baseline's gro_cells merges the burst of 20 (1 µs apart, one poll) into one skb in both kernels (pre-fix from
    the 20 phys skbs the gate refused, post-fix the phys aggregate passed on whole)."""
    docs = []
    for name, opts in (("base", []), ("cur", ["--interface", "5"])):
        docs.append(tmp_path / f"{name}.json")
        docs[-1].write_text(json.dumps(_json(runner, sll2, *opts)))
    r = runner.invoke(main, ["diff", *map(str, docs), "--format", "markdown"])
    assert r.exit_code == 1, r.output
    assert (
        "- note: interface replayed: ifindex 2 (by default) → ifindex 5 (--interface 5): other records of the "
        "capture, so a change between the documents may be theirs, not the kernel's"
    ) in r.stdout
    assert "config interface" not in r.stdout
    rows = [line for line in r.stdout.splitlines() if line.startswith("| segments / skb | tunnel")]
    # no mean on one side: no Δ either (breaker60: -20.00 beside the "–"); JSON keeps 0.0, as the replay's own
    # segs_per_skb_mean of a stage without skbs
    assert rows == ["| segments / skb | tunnel gro_cells | 20.00 | – | – | not delivered in current ❌ |"] * 2
    assert "- pre-fix, tunnel gro_cells: segments / skb 20.00 → no skb (-100.0%; allowed loss 0%)" in r.stdout
    table = runner.invoke(main, ["diff", *map(str, docs)]).stdout
    assert "note: interface replayed: ifindex 2 (by default) → ifindex 5 (--interface 5)" in table
    cells = [
        c for line in table.splitlines() if line.lstrip().startswith("segments / skb") for c in line.split()
    ]
    assert "–" in cells and "0.00" not in cells and "-20.00" not in cells and "now)" in cells


def test_interface_option_chooses_and_names_unknown_ones(runner, sll2):
    doc = _json(runner, sll2, "--interface", "5")
    assert doc["input"]["classes"] == {"not_tunnel": 20} and doc["input"]["skipped"] == {
        "other_interface": 20
    }
    assert doc["config"]["interface"] == "5"
    r = runner.invoke(main, [sll2, "--interface", "9", "-q"])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "--interface 9: no such interface (the capture holds: ifindex 2; ifindex 5)" in r.stderr


def test_the_pcapng_id_of_an_any_capture_names_its_ifindexes(runner, sll2, tmp_path):
    """The sll2 triage capture (tcpdump -i any: ifindex 2, the VXLAN device's NIC, and 5) rewritten as pcapng: one
    interface block, id 0, whose packets carry ifindexes 2 and 5. A number selects the ifindex there (as
    ``--interface 2`` does on the pcap), so ``--interface 0`` matches none; the error says why and names the two
    numbers that do (breaker's finding: "no such interface" while the list showed interface 0 twice), from a file
    and from a pipe."""
    path = tmp_path / "any.pcapng"
    with open(sll2, "rb") as src, open(path, "wb") as dst:
        w = dpkt.pcapng.Writer(dst, snaplen=65535, linktype=276)  # LINKTYPE_LINUX_SLL2
        for ts, buf in dpkt.pcap.Reader(src):
            w.writepkt(buf, ts)
    want = (
        "--interface 0: no such interface (the capture holds: ifindex 2; ifindex 5); pcapng interface 0 is a Linux "
        "cooked v2 capture (tcpdump -i any) whose packets carry the ifindex of their device, which a number "
        "selects: --interface 2 or --interface 5\n"
    )
    r = runner.invoke(main, [str(path), "--interface", "0", "-q"])
    assert r.exit_code == 2 and r.stderr == f"Error: {path}: {want}"
    r = _pipe(path, "-", "--interface", "0", "-q")
    assert r.returncode == 2 and r.stderr == f"Error: standard input: {want}"
    assert _phys(_json(runner, str(path), "--interface", "2")) == _phys(
        _json(runner, sll2, "--interface", "2")
    )


def test_a_flow_matching_nothing_names_the_other_interfaces_frames(runner, sll2):
    """--interface 5 replays ifindex 5's 20 frames (the decapsulated copies: one not-tunnel flow) and leaves
    ifindex 2's 20 out: a --flow matching none says so beside the flow count (breaker's finding: it said "1 flow"
    only, silent about the frames left out)."""
    r = runner.invoke(main, [sll2, "-q", "--interface", "5", "--flow", "vni=100"])
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: no flow matches --flow 'vni=100' (1 flow in {sll2}; frames not replayed: skipped other_interface "
        "20; gro-replay explain CAPTURE with the same options lists them)\n"
    )


def test_a_pipe_gives_the_files_document(sll2):
    # a pipe is read once, and the choice is made as records are read (capture/interfaces.py): ifindex 2 carries the
    # first VXLAN frame; ifindex 5's 20 frames are the decapsulated copies of its inner packets (the capture's triage
    # README) and are left out from a pipe as from the file, where they were replayed as phys traffic before
    def run(path, *extra):
        with open(path, "rb") as fh:
            out = subprocess.run(
                [*CLI, "-" if path == sll2 else path, "--format", "json", "-q", *extra],
                stdin=fh,
                capture_output=True,
                check=True,
                env=cli_env(),
            ).stdout
        doc = without_engine(json.loads(out))
        doc["input"].pop("path")
        return doc

    for extra in ((), ("--interface", "2"), ("--interface", "5")):
        piped = run(sll2, *extra)
        assert piped == run(str(SLL2), *extra), extra
    inp = run(sll2)["input"]
    assert (inp["frames_replayed"], inp["skipped"]) == (20, {"other_interface": 20})
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert "20 on ifindex 5 carry the inner packets of ifindex 2's tunnel frames" in note
    assert (
        "replaying ifindex 2 only (the interface of the capture's first tunnel frame; --interface chooses)"
        in note
    )
    assert [i["copies_of_tunnel_payload"] for i in inp["interfaces"]] == [0, 20]
    inp = run(sll2, "--interface", "2")["input"]
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert note.endswith("replaying ifindex 2 only (--interface); the same packets twice: 20 on ifindex 5 carry "
                         "the inner packets of ifindex 2's tunnel frames (decapsulated copies, which never reach "
                         "the physical device's NAPI)")  # fmt: skip


def _pcapng(path, ifaces, records) -> None:
    """ifaces: [(linktype, name or None)]; records: [(iface, ts_us, bytes)] written with dpkt's pcapng blocks."""
    blocks = [bytes(dpkt.pcapng.SectionHeaderBlockLE())]
    for lt, name in ifaces:
        opts = [dpkt.pcapng.PcapngOptionLE(code=2, data=name.encode())] if name is not None else []
        opts.append(dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT))
        blocks.append(bytes(dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=lt, opts=opts)))
    for i, ts, data in records:
        blk = dpkt.pcapng.EnhancedPacketBlockLE(
            iface_id=i, ts_high=ts >> 32, ts_low=ts & 0xFFFFFFFF, pkt_data=data
        )
        blocks.append(bytes(blk))
    path.write_bytes(b"".join(blocks))


def test_a_number_that_is_an_ifindex_and_an_interface_number_is_refused(runner, sll2, tmp_path):
    """Interfaces 0-2 Ethernet without names (interface 2 carries 10 VXLAN frames), interface 3 the sll2 triage
    capture (tcpdump -i any: ifindex 2, 20 VXLAN frames, and 5). A bare 2 is the ifindex 2 of interface 3's packets
    and interface 2: two devices, one GRO (newcomer's finding: both were replayed together, 37 frames). It is refused;
    ifindex=2 and index=2 each replay one device, and the notes name the left-out one that way."""
    frames = list(synth_frames(Scenario(frames=10)))
    with open(sll2, "rb") as src:
        cooked = [(3, int(ts * 1e6), bytes(buf)) for ts, buf in dpkt.pcap.Reader(src)]
    path = tmp_path / "mixed.pcapng"
    eth = [(2, cooked[0][1] + 10_000 + ts // 1000, f) for ts, f in frames]
    _pcapng(path, [(1, None), (1, None), (1, None), (276, "any")], cooked + eth)
    r = runner.invoke(main, [str(path), "--interface", "2", "-q"])
    assert r.exit_code == 2 and r.stderr == (
        f"Error: {path}: --interface 2 names two devices here (interface 3 (any) ifindex 2 and interface 2), and GRO "
        "runs on one: a number is the ifindex of Linux cooked v2 packets and the pcapng interface number of the "
        "others; give --interface ifindex=2 or --interface index=2\n"
    ), r.stderr
    assert _json(runner, path, "--interface", "ifindex=2")["input"]["frames_replayed"] == 20
    inp = _json(runner, path, "--interface", "index=2")["input"]
    assert (inp["frames_replayed"], inp["classes"]) == (10, {"tunnel_tcp": 10})
    chosen = _json(runner, path)["input"]["interfaces"]
    assert {i["interface"]: i["select"] for i in chosen} == {
        "interface 3 (any) ifindex 2": "--interface ifindex=2",
        "interface 3 (any) ifindex 5": "--interface 5",
        "interface 2": "--interface index=2",
    }


def _sll2(ifindex: int, frame: bytes) -> bytes:
    """Ethernet ``frame`` as a Linux cooked v2 record of ``ifindex`` (libpcap pcap/sll.h ``sll2_header``: protocol,
    reserved, ifindex, ARPHRD_ETHER 1, PACKET_HOST 0, address length 6, address padded to 8 bytes)."""
    return (
        struct.pack("!HHIHBB8s", int.from_bytes(frame[12:14], "big"), 0, ifindex, 1, 0, 6, frame[6:12])
        + frame[14:]
    )


@pytest.mark.parametrize("stdin", [False, True])
@pytest.mark.parametrize("path_opts", [[], ["--hz", "1000"]], ids=["batch", "frame-by-frame"])
def test_a_number_that_names_two_devices_is_refused_before_the_rest_is_read(tmp_path, stdin, path_opts):
    """Interface 0 is Linux cooked v2 (-i any) with 10 VXLAN frames of ifindex 2, interface 1 Ethernet, interface 2
    Ethernet with 10 VXLAN frames; then a block whose length (13) is not a multiple of 4, which the reader refuses
    (pcapng: block total length is a multiple of 4). --interface 2 is ambiguous from interface 2's first frame on:
    the error says so then, from a file and from standard input, on both paths, not the corrupt block's error that
    reading the capture to its end met first."""
    frames = [f for _ts, f in synth_frames(Scenario(frames=10))]
    recs = [(0, k, _sll2(2, f)) for k, f in enumerate(frames)] + [
        (2, 100 + k, f) for k, f in enumerate(frames)
    ]
    path = tmp_path / "ambiguous.pcapng"
    _pcapng(path, [(276, "any"), (1, None), (1, None)], recs)
    path.write_bytes(path.read_bytes() + struct.pack("<II", 6, 13) + bytes(64))
    name = "-" if stdin else str(path)
    with open(path, "rb") as f:
        r = subprocess.run(
            [*CLI, name, "--interface", "2", "-q", *path_opts],
            stdin=f if stdin else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=120,
        )
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr == (
        f"Error: {'standard input' if name == '-' else name}: --interface 2 names two devices here (interface 0 (any) ifindex 2 and interface 2), and GRO "
        "runs on one: a number is the ifindex of Linux cooked v2 packets and the pcapng interface number of the "
        "others; give --interface ifindex=2 or --interface index=2\n"
    )
    # the capture's tail is refused when the ambiguity is not: index=2 reads on to the corrupt block
    with open(path, "rb") as f:
        r = subprocess.run(
            [*CLI, name, "--interface", "index=2", "-q", *path_opts],
            stdin=f if stdin else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=120,
        )
    assert r.returncode == 2 and "corrupt record" in r.stderr and "block length 13" in r.stderr, r.stderr


def test_a_name_that_reads_as_a_number_or_form_is_not_offered_as_the_selector(runner, tmp_path):
    """if_name may be "1" or "index=0" (Linux refuses only '/', ':' and blanks in device names): --interface reads
    them as numbers or forms, so the notes and JSON offer index=N instead (second breaker's finding: "index=0" named
    interface 1 and selected interface 0)."""
    frames = list(synth_frames(Scenario(frames=10)))
    other = list(synth_frames(Scenario(frames=6, outer_csum="computed")))
    path = tmp_path / "names.pcapng"
    recs = [(0, ts // 1000, f) for ts, f in frames] + [
        (1, frames[-1][0] // 1000 + 10 + k, f) for k, (_t, f) in enumerate(other)
    ]
    _pcapng(path, [(1, "1"), (1, "index=0")], recs)
    inp = _json(runner, path)["input"]
    assert [(i["interface"], i["select"]) for i in inp["interfaces"]] == [
        ("interface 0 (1)", "--interface index=0"),
        ("interface 1 (index=0)", "--interface index=1"),
    ]
    assert _json(runner, path, "--interface", "index=1")["input"]["frames_replayed"] == 6


def test_pcapng_interfaces_by_name_and_an_unsupported_link_type_skipped(runner, tmp_path):
    # eth0 carries the VXLAN flow; wlan0 (802.11, link type 105: not supported) carries 5 frames, which are skipped
    # and counted (unsupported_link_layer) instead of rejecting the file
    frames = list(synth_frames(Scenario(frames=10)))
    recs = [(0, ts // 1000, f) for ts, f in frames] + [
        (1, frames[-1][0] // 1000 + k, b"\x08\x00" * 20) for k in range(5)
    ]
    path = tmp_path / "two.pcapng"
    _pcapng(path, [(1, "eth0"), (105, "wlan0")], recs)
    doc = _json(runner, path)
    inp = doc["input"]
    assert inp["skipped"] == {"other_interface": 5}  # eth0 carries the tunnel traffic: replayed alone
    assert inp["classes"] == {"tunnel_tcp": 10}
    assert [i["interface"] for i in inp["interfaces"]] == ["interface 0 (eth0)", "interface 1 (wlan0)"]
    everything = _json(runner, path, "--interface", "wlan0")["input"]
    assert everything["skipped"] == {"other_interface": 10, "unsupported_link_layer": 5}
    assert everything["frames_replayed"] == 0


@pytest.mark.parametrize(
    "n, says",
    [
        (
            10,
            "10 frames carry the inner packets of tunnel frames (decapsulated copies, as `tcpdump -i any` records them",
        ),
        (
            1,
            "1 frame carries the inner packet of a tunnel frame (a decapsulated copy, as `tcpdump -i any` records it",
        ),
    ],
)
def test_linux_cooked_v1_any_capture_names_the_copies(runner, tmp_path, n, says):
    # LINUX_SLL (v1) has no ifindex: the n decapsulated copies of the n VXLAN frames cannot be left out, but the
    # report says the same packets appear twice and how to capture so that they can be (one: in the singular,
    # breaker50)
    import struct

    from gro_replay.capture.reader import DLT_LINUX_SLL
    from gro_replay.capture.writer import PcapWriter

    outer = 14 + 20 + 8 + 8  # Ethernet + IPv4 + UDP + VXLAN before the inner Ethernet frame
    path = tmp_path / "any-v1.pcap"
    with PcapWriter(path, linktype=DLT_LINUX_SLL) as w:
        for ts, f in synth_frames(Scenario(frames=n)):
            w.write(ts, struct.pack("!HHH8sH", 0, 1, 6, f[6:12] + b"\0\0", 0x0800) + f[14:])
            inner = f[outer:]
            w.write(ts + 500, struct.pack("!HHH8sH", 0, 1, 6, inner[6:12] + b"\0\0", 0x0800) + inner[14:])
    inp = json.loads(runner.invoke(main, [str(path), "--format", "json", "-q"]).stdout)["input"]
    assert inp["classes"] == {"not_tunnel": n, "tunnel_tcp": n}
    (note,) = inp["notes"]
    assert note.startswith(f"the capture holds the same packets twice: {says} on the tunnel device); ")
    them = "them" if n > 1 else "it"
    assert note.endswith(f"(tcpdump -i any -y LINUX_SLL2), to leave {them} out")


# -- pcapng files of several sections (``cat a.pcapng b.pcapng``) and pipes ----------------------------------------
def _ng_block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def _ng_opt(code: int, data: bytes) -> bytes:
    return struct.pack("<HH", code, len(data)) + data + b"\0" * (-len(data) % 4)


def _ng_section(ifaces: list[str], records: list[tuple[int, int, bytes]]) -> bytes:
    """One pcapng section (SHB 0x0A0D0D0A, little-endian): Ethernet interfaces named ``ifaces`` (IDB type 1,
    option 2 if_name, option 9 if_tsresol 9: ns) and EPBs (type 6) ``(interface id, ts_ns, frame)``."""
    out = _ng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    for name in ifaces:
        opts = _ng_opt(2, name.encode()) + _ng_opt(9, b"\x09") + _ng_opt(0, b"")
        out += _ng_block(1, struct.pack("<HHI", 1, 0, 0) + opts)
    for i, ts, data in records:
        out += _ng_block(6, struct.pack("<IIIII", i, ts >> 32, ts & 0xFFFFFFFF, len(data), len(data)) + data)
    return out


_OUTER = 14 + 20 + 8 + 8  # Ethernet + IPv4 + UDP + VXLAN before the inner Ethernet frame


def _two_sections(path) -> str:
    """Section 1: eth0 (id 0) with 10 VXLAN frames, vxlan0 (id 1) with their decapsulated inner frames; section 2:
    the next 10 frames in the same pattern with the ids swapped: vxlan0 is id 0, eth0 id 1."""
    frames = list(synth_frames(Scenario(frames=20)))
    one = []
    for ts, f in frames[:10]:
        one += [(0, ts, f), (1, ts + 500, f[_OUTER:])]
    two = []
    for ts, f in frames[10:]:
        two += [(1, ts, f), (0, ts + 500, f[_OUTER:])]
    path.write_bytes(_ng_section(["eth0", "vxlan0"], one) + _ng_section(["vxlan0", "eth0"], two))
    return str(path)


def test_pcapng_sections_identify_interfaces_by_section_and_id(runner, tmp_path):
    """Each section numbers its interfaces from 0 (pcapng spec: an EPB's Interface ID indexes the IDBs of its
    section): the 20 eth0 frames of both sections are the physical device's; the 20 inner copies on vxlan0 never
    reach its NAPI (../shared/triage/README.md, kernel-checked) and are left out, in either section."""
    path = _two_sections(tmp_path / "ng_2sections.pcapng")
    doc = _json(runner, path)
    inp = doc["input"]
    assert inp["classes"] == {"tunnel_tcp": 20}
    assert inp["skipped"] == {"other_interface": 20}
    assert [(i["interface"], i["frames"], i["tunnel_frames"], i["replayed"]) for i in inp["interfaces"]] == [
        ("interface 0 (eth0, section 1)", 10, 10, True),
        ("interface 1 (vxlan0, section 1)", 10, 0, False),
        ("interface 3 (eth0, section 2)", 10, 10, True),
        ("interface 2 (vxlan0, section 2)", 10, 0, False),
    ]
    # every inner copy is one of eth0's tunnel frames' inner packets, in both sections
    assert [i["copies_of_tunnel_payload"] for i in inp["interfaces"]] == [0, 10, 0, 10]
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert "replaying interface 0 (eth0, section 1) and interface 3 (eth0, section 2) only" in note
    for k in doc["kernels"]:
        assert k["stages"]["phys"]["frames_in"] == 20
    # by name: the eth0 of every section; by number: the index over the file, in order of appearance
    assert _json(runner, path, "--interface", "eth0")["input"]["interfaces"] == inp["interfaces"]
    by_name = _json(runner, path, "--interface", "vxlan0")["input"]
    assert (by_name["classes"], by_name["skipped"]) == ({"not_tunnel": 20}, {"other_interface": 20})
    for n, frames_of in (("0", "tunnel_tcp"), ("1", "not_tunnel"), ("2", "not_tunnel"), ("3", "tunnel_tcp")):
        one = _json(runner, path, "--interface", n)["input"]
        assert (one["classes"], one["skipped"]) == ({frames_of: 10}, {"other_interface": 30}), n
    r = runner.invoke(main, [path, "--interface", "4", "-q"])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "--interface 4: no such interface (the capture holds: interface 0 (eth0, section 1);" in r.stderr


def _pipe(path, *args) -> subprocess.CompletedProcess:
    with open(path, "rb") as fh:
        return subprocess.run(
            [sys.executable, "-c", "from gro_replay.cli import entry; entry()", *args],
            stdin=fh,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )


def test_a_pipe_with_an_interface_that_names_none_is_an_error_at_its_end(tmp_path):
    path = _two_sections(tmp_path / "ng_2sections.pcapng")
    r = _pipe(path, "-", "--interface", "9", "--format", "json", "-q")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert (
        "Error: standard input: --interface 9: no such interface (the capture holds: interface 0 (eth0, section 1);"
        in r.stderr
    )
    r = _pipe(path, "explain", "-", "--interface", "wlan0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "--interface wlan0: no such interface" in r.stderr
    # a name that matches: the eth0 of both sections, and the note's tunnel counts are the streamed frames'
    r = _pipe(path, "-", "--interface", "eth0", "--format", "json", "-q")
    assert r.returncode == 0, r.stderr
    inp = json.loads(r.stdout)["input"]
    assert (inp["classes"], inp["skipped"]) == ({"tunnel_tcp": 20}, {"other_interface": 20})
    assert [(i["interface"], i["tunnel_frames"], i["replayed"]) for i in inp["interfaces"]] == [
        ("interface 0 (eth0, section 1)", 10, True),
        ("interface 1 (vxlan0, section 1)", 0, False),
        ("interface 3 (eth0, section 2)", 10, True),
        ("interface 2 (vxlan0, section 2)", 0, False),
    ]
    # frames that -f then leaves out are still counted as their interface's tunnel frames, as a file's are
    r = _pipe(path, "-", "--interface", "eth0", "-f", "tcp", "--format", "json", "-q")
    inp = json.loads(r.stdout)["input"]
    assert (inp["frames_replayed"], inp["filtered"]) == (0, {"bpf": 20})
    assert [i["tunnel_frames"] for i in inp["interfaces"]] == [10, 0, 10, 0]


def test_a_pipe_of_tcpdump_any_says_each_interfaces_tunnel_frames(sll2):
    r = _pipe(sll2, "-", "--interface", "99", "--format", "json", "-q")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert (
        "Error: standard input: --interface 99: no such interface (the capture holds: ifindex 2; ifindex 5)"
        in r.stderr
    )
    r = _pipe(sll2, "explain", "-", "--interface", "99")
    assert r.returncode == 2 and "--interface 99: no such interface" in r.stderr
    r = _pipe(sll2, "-", "--interface", "2", "--format", "json", "-q")
    inp = json.loads(r.stdout)["input"]
    assert inp["classes"] == {"tunnel_tcp": 20}
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert note.startswith(
        "the capture holds 2 interfaces (ifindex 2: 20 frames, 20 tunnel; ifindex 5: 20 frames, no VXLAN or Geneve traffic)"
    )


def test_pcapng_sections_of_one_named_interface_are_one_device(runner, tmp_path):
    # cat of two eth0 captures: eth0 is interface 0 of each section; every frame is replayed and no note says
    # that the capture holds several interfaces (it holds one device)
    frames = list(synth_frames(Scenario(frames=20)))
    path = tmp_path / "cat.pcapng"
    path.write_bytes(
        _ng_section(["eth0"], [(0, ts, f) for ts, f in frames[:10]])
        + _ng_section(["eth0"], [(0, ts, f) for ts, f in frames[10:]])
    )
    inp = _json(runner, path)["input"]
    assert (inp["frames_replayed"], inp["classes"], inp["skipped"]) == (20, {"tunnel_tcp": 20}, {})
    assert not [n for n in inp["notes"] if "interfaces" in n]
    assert [(i["interface"], i["frames"], i["replayed"]) for i in inp["interfaces"]] == [
        ("interface 0 (eth0, section 1)", 10, True),
        ("interface 1 (eth0, section 2)", 10, True),
    ]
    assert _json(runner, path, "--interface", "1")["input"]["skipped"] == {"other_interface": 10}


def test_plan_of_a_one_interface_pcapng_decodes_no_frame(tmp_path):
    """A pcapng file whose frames are all on one Ethernet interface (an interface without frames declared beside
    it) has nothing to choose: the plan counts its frames from the block walk and never decodes one (the decoder
    factory is not called), ``--interface`` still matches it by number and name; a file of two sections with the
    interfaces' frames interleaved is decoded and each interface's tunnel frames counted (10 VXLAN frames each on
    eth0, none on vxlan0: the construction of ``_two_sections``)."""
    from gro_replay.capture.interface_plan import plan
    from gro_replay.capture.reader import open_capture

    frames = list(synth_frames(Scenario(frames=25)))
    one = tmp_path / "one.pcapng"
    one.write_bytes(_ng_section(["eth0", "vxlan0"], [(0, ts, f) for ts, f in frames]))

    def no_decoder():
        raise AssertionError("a one-interface pcapng is planned without decoding")

    for want in (None, "0", "eth0"):
        with open_capture(one) as cap:
            sel = plan(str(one), cap, no_decoder, want)
        assert sel.planned and [(k, st.frames) for k, st in sel.by_key.items()] == [((0, None), 25)]
        assert sel.chosen == (None if want is None else frozenset({(0, None)}))
    with (
        open_capture(one) as cap,
        pytest.raises(CaptureError, match=r"--interface 1: interface 1 \(vxlan0\) holds no"),
    ):
        plan(str(one), cap, no_decoder, "1")
    from gro_replay.packet.decode import Decoder
    from gro_replay.sim.ingest import InputStats

    two = _two_sections(tmp_path / "two.pcapng")
    with open_capture(two) as cap:
        sel = plan(two, cap, lambda: Decoder((4789,), ()), None)
        assert not sel.planned and not sel.by_key  # several interfaces: chosen as the records are read
        replayed = list(sel.filter(cap, cap, InputStats()))
    assert len(replayed) == 20
    assert [(k[0], st.frames, st.tunnel_frames) for k, st in sel.by_key.items()] == [
        (0, 10, 10),
        (1, 10, 0),
        (3, 10, 10),
        (2, 10, 0),
    ]


@pytest.mark.parametrize("fast_path", [True, False])
def test_an_interface_declared_without_frames_is_said_so(tmp_path, fast_path):
    """``--interface`` naming an interface the pcapng declares but that holds no frame is refused as that, not as
    "no such interface", and the interfaces without frames are named in the list (they read "the capture holds:
    none" in a capture of no frames); on the batch path and the reference one (which plans a one-interface file),
    from a file and a pipe. One line, exit 2."""
    from test_interface_pipes import _fifo

    from gro_replay.sim import ReplayConfig, replay_capture

    frames = list(synth_frames(Scenario(frames=3)))
    idle = tmp_path / "idle.pcapng"
    idle.write_bytes(_ng_section(["eth0", "eth1"], [(0, ts, f) for ts, f in frames]))
    empty = tmp_path / "empty.pcapng"
    empty.write_bytes(_ng_section(["eth0"], []))
    said = {
        (idle, "eth1"): "--interface eth1: interface 1 (eth1) holds no frames (the capture's frames are on: "
        "interface 0 (eth0))",
        (
            idle,
            "1",
        ): "--interface 1: interface 1 (eth1) holds no frames (the capture's frames are on: interface 0 "
        "(eth0))",
        (
            idle,
            "eth9",
        ): "--interface eth9: no such interface (the capture holds: interface 0 (eth0); interface 1 "
        "(eth1), no frames)",
        (empty, "eth0"): "--interface eth0: interface 0 (eth0) holds no frames (the capture holds no frames)",
        (empty, "wlan0"): "--interface wlan0: no such interface (the capture holds no frames; it declares "
        "interface 0 (eth0))",
    }
    for (path, want), words in said.items():
        cfg = ReplayConfig(interface=want, fast_path=fast_path)
        with pytest.raises(CaptureError) as e:
            replay_capture(str(path), cfg)
        assert str(e.value) == f"{path}: {words}"
        with _fifo(tmp_path / "fifo", path.read_bytes()) as fifo, pytest.raises(CaptureError) as e:
            replay_capture(fifo, cfg)
        assert str(e.value).endswith(words)
    r = subprocess.run(
        [*CLI, str(idle), "--interface", "eth1"], capture_output=True, text=True, env=cli_env()
    )
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"Error: {idle}: {said[(idle, 'eth1')]}\n")


def test_the_tunnel_device_replayed_is_said_to_hold_decapsulated_copies(runner, sll2):
    """``--interface 5`` on the ``-i any`` capture replays the tunnel device's decapsulated inner packets, which
    never reach a physical device's NAPI (../shared/triage/README.md, kernel-checked): the 20 frames carry the
    inner packets of ifindex 2's 20 tunnel frames, left out, and the note and the verdict say so, as most likely
    (a frame equal to another's inner packet need not be a tunnel device's: breaker61) (newcomer38: the replay
    read as a NIC's, the copies said nowhere); the same on the reference path."""
    from gro_replay.report.document import document
    from gro_replay.sim import ReplayConfig, replay_capture

    doc = _json(runner, sll2, "--interface", "5")
    rows = [
        (i["interface"], i["replayed"], i["copies_of_tunnel_payload_left_out"])
        for i in doc["input"]["interfaces"]
    ]
    assert rows == [("ifindex 2", False, {}), ("ifindex 5", True, {"ifindex 2": 20})]
    (note,) = [n for n in doc["input"]["notes"] if "interfaces" in n]
    assert note.endswith(
        "; the same packets twice: 20 frames of ifindex 5, replayed, carry the inner packets of ifindex 2's tunnel "
        "frames left out (most likely decapsulated copies, a tunnel device's, which never reach a physical device's "
        "NAPI; replayed here as one's frames: --interface 2 replays the tunnel frames)"
    )
    assert doc["verdict"]["text"].endswith(
        "Only ifindex 5 was replayed: tunnel frames of another device, which its own NAPI merges, are in no count "
        "here: 20 on ifindex 2 (--interface 2 replays them). Of the frames replayed, 20 on ifindex 5 carry the inner "
        "packets of those tunnel frames: most likely decapsulated copies, a tunnel device's, which never reach a "
        "physical device's NAPI, counted here as if one received them."
    )
    ref = document(replay_capture(sll2, ReplayConfig(interface="5", fast_path=False)))
    assert ref["input"]["interfaces"] == doc["input"]["interfaces"] and ref["verdict"] == doc["verdict"]
    # the default replay (ifindex 2) holds no such copy: its copies are another interface's
    assert [i["copies_of_tunnel_payload_left_out"] for i in _json(runner, sll2)["input"]["interfaces"]] == [
        {},
        {},
    ]
