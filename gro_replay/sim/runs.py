"""Flow runs: the frames of one inner flow within one poll, in pieces, keyed so that runs GRO treats alike share a key.

The batch engine (pollcache.py) answers a poll whose whole key it has not seen by composing it from its runs
(``BatchReplay._compose``). A run is a piece of an inner flow's frames in the poll: they are cut after each frame
that carries URG, PSH, RST, SYN or FIN or no payload (``ENDS_PIECE``), which ``tcp_gro_receive`` ends its packet
with (flushed, or not held at all), unless a recording showed that a packet of the flow was still held there
(sim/compose.py's argument; ``no_cut``). On an overlay node a flow's frames in a poll are the end of one
application write and the start of the next, or a few delayed ACKs, in ever new combinations; the writes and ACKs
themselves recur. A run's key is the concatenation of its frames' rows (``run_keys``); a row holds
what GRO and the stack read of a frame, with every value that varies from run to run replaced by its relation to
the run's other frames:

- the headers (``Columns.kv``: addresses, ports, VNI, TTL, TOS, flags, header lengths; no length field);
- TCP sequence numbers: the run's segment starts and ends (``seq``, ``seq + payload`` modulo 2**32) numbered by
  first occurrence: GRO only tests a segment's start for equality with the end of what it holds
  (``tcp_gro_receive``: ``th2->seq + skb_gro_len(p) ^ th->seq``), so equal numbers stay equal and nothing else
  is kept; acknowledgment numbers likewise (``th->ack_seq ^ th2->ack_seq``);
- window and TCP option words relative to the run's first frame (exact, as the whole-poll key has them);
- no IPv4 IDs: GRO reads an ID only as its difference with the held packet's, tested for 0, 1 and the held
  packet's segment count (``inet_gro_receive``'s ``flush_id`` up to v6.9, ``inet_gro_flush`` from v6.10,
  ``tcp_gro_receive``'s atomic test), and reports the difference where an ID condition ends an skb
  (``tcp_offload._id_step``). A recording notes each difference it read (``kernel/skbuff.py`` ``id_tally``);
  a later run with the same key is served from it only when each of those differences, taken from its own
  frames, answers those tests alike (``IdGuards``: equal where the value is reported). The execution reads the
  same differences in the same order up to its first different branch, and a branch on an ID needs a different
  answer to one of those tests, so it takes no different branch. An ID's other reads are checksum sums,
  which the checksum residuals in the key fix (a header's sum is its residual, whatever its ID);
- TCP payload lengths by rank among the run's distinct lengths, 0 kept as 0: GRO compares a length with 0
  (a segment without payload), with another segment's length (``len > mss``, ``len < mss``; ``mss`` is the
  held packet's first segment's length) and a sum of lengths with the merge limit (``skb_gro_receive``:
  ``p->len + len >= gro_max_size``). A rank keeps every comparison between two lengths; the limit cannot be
  reached when the run's frames together are shorter than it, else the row keeps the exact length (other sums:
  below);
- the checksum verdicts and residuals (``Columns.vbits``, ``resid``), the UDP residual zeroed when the UDP
  checksum field is 0 (``udp_gro_receive``/``udp_rcv`` neither verify nor convert a zero checksum, so nothing
  reads that sum);
- the frames' flow ids when flows are retired (a recorded delta adds to the counters of the flows it was
  recorded with);
- with a driver whose skbs are paged from some length on (AF_PACKET's on veth, the default: kernel/nic_skb.py
  ``packet_alloc_skb_frags``), the captured length of each frame that long, 0 for the others: where
  ``skb_gro_receive`` puts a segment (page frags or the frag_list) and how many frags it brings follow from it
  (the driver reads the length without VLAN tags, at most the captured one; the tags are in the ``kv`` row).

Counters that add lengths (``bytes``, ``sw_csum_bytes``) are the only ones a rank does not fix: every such
counter adds an skb's length from a fixed offset, and an skb's length is the sum of its frames' lengths less
fixed header bytes (GRO appends payloads: ``skb_gro_receive`` adds ``skb_gro_len``), so the counter moves by
one byte per byte of each frame it counted. A recorded run notes which frames each of those counters counted
(``kernel/skbuff.py`` ``length_tally``) and a later run with the same key adds the difference of its frames'
lengths (``LengthOps``). Bytes added otherwise (the stack's UDP checksum, ``udp_rcv``), and a decision on a sum
of lengths (``tcp_gro_receive`` comparing an aggregate's length with mss before ``gro_accepts_gso``), mark the
run length-exact: its key then holds the exact lengths.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kernel.reasons import BUDGET_EXHAUSTED, POLL_END
from ..kernel.tcp_offload import TCP_FLAG_FIN, TCP_FLAG_PSH, TCP_FLAG_RST, TCP_FLAG_SYN, TCP_FLAG_URG
from ..packet.columns import FIELDS, V_UDP_ZERO, Columns
from .run_rows import distinct_rows, first_seen, length_ranks, run_keys_of

#: the TCP flags (byte 13 of the header) that make ``tcp_gro_receive`` end the segment's packet at its
#: ``out_check_final`` (net/ipv4/tcp_offload.c): URG, PSH, RST, SYN, FIN. A frame with one of them or without payload
#: (never held: ``len < mss``) usually leaves its flow with nothing held; a run's piece ends after it (``run_keys``)
ENDS_PIECE = (TCP_FLAG_URG | TCP_FLAG_PSH | TCP_FLAG_RST | TCP_FLAG_SYN | TCP_FLAG_FIN) >> 16
#: the modulus of each field a run key holds relative to the run's first frame: 1 for the IPv4 IDs, which keys
#: leave out (their differences are compared through ``IdGuards``)
_WIDTHS = np.array([{"win": 1 << 16, "oid": 1, "iid": 1}.get(f, 1 << 32) for f in FIELDS[2:]], np.int64)
#: the widths are powers of two: modulo by a mask (two's complement: ``x & (w - 1) == x % w`` for every int64 x)
_WIDTH_MASKS = _WIDTHS - 1
_WIDTH_MASKS32 = _WIDTH_MASKS.astype(np.uint32)
#: columns of a run row after the headers (uint32 each)
_EXT = 8 + len(FIELDS) - 2 + 5


class Runs(NamedTuple):
    """The runs of some polls of a block (``run_keys``).

    ``order``: entry positions grouped by run, each run's entries in poll order (int64); ``bounds``: run ``r``'s
    entries are ``order[bounds[r]:bounds[r + 1]]``; ``poll``: each run's poll index; ``keys``: each run's key
    (bytes); ``payload``: TCP payload bytes and ``fids`` flow ids of each entry in ``order`` (int64); ``nkv``:
    distinct header rows per run (GRO holds at most one packet per row per NAPI); ``ids``: the outer and inner
    IPv4 IDs of each entry in ``order`` (int64 (m, 2); 0 for IPv6); ``more``: each run is followed by another piece
    of its flow in its poll (bool); ``kid``: each run's key numbered (int64; equal keys, equal numbers, and runs
    with equal keys share one bytes object), or None.
    """

    order: np.ndarray
    bounds: np.ndarray
    poll: np.ndarray
    keys: list[bytes]
    payload: np.ndarray
    fids: np.ndarray
    nkv: np.ndarray
    ids: np.ndarray
    more: np.ndarray
    kid: np.ndarray | None = None


class RunLists(NamedTuple):
    """The columns of ``Runs`` the per-poll code reads one run at a time, as Python lists (``BlockRuns.lists``):
    ``bounds``, ``order`` and ``nkv`` of ``Runs``; ``flows``: each run's flow ids in order of first frame and
    ``pay``: the payload lengths as int64 bytes (``run_flows``); ``more`` of ``Runs``."""

    bounds: list[int]
    order: list[int]
    nkv: list[int]
    flows: list[tuple[int, ...]]
    pay: bytes
    more: list[bool]


class BlockRuns(NamedTuple):
    """The flow runs of a block's polls (sim/compose.py ``_block_runs``): ``runs``; ``src``: each run entry's
    position in the block's entries (int64, in ``runs.order``'s order); ``run_at``: poll ``p``'s runs are
    ``run_at[p]..run_at[p + 1]``; ``lists``."""

    runs: Runs
    src: np.ndarray
    run_at: list[int]
    lists: RunLists


def _pieces(
    col: Columns, idx: np.ndarray, poll_of: np.ndarray, no_cut: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``(each entry's run, numbered by first entry; whether each run is followed by another piece of its flow)``:
    the entries of ``run_keys``, by inner flow and poll, cut after each one that ends a piece (module docstring).
    One stable sort by flow: a flow's entries in poll order, its pieces one after the other."""
    m = len(idx)
    groups, gid = np.unique(col.group[idx], return_inverse=True)
    flow = poll_of.astype(np.int64) * len(groups) + gid.reshape(-1)  # each entry's inner flow in its poll
    ends = ((col.tflags[idx] & ENDS_PIECE) != 0) | (col.payload[idx] == 0)
    if no_cut is not None:
        ends &= ~no_cut
    o = np.argsort(flow, kind="stable")
    fo = flow[o]
    e = ends[o].astype(np.int64)
    start = np.ones(m, bool)  # a flow's first entry (in ``o``)
    start[1:] = fo[1:] != fo[:-1]
    before = np.cumsum(e) - e
    piece = before - before[start][np.cumsum(start) - 1]  # the entries of its flow before it that end a piece
    head = start.copy()  # a run's first entry (in ``o``)
    head[1:] |= piece[1:] != piece[:-1]
    heads = np.flatnonzero(head)
    more = np.zeros(len(heads), bool)  # the next run (in ``o``) is of the same flow
    more[:-1] = ~start[heads[1:]]
    by_first = np.argsort(o[heads], kind="stable")
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(len(by_first))
    rid = np.empty(m, np.int64)
    rid[o] = rank[np.cumsum(head) - 1]
    return rid, more[by_first]


def run_keys(
    col: Columns,
    idx: np.ndarray,
    poll_of: np.ndarray,
    caplen: np.ndarray,
    limit: int,
    fids: np.ndarray,
    cls: np.ndarray,
    shapes: dict[bytes, int],
    selected: list[bool] | None = None,
    no_cut: np.ndarray | None = None,
    paged_from: int | None = None,
) -> Runs:
    """Runs of the entries at block positions ``idx`` (all of the common layout; ``poll_of``: each entry's poll
    index, non-decreasing), keyed as the module docstring says. ``caplen``: each block record's length (bytes);
    ``limit``: the smallest merge limit of every device of every kernel (bytes); ``fids``: each entry's flow id;
    ``cls``: each entry's kv class (int64 >= 0; equal exactly where the ``Columns.kv`` rows and UDP-zero bits are
    equal: sim/block_flows.py ``_flow_ids``); ``shapes``: the header rows without flow names met so far
    (``Columns.anon`` bytes → number, grown here);
    ``selected``: ``--flow``'s choice per flow id, or None; ``no_cut``: bool per entry, True where a frame that
    would end a piece does not (``ENDS_PIECE``), or None; ``paged_from``: the frame length (bytes) from which the
    driver's skbs are paged (kernel/nic_skb.py), or None. The numberings and the key bytes: sim/run_rows.py (equal
    keys share one bytes object; ``Runs.kid`` numbers them)."""
    m = len(idx)
    rid, more = _pieces(col, idx, poll_of, no_cut)
    nrun = len(more)
    order = np.argsort(rid, kind="stable")
    r = rid[order].astype(np.int64)
    counts = np.bincount(r, minlength=nrun)
    bounds = np.zeros(nrun + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    start = np.repeat(bounds[:-1], counts)  # each entry's run start (position in ``order``)
    at = idx[order]
    rel = col.rel[at]
    pay = col.payload[at].astype(np.int64)
    fl = fids[order].astype(np.int64)
    ext = np.zeros((m, _EXT), np.uint32)
    rhi = r.astype(np.uint64) << np.uint64(32)
    ce = cls[order]
    ext[:, 0] = _shape_numbers(col, at, ce, shapes)
    # the flows, numbered by first occurrence in the run (and whether --flow selects each)
    ext[:, 1] = first_seen(rhi | fl.astype(np.uint64), start)
    if selected is not None:
        ext[:, 2] = np.asarray(selected, bool)[fl]
    if paged_from is not None:  # above --flow's bit: the captured length of a frame whose skb may be paged
        ext[:, 2] |= (np.where(caplen[at] >= paged_from, caplen[at], 0) << 1).astype(np.uint32)
    # sequence points: starts and ends, numbered by first occurrence in the run's list s0, e0, s1, e1, ...
    pts = np.empty(2 * m, np.uint64)
    pts[0::2] = rel[:, 0].astype(np.uint64)
    pts[1::2] = ((rel[:, 0] + pay) & 0xFFFFFFFF).astype(np.uint64)
    ext[:, 3:5] = first_seen(np.repeat(rhi, 2) | pts, np.repeat(2 * start, 2)).reshape(m, 2)
    ext[:, 5] = first_seen(rhi | rel[:, 1].astype(np.uint64), start)
    total = np.add.reduceat(caplen[at].astype(np.int64), bounds[:-1]) if m else np.zeros(0, np.int64)
    exact = (total >= limit)[r]
    ext[:, 6] = np.where(exact, pay, length_ranks(r, pay, nrun))
    # whether the lengths are exact, and the run's frame count: keys of runs of different lengths differ in their
    # first row, so the rows' bytes end at the same place in two keys that start alike (``length_exact_key``)
    ext[:, 7] = exact | (counts[r] << 1)
    k = 8 + len(FIELDS) - 2
    # in uint32: the differences modulo 2**32, and every width divides 2**32 (the same values, a third the time)
    varying = rel[:, 2:].astype(np.uint32)
    np.bitwise_and(varying - varying[start], _WIDTH_MASKS32, out=ext[:, 8:k])
    vb = col.vbits[at]
    ext[:, k] = vb
    resid = col.resid[at].copy()
    resid[(vb & V_UDP_ZERO) != 0, 1] = 0
    ext[:, k + 1 : k + 5] = resid
    keys, kid = run_keys_of(ext, bounds, counts, r)
    return Runs(
        order=order,
        bounds=bounds,
        poll=poll_of[order[bounds[:-1]]] if m else np.zeros(0, np.int64),
        keys=keys,
        payload=pay,
        fids=fl,
        nkv=distinct_rows(r, ce, nrun),
        ids=rel[:, 3:5],
        more=more,
        kid=kid,
    )


def _shape_numbers(col: Columns, at: np.ndarray, ce: np.ndarray, shapes: dict[bytes, int]) -> np.ndarray:
    """Each entry's header row without flow names (``Columns.anon``) by number in ``shapes`` (grown here; exact:
    rows compared whole), a kv class at a time (``at``: the entries' block positions, ``ce``: their kv classes):
    equal kv rows have equal ``anon`` rows (``anon`` zeroes more bytes of the same layout, and the layout is
    decided by bytes ``kv`` keeps: the outer and inner EtherTypes and IP versions, the UDP destination port, the
    tunnel header's first byte; packet/columns.py ``analyse``)."""
    m = len(at)
    if m and int(ce.min()) < 0:
        raise ValueError("run_keys: an entry without a kv class (not a common frame)")
    ncls = int(ce.max()) + 1 if m else 0
    rep_at = np.zeros(ncls, np.int64)  # an entry of each class (any: their anon rows are equal)
    rep_at[ce] = at
    met = np.zeros(ncls, bool)
    met[ce] = True
    anon = col.anon
    num = np.zeros(ncls, np.int64)
    for c, x in zip(np.flatnonzero(met).tolist(), rep_at[met].tolist(), strict=True):
        num[c] = shapes.setdefault(anon[x].tobytes(), len(shapes))
    return num[ce]


def length_exact_key(key: bytes, payload: bytes) -> bytes:
    """The key of a length-exact run (``run_keys``' docstring: its key holds the exact lengths): ``key``, ``P`` and
    its payload lengths (``payload``: int64 bytes, one per frame). The run cache's keys are this or ``key``, then a
    context (``b""``, ``F``, ``C…``, ``FC…``: sim/run_lookup.py), and a key's bytes are those of one (rows,
    lengths, context) alone: every row holds its run's frame count, so keys whose first rows are equal have rows
    of one length, and after them ``P`` starts the lengths (8 bytes a frame), which no context starts with."""
    return key + b"P" + payload


def run_flows(runs: Runs) -> tuple[list[tuple[int, ...]], bytes]:
    """Each run's flow ids in order of first frame (its flow slots: ``apply_flow_ops``), and the runs' payload
    lengths as int64 bytes (run ``r``'s: ``[8 * bounds[r]:8 * bounds[r + 1]]``)."""
    fids = runs.fids
    nrun = len(runs.bounds) - 1
    if not len(fids):
        return [() for _ in range(nrun)], b""
    r = np.repeat(np.arange(nrun, dtype=np.int64), np.diff(runs.bounds))
    _u, first = np.unique(r * (int(fids.max()) + 1) + fids, return_index=True)
    first.sort()
    flows = fids[first].tolist()
    if len(flows) == nrun:  # one flow a run (a run has at least one): their 1-tuples
        return list(zip(flows)), runs.payload.tobytes()
    cut = np.searchsorted(first, runs.bounds).tolist()
    return [tuple(flows[cut[j] : cut[j + 1]]) for j in range(nrun)], runs.payload.tobytes()


class LengthOps:
    """How a recorded run's length-adding counters move with its frames' payload lengths.

    ``ops``: ``[(container, attribute, coefficient per run position)]``; ``payload``: the recorded payload
    lengths (bytes, int64 per position). ``add(payload)`` notes a run with the same key and these ``payload``
    lengths; ``settle()`` adds what the noted runs' counters add beyond the recorded run's (see the module
    docstring): each counter moves by its coefficients times the runs' length differences, summed over the runs."""

    __slots__ = ("ops", "payload", "recorded", "more")

    def __init__(self, ops: list, payload: np.ndarray) -> None:
        self.ops = ops
        self.payload = payload
        self.recorded = payload.tobytes()
        #: the summed length differences of the runs noted since ``settle`` (int64 per run position), or None
        self.more: np.ndarray | None = None

    def add(self, payload: bytes) -> bool:
        """Note a run with ``payload`` lengths (int64 bytes per run position); True when it is the first noted
        since ``settle`` that differs from the recorded run (the caller then settles this later)."""
        if payload == self.recorded:
            return False
        return self.add_runs(np.frombuffer(payload, np.int64).reshape(1, -1))

    def add_runs(self, payloads: np.ndarray) -> bool:
        """``add`` for many runs at once: ``payloads`` int64 (runs, run positions). True when they are the first
        noted since ``settle`` that differ from the recorded run."""
        return self.add_sums(payloads.sum(axis=0), len(payloads))

    def add_sums(self, total: np.ndarray, runs: int) -> bool:
        """``add_runs`` of ``runs`` runs whose payload lengths sum to ``total`` (int64 per run position)."""
        d = total - runs * self.payload
        if not d.any():
            return False
        first = self.more is None
        self.more = d if first else self.more + d
        return first

    def settle(self) -> None:
        d, self.more = self.more, None
        if d is not None:
            for obj, attr, coef in self.ops:
                setattr(obj, attr, getattr(obj, attr) + int(coef @ d))


def length_ops(tally: list, position: dict[int, int], payload: np.ndarray) -> LengthOps | None:
    """``LengthOps`` from a recorded run's ``length_tally`` (``position``: capture index → run position), or None
    when some counter added bytes that are not an skb's length (the run is then keyed by exact lengths)."""
    n = len(payload)
    acc: dict = {}
    for obj, attr, frames in tally:
        if frames is None:
            return None
        key = (id(obj), attr)
        e = acc.get(key)
        if e is None:
            e = acc[key] = (obj, attr, np.zeros(n, np.int64))
        for x in frames:
            e[2][position[x]] += 1
    return LengthOps(list(acc.values()), payload.copy())


#: the byte offset of the outer IPv4 ID in a frame of the common layout (untagged Ethernet, packet/columns.py)
_OUTER_ID_AT = 14 + 4


class IdGuards:
    """The IPv4 ID differences a recorded run used (``kernel/skbuff.py`` ``id_tally``), by run position: the guard
    of its cache entry (module docstring). ``rows``: ``(a, ca, b, cb, diff, count)``: run positions of the two
    frames, which of their IDs (0 outer, 1 inner: ``Runs.ids`` columns), the difference read (ID of ``a`` - ID of
    ``b`` modulo 2**16) and the segment count it was compared with, -1 where the value itself was kept."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[tuple[int, int, int, int, int, int]]) -> None:
        self.rows = tuple(rows)

    def agree(self, ids: np.ndarray) -> bool:
        """Whether a run with the IDs ``ids`` (``Runs.ids`` of its entries, int64 (n, 2)) answers every test GRO
        made of the recorded differences alike: equal to 0, to 1 and to the segment count (equal to the recorded
        difference where it was kept)."""
        if not self.rows:
            return True
        v = ids.tolist()
        for a, ca, b, cb, rd, count in self.rows:
            d = (v[a][ca] - v[b][cb]) & 0xFFFF
            if d != rd and (count < 0 or d == 0 or rd == 0 or d == 1 or rd == 1 or d == count or rd == count):
                return False
        return True

    def signature(self, ids: np.ndarray) -> bytes:
        """How a run with the IDs ``ids`` answers these differences' tests: per difference 0 (equal to 0), 1 (to
        1), 2 (to the segment count), 3 (none of them), or the difference itself where its value is kept."""
        v = ids.tolist()
        out = []
        for a, ca, b, cb, _rd, count in self.rows:
            d = (v[a][ca] - v[b][cb]) & 0xFFFF
            out.append(d if count < 0 else 0 if d == 0 else 1 if d == 1 else 2 if d == count else 3)
        return np.array(out, np.uint16).tobytes()


def id_guards(tally: list, frames: list, ids: np.ndarray) -> IdGuards | None:
    """``IdGuards`` from a recorded run's ``id_tally``; ``frames``: the run's frames (``sim.ingest.Frame``, in
    run order), ``ids``: its ``Runs.ids``. None when a read cannot be placed: a frame noted twice (a resegmented
    super-frame's segments share a capture index) or an ID that is not the one its column holds (the run is then
    not recorded)."""
    position: dict[int, int] = {}
    for j, f in enumerate(frames):
        if position.setdefault(f.index, j) != j:
            return None
    rows = []
    for fa, at_a, fb, at_b, diff, count in dict.fromkeys(tally):
        a, b = position.get(fa), position.get(fb)
        if a is None or b is None:
            return None
        ca, cb = int(at_a != _OUTER_ID_AT), int(at_b != _OUTER_ID_AT)
        for j, c, at in ((a, ca, at_a), (b, cb, at_b)):
            if int.from_bytes(frames[j].frame[at : at + 2], "big") != ids[j, c]:
                return None
        rows.append((a, ca, b, cb, diff, count))
    return IdGuards(rows)


class RunEntry(NamedTuple):
    """What a recorded flow run (sim/compose.py ``_record_run``) adds beyond its counter deltas: ``holding``: it held or merged a
    packet on some NAPI; ``polled``: ``(id(NapiStats), polls, full polls)`` of each NAPI it polled;
    ``lengths``: its length-adding counters (``LengthOps``, None when none); ``flow_ops``: its flows' counters by
    flow slot (``deltas.apply_flow_ops``);
    ``cells_in``: ``(id(NapiStats), skbs)`` each tunnel cell took; ``ends_held``: it still held a packet after
    its last frame (flushed by the poll's end); ``ids``: the IPv4 ID differences it read (a run is served from
    this recording only when its own IDs answer them alike); ``events``: when its delivery events were kept (the
    cache entry's third item, ``_placed``: recorded while an observer watched, within ``MAX_RUN_EVENTS``), what
    places them in another run with the same key (``_event_rules``), else None."""

    holding: bool
    polled: tuple
    lengths: LengthOps | None
    flow_ops: list
    cells_in: list
    ends_held: bool
    ids: IdGuards
    events: tuple | None


def ends_held(deltas: list) -> bool:
    """Whether a recorded run's ``deltas`` count a packet flushed by the end of its poll (``napi_complete_done``
    or ``napi_poll``'s flush): the run still held something after its last frame."""
    return any(
        key in (POLL_END, BUDGET_EXHAUSTED) and inc > 0 for _a, items in deltas for _c, key, inc in items
    )


def most_held(
    poll: np.ndarray, first: np.ndarray, last: np.ndarray, n: np.ndarray, npolls: int
) -> np.ndarray:
    """The most packets held at once in each of ``npolls`` polls (int64 per poll) by runs of poll ``poll``, each
    holding ``n`` packets from its entry position ``first`` to its position ``last`` (-1: to the poll's end). A
    run's packets are released just after its last frame; positions are distinct, runs of a poll in any order."""
    ends = last >= 0
    x = np.concatenate([2 * first, 2 * last[ends] + 1]).astype(np.int64)
    d = np.concatenate([n, -n[ends]]).astype(np.int64)
    pp = np.concatenate([poll, poll[ends]]).astype(np.int64)
    out = np.zeros(npolls, np.int64)
    if not len(x):
        return out
    o = np.lexsort((x, pp))
    d, pp = d[o], pp[o]
    c = np.cumsum(d)
    start = np.flatnonzero(np.r_[True, pp[1:] != pp[:-1]])
    held = c - np.repeat((c - d)[start], np.diff(np.r_[start, len(c)]))
    out[pp[start]] = np.maximum(np.maximum.reduceat(held, start), 0)
    return out
