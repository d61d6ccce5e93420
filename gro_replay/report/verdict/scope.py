"""Sentences on what a verdict covers beside its main claim: the kernels run beside the compared pair
(``_beside_text``), the frames lost on the way (``_loss_sentence``), the refusals of flows lost before
decapsulation (``_lost_refusals_text``), and the UDP flows the hint to other tunnel ports is for
(``_udp_flows``). Mixed into ``core.Verdict`` through ``sentences.CaptureSentences``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...project import plural
from .facts import STAGE_NAMES, KernelFacts, ReplayResult
from .words import by_count, kernel_label, loss_text

if TYPE_CHECKING:
    from .tally import _Tally


class ScopeSentences:
    """The sentence builders above; the state they read is core.Verdict's."""

    result: ReplayResult
    kernels: list[KernelFacts]
    _selection: list[bool] | None
    _tally: _Tally

    if TYPE_CHECKING:  # defined by sentences.CaptureSentences and core.Verdict

        def _unmerged_note(self, k: KernelFacts) -> str: ...
        def _selected(self, fid: int) -> bool: ...
        def _drop_skbs_words(self, them: str = "them", kernel: str | None = None) -> str: ...

    def _lost_skbs(
        self, outcome: str, frames: int, kernels: list[KernelFacts] | None = None
    ) -> list[tuple[str, int]]:
        """(kernel, skbs) for each kernel of ``kernels`` (default: every kernel run) that lost ``frames`` frames to
        drop reason ``outcome``: the skbs they were in (``KernelFacts.lost_skbs``, what ``loss_text`` names)."""
        return [(k.name, k.lost_skbs[outcome]) for k in kernels or self.kernels if k.lost[outcome] == frames]

    def _vlan_after_tunnel(self) -> str:
        """ " After the tunnel device, where these counts end, …" for the flows ``_Tally.vlan_dropped_after_tunnel``
        counts (--no-vlan-offload: a kernel without CONFIG_VLAN_8021Q has no VLAN device on the tunnel device, so
        ``__netif_receive_skb_core`` marks an inner tag of VID ≠ 0 PACKET_OTHERHOST after ``skb_vlan_untag``, and
        ``ip_rcv`` drops it: net/core/dev.c ``check_vlan_id``); "" when none."""
        n = self._tally.vlan_dropped_after_tunnel
        if not n:
            return ""
        return (
            f" After the tunnel device, where these counts end, the frames of {n:,} {plural(n, 'flow')} whose inner "
            "frame carries a VLAN tag (VID ≠ 0) find no VLAN device (--no-vlan-offload: a kernel built without "
            "CONFIG_VLAN_8021Q): __netif_receive_skb_core marks them PACKET_OTHERHOST and ip_rcv drops them."
        )

    def _loss_sentence(self) -> str:
        worst = max(self.kernels, key=lambda k: k.lost_frames)
        if not worst.lost_frames:
            return ""
        per = "; ".join(loss_text(o, n, self._lost_skbs(o, n)) for o, n in by_count(worst.lost))
        every = all(k.lost_frames == worst.lost_frames for k in self.kernels)
        who = "every kernel" if every and len(self.kernels) > 1 else worst.name
        return f"Lost on the way ({who}): {per}."

    def _beside_text(self, k: KernelFacts) -> str:
        """Compare mode with more than two kernels: what kernel ``k``, not one of the compared pair, does — its
        zero-checksum refusals where it lacks the fix and its gate refused frames (``KernelFacts.refused``), and
        the flows its phys device does not merge (``_unmerged_note``), as one kernel's verdict says them."""
        text = ""
        if k.carries_fix is False and k.refused:
            # per stage, as the JSON's gate_refusals_zero_csum: what the refusals cost is that kernel's own verdict's
            where = [
                f"{n:,} {plural(n, 'frame')} at {STAGE_NAMES[s]}"
                for s in ("phys", "tunnel")
                if (n := k.gate_zero[s])
            ]
            text = (
                f" {kernel_label(k.name, k.release)} lacks the fix too: udp_gro_receive refuses {' and '.join(where)} "
                f"for a zero checksum (what that costs: --kernel {k.name} alone)."
            )
        return text + self._unmerged_note(k)

    def _udp_flows(self, selected: bool) -> bool:
        """Whether a flow that is not VXLAN/Geneve carries UDP (``selected``: among those --flow selects): what the
        hint to tunnels on other UDP ports is for."""
        return any(
            key is not None
            and not key.tunnel
            and key.inner_proto == 17
            and (not selected or self._selection is None or self._selected(fid))
            for fid, key in enumerate(self.result.flows)
        )

    def _lost_refusals_text(self) -> str:
        """Where every tunnelled flow is lost: " udp_gro_receive in pre-fix (v5.11) refuses 2 frames for a zero checksum before
        they are dropped." per kernel without the fix whose gate refused some (the JSON's ``frames_refused``), or ""
        (README: a kernel that refuses frames only of flows lost before decapsulation says so; truth30)."""
        said = [
            f" udp_gro_receive in {kernel_label(k.name, k.release)} refuses {k.refused:,} {plural(k.refused, 'frame')} for a zero checksum "
            f"before {'it is' if k.refused == 1 else 'they are'} dropped: "
            + self._drop_skbs_words("it" if k.refused == 1 else "them", k.name)
            + "."
            for k in self.kernels
            if k.refused and k.carries_fix is False
        ]
        return "".join(said)
