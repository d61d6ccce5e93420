"""The kernel backend (gro_replay.oracle) against the running kernel.

Expected values are the observations of ../shared/kernel-oracle.md ("Observed results") on this machine
kind (6.18, HZ=250, post-fix GRO): 1400-byte payloads, inner IPv4/TCP without options, so one frame is
1490 bytes from the outer IP header at the phys stage and 1440 from the inner IP header at the tunnel
stage; an aggregate of k segments is the first frame's length plus 1400 per further segment.
Tests that replay need root, network namespaces, tracefs, veth, vxlan and bpf(2); without them they are
skipped with the reason ``check_environment`` gives.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from gro_replay.oracle import (
    OracleError,
    OracleResult,
    OracleUnavailable,
    check_environment,
    kernel_hz,
    kernel_release,
    remove_leftovers,
    run_kernel,
    trace_instances,
)
from gro_replay.oracle import replay as oracle_replay
from gro_replay.oracle.env import hz_choices, measured_hz
from gro_replay.oracle.replay import geneve_available
from gro_replay.oracle.tracefs import Tracefs
from gro_replay.packet.build import FrameSpec, build_flow, build_frame, flow_specs

ROOT = Path(__file__).resolve().parents[1]

try:
    check_environment()
    UNAVAILABLE = ""
except OracleUnavailable as e:
    UNAVAILABLE = str(e)

needs_kernel = pytest.mark.skipif(bool(UNAVAILABLE), reason=f"kernel backend unavailable: {UNAVAILABLE}")

PAYLOAD = 1400
ONE = 1490  # outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14 + inner IPv4 20 + TCP 20 + 1400
INNER = ONE - 50


def agg(k: int, first: int = ONE) -> int:
    """Length of an aggregate of k segments whose first frame is ``first`` bytes long."""
    return first + (k - 1) * PAYLOAD


def flow(n: int, *, bad_tcp: int | None = None, **fields) -> list[bytes]:
    """n contiguous segments of one flow, 1400-byte payloads, no TCP options; frame ``bad_tcp`` (0-based)
    with a bad TCP checksum."""
    specs = flow_specs(FrameSpec(timestamps=False, payload=PAYLOAD, **fields), [PAYLOAD] * n)
    if bad_tcp is not None:
        specs[bad_tcp] = replace(specs[bad_tcp], tcp_csum="bad")
    return [build_frame(s) for s in specs]


def lens(result: OracleResult, role: str) -> list[int]:
    return [d.len for d in result.deliveries if d.dev_role == role]


def phys_works(result: OracleResult) -> list[int]:
    return [w for dev, w in result.polls if result.devices[dev] == "phys"]


def netns_list() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.strip())


#: pids whose runs this module owns: this process and the children it starts (``_start_child``)
OWN_PIDS: set[int] = {os.getpid()}


def own(names: list[str]) -> list[str]:
    """The names of ``names`` that belong to this module's runs (``groreplay-<pid>-…`` with one of OWN_PIDS):
    another suite running at the same time has namespaces and trace instances of its own, which are not ours to
    compare."""
    prefixes = tuple(f"groreplay-{pid}-" for pid in OWN_PIDS)
    return sorted(n for n in names if n.startswith(prefixes))


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind():
    """After the module: this module's runs left no network namespace and no tracefs instance."""
    if UNAVAILABLE:
        yield
        return
    before = (own(netns_list()), own(trace_instances()))
    yield
    assert (own(netns_list()), own(trace_instances())) == before


# -- environment -----------------------------------------------------------------------------------------


def _check_environment_as_nobody() -> str:
    """stdout of check_environment() run as uid/gid 65534, in a forked child of this process: the child needs
    nothing from the checkout's path (its modules are already imported), so the answer does not depend on where
    the clone lives or who may read it (a clone under a 0700 `mktemp -d` folder works too)."""
    import gro_replay.oracle.replay  # noqa: F401 - everything check_environment uses, imported before the fork

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop to nobody, ask, report, leave without running pytest's cleanup
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            try:
                check_environment()
                msg = "available\n"
            except OracleUnavailable as e:
                msg = f"unavailable: {e}\n"
            except BaseException as e:  # noqa: BLE001 - reported to the parent, which fails the test
                msg = f"error: {type(e).__name__}: {e}\n"
            os.write(write_fd, msg.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return out


def test_check_environment_refuses_non_root_with_one_line_reason():
    if os.geteuid() != 0:
        with pytest.raises(OracleUnavailable, match="root"):
            check_environment()
        return
    lines = _check_environment_as_nobody().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("unavailable: ") and "root" in lines[0]


def test_kernel_release_and_hz():
    assert kernel_release() == os.uname().release
    assert kernel_hz() in hz_choices(os.uname().machine)


def test_measured_hz_is_the_running_kernels_config_hz():
    # where the running kernel's config says CONFIG_HZ, jiffies counted against CLOCK_MONOTONIC in
    # /proc/timer_list give the same value (the fallback kernel_hz takes without a config)
    from gro_replay.oracle.env import kernel_config

    hz = kernel_config().get("CONFIG_HZ")
    if not (hz and os.path.exists("/proc/timer_list") and os.access("/proc/timer_list", os.R_OK)):
        pytest.skip("no kernel config or no readable /proc/timer_list here")
    assert measured_hz(hz_choices(os.uname().machine)) == int(hz)


def test_measured_hz_across_a_32_bit_jiffies_wrap():
    # a 32-bit kernel's jiffies wraps 5 minutes after boot (INITIAL_JIFFIES, include/linux/jiffies.h): 50 jiffies
    # in 0.2 s across the wrap are 250 Hz (breaker's finding: the negative difference gave the lowest choice)
    samples = iter([(2**32 - 10, 0), (40, 200_000_000)])
    assert measured_hz(hz_choices("armv7l"), sample=lambda: next(samples), sleep=lambda s: None) == 250


@pytest.mark.parametrize(
    ("machine", "rate", "hz", "sleep"),
    [
        # kernel/Kconfig.hz: 100, 250, 300, 1000; 250 against 300 needs no more than the 0.2 s floor
        ("x86_64", 251.0, 250, 0.2),
        ("aarch64", 299.0, 300, 0.2),
        # arch/mips/Kconfig HZ_256 (and HZ_250): rounding to kernel/Kconfig.hz's set said 250; 8 / 6 Hz = 1.33 s
        ("mips64el", 255.4, 256, 8 / 6),
        ("mips", 1021.0, 1024, 8 / 6),
        # arch/arm/Kconfig HZ_200, HZ_500, HZ_FIXED 128 (AT91RM9200); 100 against 128 is the closest pair
        ("armv7l", 199.0, 200, 8 / 28),
        ("armv5tel", 128.5, 128, 8 / 28),
        # arch/alpha/Kconfig HZ_1200, HZ_32: 32 against 64 the closest pair
        ("alpha", 1190.0, 1200, 8 / 32),
        ("alpha", 33.0, 32, 8 / 32),
    ],
)
def test_measured_hz_takes_the_architectures_choices(machine, rate, hz, sleep):
    slept = []
    samples = iter([(1000, 0), (1000 + round(rate * 10), 10_000_000_000)])  # jiffies and ns, 10 s apart
    assert measured_hz(hz_choices(machine), sample=lambda: next(samples), sleep=slept.append) == hz
    assert slept == [pytest.approx(sleep)]


# -- the recipe's observed results -----------------------------------------------------------------------

CSUM_STATES = [("none", 0), ("unnecessary", 0), ("unnecessary", 1)]


@needs_kernel
@pytest.mark.parametrize("outer_csum", ["zero", "computed"])
@pytest.mark.parametrize(("rx_csum", "level"), CSUM_STATES)
def test_one_flow_of_20_merges_into_one_skb_at_each_stage(outer_csum, rx_csum, level):
    r = run_kernel(flow(20, outer_csum=outer_csum), rx_csum=rx_csum, csum_level=level)
    assert lens(r, "phys") == [agg(20)] == [28090]
    assert lens(r, "tunnel") == [agg(20, INNER)] == [28040]
    assert (r.frames_sent, r.frames_not_replayable, r.sent) == (20, {}, list(range(20)))
    assert r.attempts >= 1 and r.kernel_release == kernel_release() and r.hz == kernel_hz()


@needs_kernel
@pytest.mark.parametrize("outer_csum", ["zero", "computed"])
@pytest.mark.parametrize(("rx_csum", "level"), CSUM_STATES[:2])
def test_bad_inner_tcp_csum_is_delivered_alone_and_splits_the_flow(outer_csum, rx_csum, level):
    # tcp4_gro_receive: the checksum fails validation, the frame goes up at once (flush); frame 11 then
    # misses the held aggregate's sequence, which is flushed. The recipe's table lists the same three
    # lengths as 1490, 14090, 12690; the trace order is 1490, 12690 (frames 1-9), 14090 (frames 11-20).
    r = run_kernel(flow(20, bad_tcp=9, outer_csum=outer_csum), rx_csum=rx_csum, csum_level=level)
    assert lens(r, "phys") == [ONE, agg(9), agg(10)] == [1490, 12690, 14090]
    assert lens(r, "tunnel") == [INNER, agg(9, INNER), agg(10, INNER)] == [1440, 12640, 14040]


@needs_kernel
@pytest.mark.parametrize("outer_csum", ["zero", "computed"])
def test_bad_inner_tcp_csum_merges_at_unnecessary_level_1(outer_csum):
    # level 1: the NIC vouches for the inner checksum too, so GRO never looks at it
    r = run_kernel(flow(20, bad_tcp=9, outer_csum=outer_csum), rx_csum="unnecessary", csum_level=1)
    assert lens(r, "phys") == [28090]
    assert lens(r, "tunnel") == [28040]


@needs_kernel
def test_wrong_outer_udp_csum_is_never_merged_and_udp_drops_it():
    # udp4_gro_receive: skb_gro_checksum_validate_zero_check fails -> flush; udp_rcv drops the frames
    r = run_kernel(flow(128, outer_csum="bad"))
    assert lens(r, "phys") == [ONE] * 128
    assert lens(r, "tunnel") == []


@needs_kernel
def test_wrong_outer_udp_csum_is_trusted_at_unnecessary_level_0():
    # measured alongside the recipe: CHECKSUM_UNNECESSARY vouches for the outer UDP checksum
    r = run_kernel(flow(128, outer_csum="bad"), rx_csum="unnecessary")
    assert lens(r, "phys") == [agg(46), agg(18)] * 2
    assert lens(r, "tunnel") == [agg(46, INNER), agg(18, INNER)] * 2


EXPECTED_1000_PHYS = [64490, 25290] * 15 + [56090]  # 46 segments fill 64 KiB, 18 close the poll of 64


@needs_kernel
def test_1000_frames_poll_by_64_and_each_poll_flushes():
    r = run_kernel(flow(1000))
    assert lens(r, "phys") == EXPECTED_1000_PHYS == [agg(46), agg(18)] * 15 + [agg(40)]
    assert lens(r, "tunnel") == [x - 50 for x in EXPECTED_1000_PHYS]
    works = [w for w in phys_works(r) if w]
    assert works == [64] * 15 + [40]
    assert all(w in (0, 64) for w in phys_works(r)[:-1])
    assert r.frames_sent == 1000


@needs_kernel
def test_a_full_veth_ring_is_waited_out_and_the_polls_stay_whole(monkeypatch, caplog):
    # one chunk of 1000: the injector (SCHED_FIFO above the NAPI thread, on its CPU) fills the 256-entry ring
    # (drivers/net/veth.c VETH_RING_SIZE) and veth_xmit drops the 257th frame, ENOBUFS to the sender, as when
    # the NAPI thread gets no CPU in a sleep on a busy host (CI stop 24: "inject: [Errno 105] No buffer space
    # available" three times). Sent again after a sleep, the frames give the same polls as a calm run.
    monkeypatch.setattr(oracle_replay, "CHUNK", 1000)
    with caplog.at_level("DEBUG", logger="gro_replay.oracle.replay"):
        r = run_kernel(flow(1000), retries=1)
    waits = [int(m.split()[-1]) for m in caplog.messages if m.startswith("injector: sent 1000 waited ")]
    assert len(waits) == 1 and waits[0] >= 1, caplog.messages
    assert lens(r, "phys") == EXPECTED_1000_PHYS
    assert [w for w in phys_works(r) if w] == [64] * 15 + [40]


@needs_kernel
def test_defer_to_tunnel_elides_phys_gro_and_gro_cells_aggregate():
    # generic XDP on the receiving veth: netif_elide_gro() at the phys stage, gro_cells aggregate
    r = run_kernel(flow(200), defer_to_tunnel=True)
    assert lens(r, "phys") == [ONE] * 200
    assert lens(r, "tunnel") == [64440, 25240] * 3 + [11240]
    assert lens(r, "tunnel") == [agg(46, INNER), agg(18, INNER)] * 3 + [agg(8, INNER)]


# -- beyond the recipe: outer IPv6, frames that cannot be replayed ----------------------------------------


@needs_kernel
def test_outer_ipv6_is_replayed_with_ipv6_on_the_receiver_only():
    # the outer IPv6 header is 20 bytes longer; a computed UDP checksum is needed past the phys stage
    # (udp6: a zero checksum is refused without udp6zerocsumrx)
    r = run_kernel(flow(20, outer_ipv6=True, outer_csum="computed"))
    assert lens(r, "phys") == [agg(20, ONE + 20)] == [28110]
    assert lens(r, "tunnel") == [28040]
    r = run_kernel(flow(20, outer_ipv6=True, outer_csum="zero"))
    assert lens(r, "phys") == [28110]
    assert lens(r, "tunnel") == []


@needs_kernel
def test_frames_not_replayable_are_counted_and_not_sent():
    frames = flow(20)
    other_dst = flow(3, outer_dst="10.0.0.9")
    other_mac = flow(2, outer_dst_mac="02:00:00:00:00:99")
    geneve = build_flow(FrameSpec(encap="geneve", timestamps=False, payload=PAYLOAD), [PAYLOAD] * 2)
    arp = [bytes.fromhex("ffffffffffff020000000001" + "0806") + bytes(28)]
    mixed = frames[:10] + other_dst + geneve + frames[10:] + other_mac + arp
    r = run_kernel(mixed)
    expected = {"outer_destination_differs": 5, "outer_not_ip": 1}
    if not geneve_available():
        expected["geneve_not_built_in"] = 2
    assert r.frames_not_replayable == expected
    assert r.sent == list(range(10)) + list(range(15, 25))
    assert r.frames_sent == 20
    assert lens(r, "phys") == [28090]


@needs_kernel
def test_nothing_to_send_returns_an_empty_result():
    arp = bytes.fromhex("ffffffffffff020000000001" + "0806") + bytes(28)
    r = run_kernel([arp])
    assert (r.deliveries, r.frames_sent, r.attempts, r.frames_not_replayable) == (
        [],
        0,
        0,
        {"outer_not_ip": 1},
    )


def test_bad_arguments_are_refused_before_anything_is_built():
    with pytest.raises(ValueError):
        run_kernel(flow(1), rx_csum="complete")
    with pytest.raises(ValueError):
        run_kernel(flow(1), rx_csum="unnecessary", csum_level=4)


# -- concurrency and cleanup -----------------------------------------------------------------------------


@needs_kernel
def test_two_runs_at_once_do_not_collide():
    frames = flow(1000)

    def one(defer: bool) -> OracleResult:
        return run_kernel(frames, defer_to_tunnel=defer)

    with ThreadPoolExecutor(2) as ex:
        plain, deferred = ex.map(one, (False, True))
    assert lens(plain, "phys") == EXPECTED_1000_PHYS
    assert lens(deferred, "phys") == [ONE] * 1000
    assert set(plain.devices).isdisjoint(deferred.devices)


CHILD = """
import sys
sys.path.insert(0, {root!r})
from gro_replay.oracle import run_kernel
from gro_replay.packet.build import FrameSpec, build_flow, build_frame
spec = FrameSpec(timestamps=False, payload=1400)
frames = build_flow(spec, [1400] * {n}) if {n} <= 1000 else [build_frame(spec)] * {n}
r = run_kernel(frames)
print(*[d.len for d in r.deliveries if d.dev_role == "phys"], flush=True)
"""


def _start_child(n: int) -> subprocess.Popen:
    """A process replaying n frames: one flow up to 1000, else one frame repeated (only to be interrupted)."""
    code = CHILD.format(root=str(ROOT), n=n)
    # a job started in the background (CI runners, `cmd &`) inherits SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler: give the child SIGINT's default disposition, as an interactive shell would
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    OWN_PIDS.add(child.pid)
    return child


def _leftovers(pid: int) -> list[str]:
    prefix = f"groreplay-{pid}-"
    return [n for n in netns_list() + trace_instances() if n.startswith(prefix)]


def _injector_of(pid: int) -> bool:
    """Whether process ``pid`` has started its injector child (the replay is sending frames)."""
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and b"_child.py\x00inject" in (d / "cmdline").read_bytes():
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    return True
        except OSError:
            continue
    return False


def _wait_for(pred, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return False


@needs_kernel
def test_a_run_in_another_process_at_the_same_time_does_not_collide():
    child = _start_child(1000)
    try:
        r = run_kernel(flow(1000))
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0, err
    assert [int(x) for x in out.split()] == EXPECTED_1000_PHYS
    assert lens(r, "phys") == EXPECTED_1000_PHYS


@needs_kernel
@pytest.mark.parametrize(
    ("sig", "phase"),
    [(signal.SIGINT, "setup"), (signal.SIGINT, "inject"), (signal.SIGTERM, "inject")],
)
def test_interrupted_run_cleans_up(sig, phase):
    child = _start_child(30_000)  # about 1 s of injection
    try:
        if phase == "setup":
            assert _wait_for(lambda: any(n.startswith(f"groreplay-{child.pid}-") for n in netns_list()))
        else:
            assert _wait_for(lambda: _injector_of(child.pid))
        child.send_signal(sig)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    if sig == signal.SIGINT:
        # an uncaught KeyboardInterrupt ends Python with SIGINT's own status
        assert child.returncode == -signal.SIGINT and "KeyboardInterrupt" in err, err
    else:
        assert child.returncode == 128 + signal.SIGTERM, err
    assert out == ""
    assert _leftovers(child.pid) == []


@needs_kernel
def test_remove_leftovers_deletes_what_a_killed_run_left_and_nothing_else():
    # above PID_MAX_LIMIT: never a live process; a random tag of its own, so that two test runs at once (two
    # clones' CI) do not add the same namespace
    dead = f"groreplay-{2**22 + 1}-{os.urandom(4).hex()}"
    subprocess.run(["ip", "netns", "add", f"{dead}-a"], check=True)
    with Tracefs() as t:
        (t.root / "instances" / dead).mkdir()
    child = _start_child(10_000)  # a live run alongside keeps its namespaces and instance
    try:
        assert _wait_for(lambda: _injector_of(child.pid))
        removed = remove_leftovers()
        # ours are removed; anything else removed is another (dead) run's leftover, never a live run's
        assert {dead, f"{dead}-a"} <= set(removed)
        for name in removed:
            assert not Path(f"/proc/{name.split('-')[1]}").exists(), name
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
        subprocess.run(["ip", "netns", "del", f"{dead}-a"], capture_output=True)
    assert child.returncode == 0, err
    assert dead not in trace_instances() and f"{dead}-a" not in netns_list()


@needs_kernel
def test_a_run_leaves_no_file_descriptor_open():
    before = sorted(os.listdir("/proc/self/fd"))
    run_kernel(flow(64), rx_csum="unnecessary", defer_to_tunnel=True)
    assert sorted(os.listdir("/proc/self/fd")) == before


@needs_kernel
def test_self_check_failure_raises_oracle_error_after_the_retries(monkeypatch):
    from gro_replay.oracle import replay

    monkeypatch.setattr(replay, "_self_check", lambda polls, recv, n: "forced for the test")
    with pytest.raises(OracleError, match="after 2 attempts: forced for the test"):
        run_kernel(flow(2), retries=2)


def test_oracle_error_is_not_oracle_unavailable():
    assert not issubclass(OracleError, OracleUnavailable)


# -- the running kernel's name (env.kernel_identity) and its model (validate._running_model) ----------------------
_DEBIAN_PROC_VERSION = (
    "Linux version 5.10.0-21-amd64 (debian-kernel@lists.debian.org) (gcc-10 (Debian 10.2.1-6) 10.2.1 20210110, GNU "
    "ld (GNU Binutils for Debian) 2.35.2) #1 SMP Debian 5.10.162-1 (2023-01-21)"
)


def test_kernel_identity_prefers_the_strings_that_name_the_stable_release(tmp_path):
    """Ubuntu's /proc/version_signature, else /proc/version, else uname -r (an empty or missing file skipped)."""
    from gro_replay.oracle.env import kernel_identity

    assert kernel_identity(tmp_path) == kernel_release()
    (tmp_path / "version").write_text(_DEBIAN_PROC_VERSION + "\n")
    assert kernel_identity(tmp_path) == _DEBIAN_PROC_VERSION
    (tmp_path / "version_signature").write_text("")
    assert kernel_identity(tmp_path) == _DEBIAN_PROC_VERSION
    (tmp_path / "version_signature").write_text("Ubuntu 5.4.0-150.167-generic 5.4.233\n")
    assert kernel_identity(tmp_path) == "Ubuntu 5.4.0-150.167-generic 5.4.233"


def test_the_running_kernel_resolves_from_its_longest_name():
    """A Debian 11 kernel's uname -r (5.10.0-21-amd64) says no stable release, so alone it is assumed to lack
    89e5c58fc1e2; its /proc/version names the package 5.10.162-1, past 5.10.24, where linux-5.10.y took the fix
    as 09af4362ba47 (kernel/stable.py STABLE_BACKPORTS). A name that does not parse falls back to uname -r."""
    from types import SimpleNamespace

    from gro_replay.kernel.model import FIX_COMMIT
    from gro_replay.validate import _running_model

    debian = _running_model(
        SimpleNamespace(kernel_identity=_DEBIAN_PROC_VERSION, kernel_release="5.10.0-21-amd64")
    )
    assert debian.name == "5.10.0-21-amd64" and debian.udp_tunnel_gate_checks_uh_check
    commit, since = debian.stable_backport(FIX_COMMIT)
    assert commit.startswith("09af4362ba47") and since == "5.10.24"
    bare = _running_model(SimpleNamespace(kernel_identity="", kernel_release="5.10.0-21-amd64"))
    assert not bare.udp_tunnel_gate_checks_uh_check
    odd = _running_model(SimpleNamespace(kernel_identity="no kernel here", kernel_release="5.10.0-21-amd64"))
    assert odd == bare
    none = _running_model(SimpleNamespace(kernel_identity="", kernel_release="99.1-x"))
    assert none.notes[0].startswith("no model for this release:")
