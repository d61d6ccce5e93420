"""kernel/reasons.py holds every flush and drop reason (issue 12: "drop reasons … each in one place"): no kernel
module spells one as a string of its own, and every stack drop has the verdict's words (what drops it, which
counter, which knob)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gro_replay.kernel import drop_reasons as D
from gro_replay.kernel import reasons as R
from gro_replay.report.verdict.words import LOSSES

KERNEL = Path(R.__file__).resolve().parent
#: a reason's shape: ``function:condition`` (kernel/reasons.py)
REASON = re.compile(r"^_*[a-z][a-z0-9_]*:[a-z0-9_]+$")


def test_no_kernel_module_spells_a_reason_of_its_own():
    found = []
    for path in sorted(KERNEL.glob("*.py")):
        if path.name in ("reasons.py", "drop_reasons.py"):  # the two places reasons are spelled
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and REASON.match(node.value):
                found.append(f"{path.name}:{node.lineno}: {node.value}")
    assert found == []


def test_every_stack_drop_has_the_verdicts_words():
    assert len(set(D.STACK_DROPS)) == len(D.STACK_DROPS)
    assert set(LOSSES) == set(D.STACK_DROPS)


def test_the_size_limit_reads_true_on_every_kernel():
    """skb_gro_receive refuses a merge that reaches 65536 bytes before eac1b93c14d6 (v5.17: the literal in
    ``p->len + len >= 65536``), ``dev->gro_max_size`` from it, ``dev->gro_ipv4_max_size`` for IPv4 from
    b1a78b9b9886 (v6.3) (kernel/gro.py ``skb_gro_receive``). One reason names all three (a 5.12 run shows it
    too), so its words give the 64 KiB and say from which release the device's sizes apply."""
    words = R.describe(R.SKB_GRO_RECEIVE_E2BIG)
    assert "64 KiB" in words
    assert "from v5.17 the device's gro_max_size" in words
    assert "from v6.3 gro_ipv4_max_size" in words


def test_a_handler_miss_names_the_value_looked_up():
    """The reasons of a handler look-up that found none carry the value (kernel/handler_miss.py) and say it, named
    as dpkt's ETH_TYPE_*/IP_PROTO_* tables name it (ARP is 0x0806 and ICMP 1 in the IEEE and IANA registries), the
    value alone where the table has none (0x88b5, IEEE 802 local experimental; 143, IANA Ethernet, unnamed by dpkt;
    0x0000, which dpkt calls ETH_TYPE_UNKNOWN, no name); they rank where the reason without the value does."""
    from gro_replay.kernel.handler_miss import missed_proto, missed_type

    cases = {
        missed_type(R.ETH_NO_OFFLOAD, 0x0806): "inner ethertype ARP (0x0806) without GRO handler",
        missed_type(R.ETH_NO_OFFLOAD, 0x88B5): "inner ethertype 0x88b5 without GRO handler",
        missed_type(R.NO_PACKET_OFFLOAD, 0): "no GRO handler for ethertype 0x0000",
        missed_type(
            R.VLAN_NO_OFFLOAD, 0x0806
        ): "protocol ARP (0x0806) inside an inner VLAN tag without GRO handler",
        missed_type(R.TUNNEL_INNER_PROTO, 0x88B5): "tunnel inner protocol 0x88b5 without GRO handler",
        missed_proto(R.INET_NO_OFFLOAD, 1): "IPv4 protocol ICMP (1) without GRO handler",
        missed_proto(R.INNER[R.INET_NO_OFFLOAD], 143): "IPv4 protocol 143 without GRO handler (inner header)",
        # 0 is HOPOPTS in IANA's registry; dpkt's IP_PROTO_IP ("dummy for IP") is no name (breaker's finding)
        missed_proto(R.INET_NO_OFFLOAD, 0): "IPv4 protocol HOPOPTS (0) without GRO handler",
        missed_proto(
            R.INNER[R.IPV6_NO_OFFLOAD], 59
        ): "IPv6 next header NONE (59) without GRO handler (inner header)",
    }
    assert list(cases)[0] == "eth_gro_receive:no_packet_offload(type=0x0806)"
    assert list(cases)[5] == "inet_gro_receive:no_inet_offload(proto=1)"
    for why, words in cases.items():
        assert R.describe(why) == words
        assert R.check_rank(why) == R.CHECK_ORDER.index(why.partition("(")[0])


def test_an_id_reason_names_the_rule_of_the_kernel_that_ran():
    """newcomer34: a 6.18 run's IPv4 ID reason read every era's rule. With a kernel model the words are that
    kernel's, by its switches (breaker45 checked each against the kernel): before 4b0ebbca3e16 (v6.10)
    tcp_gro_receive flushes unless flush_id is 0, or 1 with count 1 and is_atomic (a held DF packet not yet seen
    incrementing), and inet_gro_receive makes any other step than +count flush_id ≠ 0; a held GSO skb only from
    5eddb24901ee (v6.1); from 4b0ebbca3e16 inet_gro_flush sets ip_fixedid where count is 1, DF set and the ID the
    same, and returns before the ID for an outer header with DF; from 21f7484220ac and f095a358faf2 (v6.18) one bit
    per header, every outer header read, no DF needed. Without a model (a description in JSON) every era's words
    stay."""
    from dataclasses import replace

    from gro_replay.kernel.model import K_5_10, K_6_1, K_6_12, K_6_18
    from gro_replay.report.verdict.words import describe_for

    why = "tcp_gro_receive:outer_ip_id"
    every = R.describe(why)
    assert "before v6.10" in every and "before v6.18 the ID of an outer header with DF is not read" in every
    assert "only where a held packet of one segment met the same ID" in every
    assert describe_for(why, None) == every
    old, gso, mid, new = (describe_for(why, m) for m in (K_5_10, K_6_1, K_6_12, K_6_18))
    assert (
        "a held packet with DF not yet seen incrementing takes only the same ID, or +1 when it is one" in old
    )
    assert "GSO" not in old and "v6." not in old  # 5.10 holds no GSO skb
    # the inner header's verdict overwrites the outer's under outer DF (gro-spec §3.1; breaker46)
    assert all(w.count("the ID of an outer header with DF is not read") == 1 for w in (old, gso, mid))
    # the outer header is read first (gro_receive_network_flush): +1 to the second segment before a fixed inner
    # ID holds it (breaker46)
    assert (
        "an outer ID without DF steps +1 to a held packet of one segment, then, once a fixed inner ID" in mid
    )
    assert "not yet seen incrementing, such as a GSO skb that arrived merged, takes only the same ID" in gso
    assert "decided when a held packet of one segment meets the same ID with DF set" in mid
    assert "one ip_fixedid bit serves both headers" in mid and "v6." not in mid
    assert (
        "meets the same ID, in the outer header as in the inner, each header with its own ip_fixedid" in new
    )
    assert "DF" not in new
    assert all(w.endswith(" in the outer header") for w in (old, gso, mid, new))
    # a backport of one commit only (a vendor's): no era's rule is that kernel's, every era's words stay
    assert describe_for(why, replace(K_6_12, inet_gro_checks_outer_id=True)) == every
