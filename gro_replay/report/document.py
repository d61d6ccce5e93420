"""The JSON document (DESIGN.md "Output contract") and the plain-language verdict built from a replay result."""

from __future__ import annotations

from collections import Counter

from .. import __version__
from ..kernel import reasons as R
from .stats import SCHEMA_VERSION

GATE_REASONS = (R.UDP_GATE_ZERO_CSUM, R.UDP_GATE)


def flow_rows(result, ks) -> list[dict]:
    """Per-flow rows of one kernel: key, class, frames, and per stage skbs, segments and end reasons."""
    rows = []
    for fid, f in sorted(ks.flows.items()):
        key = result.flows[fid]
        rows.append(
            {
                "id": fid,
                "flow": key.label(),
                "key": key.as_dict(),
                "class": result.flow_classes[fid],
                "phys": {
                    "skbs": f.skbs["phys"],
                    "segments": f.segs["phys"],
                    "end_reasons": dict(f.reasons["phys"]),
                },
                "tunnel": {
                    "skbs": f.skbs["tunnel"],
                    "segments": f.segs["tunnel"],
                    "end_reasons": dict(f.reasons["tunnel"]),
                },
                "stack": dict(f.stack),
            }
        )
    return rows


def affected_flows(result) -> list[dict]:
    """Flows that the phys stage aggregates less before the fix than after it, with the pre-fix gate counts.

    Needs a pre-fix (gate without ``uh->check``) and a post-fix kernel in the result; returns [] otherwise.
    """
    pre = [k for k in result.kernels if k.release == "5.11"]
    post = [k for k in result.kernels if k.release != "5.11"]
    if not pre or not post:
        return []
    pre, post = pre[0], post[0]
    out = []
    for fid, fpre in sorted(pre.flows.items()):
        fpost = post.flows.get(fid)
        if fpost is None:
            continue
        if fpre.skbs["phys"] > fpost.skbs["phys"]:
            gate = sum(fpre.reasons["phys"][r] for r in GATE_REASONS)
            out.append(
                {
                    "id": fid,
                    "flow": result.flows[fid].label(),
                    "phys_skbs_pre": fpre.skbs["phys"],
                    "phys_skbs_post": fpost.skbs["phys"],
                    "gate_refusals": gate,
                    "zero_csum": result.flows[fid].outer_csum_zero,
                }
            )
    return out


def verdict(result) -> str:
    """One plain sentence: which flows lose phys-dev aggregation before the fix, and why (or that none do)."""
    aff = affected_flows(result)
    if not any(k.release == "5.11" for k in result.kernels) or len(result.kernels) < 2:
        return ""
    nic = result.config.rx_csum
    tunnel_tcp = sum(1 for c in result.flow_classes if c == "tunnel_tcp")
    inp = result.input
    if not inp.frames_replayed:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(inp.skipped.items())) or "none read"
        hint = " (capture whole frames: tcpdump -s 0)" if "snaplen_cut" in inp.skipped else ""
        return (
            f"Nothing to compare: none of the {inp.frames_read} frames could be replayed ({skipped}){hint}."
        )
    gro = getattr(result.config, "gro", {})
    if not aff and not gro.get("phys", True):
        tun = (
            "the tunnel device's gro_cells do all the merging"
            if gro.get("tunnel", True)
            else "with GRO off on the tunnel device too, nothing is merged anywhere"
        )
        return (
            f"The fix changes nothing with GRO off on {result.config.phys_dev}: dev_gro_receive passes every frame "
            "up unmerged (netif_elide_gro) in every kernel, so udp_gro_receive's checksum gate (what 89e5c58fc1e2 changed) is never reached; "
            f"{tun}."
        )
    if not aff:
        return (
            f"No flow loses phys-device aggregation before the fix: with --rx-csum {nic} "
            "and these outer UDP checksums, udp_gro_receive never refuses a frame that post-fix kernels merge."
        )
    frames = sum(a["gate_refusals"] for a in aff)
    saved = sum(a["phys_skbs_pre"] - a["phys_skbs_post"] for a in aff)
    zero = all(a["zero_csum"] for a in aff)
    why = (
        "their outer UDP checksum is 0 and the NIC marks them "
        + ("CHECKSUM_NONE" if nic == "none" else "CHECKSUM_UNNECESSARY level 0")
        + ", so udp_gro_receive finds csum_cnt 0 and csum_valid 0 and refuses tunnel GRO"
        if zero
        else "udp_gro_receive refuses tunnel GRO for them (csum_cnt 0, csum_valid 0)"
    )
    pre = next(k for k in result.kernels if k.release == "5.11")
    reached = sum(pre.flows[a["id"]].skbs["tunnel"] for a in aff)
    if reached and not gro.get("tunnel", True):
        later = (
            "with GRO off on the tunnel device they are not merged later either "
            "(gro_cells_receive hands them to netif_rx)"
        )
    elif reached:
        later = "they are merged only later by the tunnel device's gro_cells"
    else:
        drops = Counter()
        for a in aff:
            drops.update({k: v for k, v in pre.flows[a["id"]].stack.items() if k != "queued"})
        reason = ", ".join(f"{k} ×{v}" for k, v in drops.most_common(2)) or "the stack"
        later = f"they never reach a tunnel device (dropped: {reason})"
    return (
        f"Before the fix, {len(aff)} of {tunnel_tcp} tunnelled TCP flow(s) lose phys-device aggregation "
        f"({frames} frames go up one by one): {why}; {later}, and the fix saves {saved} skb traversals of "
        f"IP/UDP/tunnel decapsulation."
    )


def summary_line(result) -> str:
    """The grep-able ``SUMMARY`` line: ``SUMMARY`` then space-separated ``key=value`` pairs (README "SUMMARY line").

    One kernel: ``kernel=NAME`` and unprefixed ``phys_skbs=`` …; several: ``kernels=A,B`` and per kernel
    ``kernel[NAME].phys_skbs=`` …, so a name with dots (``6.18``) never mixes with the field names. Values and
    names hold no space, ``=`` or brackets (profile names are fixed: ``kernel/model.py``).
    """
    inp = result.input
    parts = ["SUMMARY"]
    if len(result.kernels) == 1:
        parts.append(f"kernel={result.kernels[0].name}")
    else:
        parts.append("kernels=" + ",".join(k.name for k in result.kernels))
    parts += [f"frames={inp.frames_read}", f"skipped={sum(inp.skipped.values())}"]
    for k in result.kernels:
        pre = "" if len(result.kernels) == 1 else f"kernel[{k.name}]."
        for stage in ("phys", "tunnel"):
            st = k.stages[stage]
            parts.append(f"{pre}{stage}_skbs={st.skbs}")
            parts.append(f"{pre}{stage}_aggregates={st.aggregates}")
    if len(result.kernels) > 1 and any(k.release == "5.11" for k in result.kernels):
        parts.append(f"affected_flows={len(affected_flows(result))}")
    return " ".join(parts)


def document(result, backend: str = "simulator") -> dict:
    """The JSON document: schema_version, input, config, one entry per kernel, and (compare mode) the verdict."""
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gro-replay", "version": __version__},
        "backend": backend,
        "input": result.input.as_dict(),
        "config": result.config.as_dict(),
        "kernels": [],
    }
    for ks in result.kernels:
        doc["kernels"].append(
            {
                "name": ks.name,
                "release": ks.release,
                "stages": {s: st.as_dict() for s, st in ks.stages.items()},
                "stack": dict(sorted(ks.stack.items())),
                "flows": flow_rows(result, ks),
            }
        )
    if len(result.kernels) > 1:
        doc["comparison"] = {"affected_flows": affected_flows(result), "verdict": verdict(result)}
    doc["summary"] = summary_line(result)
    return doc
