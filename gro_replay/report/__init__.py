"""Reports built from a replay: stats, the JSON document, table, trace, pcap output, plot, diff, explain."""

#: ``--flows-max``'s default: per kernel, the JSON document lists at most this many flows in full (``flows[]``), the
#: others counted and summed in ``flows_summary.omitted`` (here, not in stats.py: the CLI reads it without numpy)
FLOWS_MAX_DEFAULT = 1000
