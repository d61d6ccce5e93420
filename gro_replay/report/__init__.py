"""Reports built from a replay: stats, the JSON document, table, trace, pcap output, plot, diff, explain."""

#: ``--flows-max``'s default: per kernel, the JSON document lists at most this many flows in full (``flows[]``), the
#: others counted and summed in ``flows_summary.omitted`` (here, not in stats.py: the CLI reads it without numpy)
FLOWS_MAX_DEFAULT = 1000

#: The row label of ``StageStats.aggregates`` in every report (table, Markdown, diff) and what it counts (the JSON
#: schemas' description of ``aggregates``): skbs a stage delivered carrying 2 segments or more, whether the stage
#: merged them or they arrived so. Post-fix the phys stage's aggregates reach the tunnel device's gro_cells already
#: aggregated and count there again (whether gro_cells merges them further or not: dev_gro_receive flushes GSO skbs
#: before 5eddb24901ee); what a stage merged itself is skbs_in − skbs_delivered (explain's "merged here").
AGGREGATES_LABEL = "skbs delivered with ≥2 segs"
#: The row label of ``StageStats.sw_csum_bytes`` in every report (table, Markdown, diff): the bytes the CPU summed
#: at that stage (GRO's checksum checks, kernel/gro_csum.py ``__skb_gro_checksum_complete`` frame by frame, and at
#: phys the stack's UDP checks: report/stats.py ``stack_outcome``). Where they are summed is a
#: property of the kernel: for the fix's frames (outer UDP checksum 0, CHECKSUM_UNNECESSARY level 0) the phys stage
#: verifies post-fix the inner checksums gro_cells verified pre-fix, as many bytes (table.py ``csum_lines`` says so).
SW_CSUM_LABEL = "bytes the CPU checksummed here"
AGGREGATES_MEANS = (
    "skbs delivered carrying 2 segments or more, whether this stage merged them or they arrived so (post-fix the "
    "phys stage's aggregates reach the tunnel device's gro_cells already aggregated and count there again); what "
    "the stage merged itself is skbs_in - skbs_delivered"
)
#: Why GRO merged frames of two flows into one skb (kernel/skbuff.py ``SkBuff.mixed``; explain's per-flow line and
#: the replay's --flow line say it)
MIXED_WHY = (
    "GRO compares headers, not flows: the same inner flow under another outer key where no tunnel metadata tells "
    "them apart, or a key that came back as a new flow while GRO held its frames"
)

#: The kernel backend's NIC and polls (oracle/replay.py's recipe): its JSON ``config`` (cli/kernel.py) and its text
#: and Markdown NIC line (table.py ``nic_line``) say them. Frames come through a veth pair with one queue, sent in
#: chunks that make every poll take 64 frames; plain injection arrives CHECKSUM_NONE, and a tcx egress BPF program
#: calling ``bpf_csum_level`` makes it CHECKSUM_UNNECESSARY at the level asked for.
BACKEND_RSS = "none (veth)"
BACKEND_POLL = "budget (64-frame polls imposed by the injection recipe)"
#: What the NIC line and the JSON ``config`` say of the recipe when no frame was sent: run_kernel made no device
BACKEND_NO_DEVICE = "none: no frame was sent, so the kernel backend made no device"
BACKEND_RX_CSUM = {
    "none": "CHECKSUM_NONE: the veth's plain injection",
    "unnecessary": "CHECKSUM_UNNECESSARY level 0: bpf_csum_level(BPF_CSUM_LEVEL_INC) once, tcx egress of the sender",
    "unnecessary-tunnel": (
        "CHECKSUM_UNNECESSARY level 1: bpf_csum_level(BPF_CSUM_LEVEL_INC) twice, tcx egress of the sender"
    ),
}


def backend_recipe(frames_sent: int) -> tuple[str, str]:
    """(RSS, poll model) of the kernel backend's run that sent ``frames_sent`` frames, as its text and Markdown NIC
    line (table.py ``nic_line``) and its JSON ``config`` (cli/kernel.py) say them: the recipe's (``BACKEND_RSS``,
    ``BACKEND_POLL``), or ``BACKEND_NO_DEVICE`` twice when no frame was sent."""
    return (BACKEND_RSS, BACKEND_POLL) if frames_sent else (BACKEND_NO_DEVICE, BACKEND_NO_DEVICE)
