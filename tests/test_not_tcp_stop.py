"""What the verdict says stops a tunnelled flow whose inner packets are not TCP segments after the fix.

A kernel without 89e5c58fc1e2 refuses such a flow's zero-checksum frames at the outer UDP header (udp_gro_receive,
net/ipv4/udp_offload.c), which costs nothing: with the fix GRO passes the outer header and stops at the inner one.
Where it stops depends on what the inner frame carries, and the sentence names that function, from the end reasons
of the fixed kernel's phys skbs of those flows (post-fix kernel compared, or the counterfactual of --kernel 5.10):

- inner ARP (ethertype 0x0806): eth_gro_receive (net/ethernet/eth.c) finds no handler (gro_find_receive_by_type
  returns NULL: only IPv4, IPv6, 802.1Q/802.1ad, TEB … register packet offloads) and flushes; the reason carries the
  ethertype it looked up (``type = eh->h_proto``), named: "inner ethertype ARP (0x0806)", and one without a name
  (0x88b5, IEEE 802 local experimental, registers no offload) as its hex value;
- an 802.1Q tag with ARP behind it: vlan_gro_receive (net/8021q/vlan_core.c) finds no handler for the encapsulated
  protocol (``type = vhdr->h_vlan_encapsulated_proto``) and flushes;
- an inner IPv4 fragment (MF set): inet_gro_receive (net/ipv4/af_inet.c) flushes ip_is_fragment();
- inner UDP: udp_gro_receive (net/ipv4/udp_offload.c) finds no tunnel socket on the inner port and flushes.

Before, every such sentence said "inet_gro_receive: a fragment or a protocol without GRO; udp_gro_receive: a UDP
datagram without a tunnel socket", naming the wrong function for ARP and a tagged inner frame; then "inner ethertype
without GRO handler", not which. Each capture here is
one flow of N frames, outer UDP checksum 0 (FrameSpec's default), so every frame is refused before the fix and
stopped at the inner header after it: N skbs, each for the one reason.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.packet.csum import ip_fast_csum

BASE = FrameSpec(timestamps=False, outer_csum="zero")
#: the inner ethertype of a BASE frame: outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8 + inner MACs 12
INNER_ETHERTYPE = 14 + 20 + 8 + 8 + 12
INNER_IP = INNER_ETHERTYPE + 2
OLD = "a fragment or a protocol without GRO"


def _arp(frames: list[bytes], tagged: bool, etype: bytes = b"\x08\x06") -> list[bytes]:
    """``frames`` with the inner ethertype (behind the 4-byte tag where ``tagged``) made ``etype`` (ARP, 0x0806)."""
    at = INNER_ETHERTYPE + (4 if tagged else 0)
    return [f[:at] + etype + f[at + 2 :] for f in frames]


def _next_header(frames: list[bytes], nexthdr: int) -> list[bytes]:
    """Inner IPv6 ``frames`` with the next header made ``nexthdr`` (the byte 6 into the IPv6 header; the TCP bytes
    after it are left as they are: payload behind an unknown next header)."""
    return [f[: INNER_IP + 6] + bytes([nexthdr]) + f[INNER_IP + 7 :] for f in frames]


def _udp(frames: list[bytes], check: bytes = b"\0\0") -> list[bytes]:
    """``frames`` with the inner IPv4 protocol made UDP (17): the TCP ports become the UDP ports, the UDP length is
    the datagram's, the UDP checksum ``check`` (0: none, udp4_gro_receive validates nothing), the IPv4 header
    checksum recomputed."""
    out = []
    for f in frames:
        b = bytearray(f)
        l4 = INNER_IP + 20
        b[INNER_IP + 9] = 17
        b[INNER_IP + 10 : INNER_IP + 12] = b"\0\0"
        b[INNER_IP + 10 : INNER_IP + 12] = ip_fast_csum(b, INNER_IP, 5).to_bytes(2, "big")
        b[l4 + 4 : l4 + 6] = (int.from_bytes(b[INNER_IP + 2 : INNER_IP + 4], "big") - 20).to_bytes(2, "big")
        b[l4 + 6 : l4 + 8] = check
        out.append(bytes(b))
    return out


CASES = {
    # name: (frames, the reason every fixed-kernel phys skb ends with, frames, its words where they name a value)
    "arp": (
        _arp(build_flow(BASE, [1000] * 5), False),
        "eth_gro_receive:no_packet_offload(type=0x0806)",
        5,
        "inner ethertype ARP (0x0806) without GRO handler",
    ),
    "unnamed_ethertype": (
        _arp(build_flow(BASE, [1000] * 2), False, b"\x88\xb5"),
        "eth_gro_receive:no_packet_offload(type=0x88b5)",
        2,
        "inner ethertype 0x88b5 without GRO handler",
    ),
    "vlan_arp": (
        _arp(build_flow(replace(BASE, inner_vlan=10), [1000] * 4), True),
        "vlan_gro_receive:no_packet_offload(type=0x0806)",
        4,
        "protocol ARP (0x0806) inside an inner VLAN tag without GRO handler",
    ),
    # inner IPv6 whose next header is 59 (No Next Header, RFC 8200 §4.7): no inet6_offloads entry, and
    # ipv6_gso_pull_exthdrs walks no extension header for it, so ipv6_gro_receive flushes with proto 59
    "ipv6_no_next": (
        _next_header(build_flow(replace(BASE, inner_ipv6=True), [1000] * 3), 59),
        "ipv6_gro_receive:inner_no_inet6_offload(proto=59)",
        3,
        "IPv6 next header NONE (59) without GRO handler (inner header)",
    ),
    "fragment": (
        build_flow(replace(BASE, mf=True, df=False), [1000] * 3),
        "inet_gro_receive:inner_ip_is_fragment",
        3,
        None,
    ),
    "udp": (_udp(build_flow(BASE, [1000] * 3)), "udp_gro_receive:inner_no_tunnel_socket", 3, None),
    # a wrong inner UDP checksum: CHECKSUM_UNNECESSARY level 0 was used up by the outer UDP header (csum_cnt 0), so
    # udp4_gro_receive validates the inner one in software and flushes it; named at the inner header (before,
    # "outer UDP checksum bad": helper's finding)
    "udp_bad_csum": (
        _udp(build_flow(BASE, [1000] * 3), b"\x12\x34"),
        "udp4_gro_receive:inner_checksum_bad",
        3,
        None,
    ),
}


def _capture(tmp_path, frames: list[bytes]) -> str:
    path = str(tmp_path / "flow.pcap")
    with PcapWriter(path) as w:
        for i, f in enumerate(frames):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    return path


def _run(*args: str) -> str:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("kernels", [[], ["--kernel", "5.10"]], ids=["compare", "5.10"])
def test_the_sentence_names_what_stops_the_inner_packets(tmp_path, name, kernels):
    frames, reason, n, words = CASES[name]
    cap = _capture(tmp_path, frames)
    said = (
        f"1 flow whose inner packets are not TCP segments, {n} frames (after the fix GRO stops them before tcp_gro_receive"
        f": {words or ''}"
    )
    named = f"[{reason}] ×{n}, so no kernel merges them"
    doc = json.loads(_run(cap, *kernels, "--rx-csum", "unnecessary", "--json", "-", "-q"))
    v = doc["verdict"]
    assert (v["frames_refused"], v["affected_flows"]) == (n, 0)
    # one computation: the JSON's verdict text is the sentence the text prints
    assert said in v["text"] and f"{named})" in v["text"], v["text"]
    text = _run(cap, *kernels, "--rx-csum", "unnecessary")
    assert v["text"] in " ".join(text.split()), text
    # explain: the capture's verdict says the same, and the flow's own why names the same reason (compare mode words
    # it as the post-fix kernel's measured reasons, --kernel 5.10 with this costless sentence)
    ex = _run("explain", cap, *kernels, "--rx-csum", "unnecessary", "-q")
    assert f"capture: affected: no: {v['text']}" in ex, ex
    assert ex.count(f"[{reason}] ×{n}") == 2, ex
    assert ex.count(named) == (2 if kernels else 1), ex
    assert OLD not in v["text"] + text + ex
    # never the words that do not say which ethertype (or protocol) found no handler
    assert (
        "ethertype without" not in v["text"] + text + ex and "protocol without" not in v["text"] + text + ex
    )


def test_each_ethertype_is_named_on_both_paths(tmp_path):
    """Two polls alike but for the inner ethertype (ARP 0x0806, then 0x88b5: every other byte equal, 1 ms apart so
    that each is a poll of its own): the batch path (poll cache) and the reference path record each poll's own
    ethertype in eth_gro_receive's reason, 3 phys skbs each in the post-fix kernel (one per frame: flushed)."""
    from gro_replay.report.document import document
    from gro_replay.sim import ReplayConfig, replay_capture

    arp = _arp(build_flow(BASE, [1000] * 3), False)
    other = _arp(build_flow(BASE, [1000] * 3), False, b"\x88\xb5")
    path = str(tmp_path / "two.pcap")
    with PcapWriter(path) as w:
        for i, f in enumerate(arp + other):
            w.write(1_614_373_368_000_000_000 + (i // 3) * 1_000_000 + (i % 3) * 1000, f)
    cfg = ReplayConfig(rx_csum="unnecessary")
    runs = [replay_capture(path, c) for c in (cfg, replace(cfg, fast_path=False))]
    assert runs[0].batch is not None and runs[1].batch is None  # the batch path, then the reference path
    docs = [document(r) for r in runs]
    for doc in docs:
        post = doc["kernels"][1]
        assert post["stages"]["phys"]["end_reasons"] == {
            "eth_gro_receive:no_packet_offload(type=0x0806)": 3,
            "eth_gro_receive:no_packet_offload(type=0x88b5)": 3,
        }


def test_a_flushing_frame_is_not_said_to_be_stopped_at_the_inner_header(tmp_path):
    """ARP inside VXLAN, a 4-byte trailer past the outer datagram on 2 of 4 frames: with the fix those 2 end at
    the outer IPv4 header (inet_gro_receive's tot_len flush), the other 2 at the inner ethertype. The sentence said
    "GRO stops them at the inner header" of all (breaker29); it says "before tcp_gro_receive" and lists both."""
    frames = _arp(build_flow(BASE, [1000] * 4), False)
    frames = [f + b"\0\0\0\1" if i % 2 else f for i, f in enumerate(frames)]
    v = json.loads(_run(_capture(tmp_path, frames), "--rx-csum", "unnecessary", "--json", "-", "-q"))[
        "verdict"
    ]
    assert "after the fix GRO stops them before tcp_gro_receive: " in v["text"], v["text"]
    assert "[inet_gro_receive:tot_len_or_frag_bits] ×2" in v["text"]
    assert "[eth_gro_receive:no_packet_offload(type=0x0806)] ×2" in v["text"]
    assert "at the inner header" not in v["text"]
