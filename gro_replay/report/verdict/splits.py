"""The inner flows carried under several outer keys: which flows of one inner flow the phys device's GRO keeps apart,
and why (the flow key fields that differ and the kernel function that compares them), for the verdict's split notes.
"""

from __future__ import annotations

from ...packet.decode import FlowKey

#: outer flow key field → (words, the kernel function that keeps frames apart on it)
_SPLIT_KEYS = (
    ("outer_src", "outer source address", "inet_gro_receive/ipv6_gro_receive compare the addresses"),
    ("outer_dst", "outer destination address", "inet_gro_receive/ipv6_gro_receive compare the addresses"),
    ("outer_sport", "outer source port", "udp_gro_receive compares the UDP ports"),
    ("outer_dport", "outer destination port", "udp_gro_receive compares the UDP ports"),
    ("tunnel", "tunnel type", "the tunnel sockets differ"),
    ("vni", "VNI", "vxlan_gro_receive/geneve_gro_receive compare the VNI"),
    ("outer_csum_zero", "outer UDP checksum zero vs set", "udp_gro_receive compares whether uh->check is 0"),
)


def _split_ident(k: FlowKey) -> tuple | None:
    """The inner flow a tunnelled flow key carries, on its inner VLAN (None: not tunnelled or no inner addresses)."""
    if k.tunnel and k.inner_src:
        return (k.inner_vlan, k.inner_src, k.inner_dst, k.inner_proto, k.inner_sport, k.inner_dport)
    return None


#: what else keeps two flows of one inner flow apart when no field of ``_SPLIT_KEYS`` differs: the decoder keys
#: tunnel flows by the whole VXLAN header (flags word: e.g. a GBP policy) or Geneve's VNI word (its reserved byte)
_SPLIT_TUNNEL_HEADER = {
    "vxlan": ("VXLAN flags word", "vxlan_gro_receive compares the flags and VNI words"),
    "geneve": ("Geneve header", "geneve_gro_receive compares the whole header with its options"),
}


def _split_fields(me: FlowKey, other: FlowKey) -> tuple:
    """The (words, rule) pairs of the flow key fields in which ``other`` differs from ``me``; the tunnel header
    when none of them does."""
    fields = tuple(
        (words, rule) for attr, words, rule in _SPLIT_KEYS if getattr(other, attr) != getattr(me, attr)
    )
    return fields or (_SPLIT_TUNNEL_HEADER.get(me.tunnel, ("outer header", "the outer headers differ")),)


#: per flow id, when it lived: (its first frame, when it ended), ns of capture time; None: not known (a replay that
#: retires no flow: every flow lives to the end) or still live at the end
Lives = dict[int, tuple[int | None, int | None]]


def lived_together(lives: Lives | None, a: int, b: int) -> bool:
    """Whether flows ``a`` and ``b`` were live at the same time: each started before the other had ended (a flow
    ends when silent past its timeout: sim/flows.py ``silent_past``; one that starts at that instant starts after
    it). Without ``lives``, or a time not known, they are taken to have been."""
    if lives is None:
        return True
    fa, ea = lives.get(a, (None, None))
    fb, eb = lives.get(b, (None, None))
    return (fb is None or ea is None or fb < ea) and (fa is None or eb is None or fa < eb)


def split_members(members: list[tuple[int, FlowKey]], lives: Lives | None = None) -> int:
    """How many of ``members`` (one inner flow's flows) carry it while a flow under another outer key lives."""
    return sum(any(k != me and lived_together(lives, fid, o) for o, k in members) for fid, me in members)


def _split_texts(members: list[tuple[int, FlowKey]], lives: Lives | None = None) -> dict[int, str]:
    """Per flow id of ``members`` (``(fid, key)`` of one inner flow under several outer keys): its split note, which
    names the flows under another key that were live at the same time (``lived_together``) (those with its own key are the same headers back as a new flow: a
    connection after the last one ended, or a key retired while GRO held its frames; no note when all are). It
    says that the phys device's GRO keeps them apart (the tunnel device may merge them after decapsulation:
    without tunnel metadata its GRO compares no outer field), not that a merge was lost: whether frames on both sides could have merged (data
    segments in sequence, not ACKs, RST or SYN, which tcp_gro_receive flushes under any key) is not judged here."""
    out: dict[int, str] = {}
    if len(members) < 2:
        return out
    for fid, me in members:
        # the others by what tells them apart, in flow-id order: "#1, #3 with another <field> (rule) and #2 …"
        by_fields: dict[tuple, list[int]] = {}
        for o, k in members:
            if k != me and lived_together(lives, fid, o):
                by_fields.setdefault(_split_fields(me, k), []).append(o)
        if not by_fields:
            continue
        parts = []
        for fields, others in by_fields.items():
            what = ", ".join(w for w, _ in fields)
            rules = "; ".join(dict.fromkeys(r for _, r in fields))
            parts.append(f"{', '.join(f'#{o}' for o in others)} with another {what} ({rules})")
        flows, theirs = ("flow", "that flow's") if len(by_fields) == len(others) == 1 else ("flows", "theirs")
        out[fid] = (
            f"split: the same inner flow also travels as {flows} {' and '.join(parts)}, so the phys device's GRO "
            f"never merges its frames with {theirs}"
        )
    return out
