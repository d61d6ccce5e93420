"""Every file output of every command reports the real cause of a write failure in one line and exits 2 (README
"Exit codes"; gro_replay/outputs.py RunOutputs).

Outputs are written beside their path and renamed into place, so the error of the temporary file's creation used
to hide the cause: ``--write-pcap /dev/full`` said "File exists" (os.makedirs' EEXIST for a path that exists but is
not a directory) where the cause is ENOTDIR, and a full device's error named the file by its stream's name without
the option. Each output option of each command is driven into three failures:

- a parent that is not a directory (``FILE/x``: open(2) and stat(2) give ENOTDIR, "Not a directory");
- a directory where the file goes (EISDIR, "Is a directory"; for the options that take a directory, a directory
  where one of its files goes, and a regular file as the directory: ENOTDIR);
- ``/dev/full`` (write(2) gives ENOSPC, "No space left on device"; for a directory option, a file of the
  directory that is a symbolic link to it);
- a symbolic link to a missing path (mkdir(2) gives EEXIST for the link, open(2) of a file beside its target ENOENT:
  neither says the link is why): "a symbolic link to a missing path (TARGET)", then for a file the system's cause.
  Before, a directory option said "Not a directory" of it.

The cause is the C library's text for the errno (``os.strerror``), so the expectation does not copy the tool's
output. ``diff --baseline-update`` writes BASELINE, which it first reads as a document: a BASELINE under a
non-directory, a directory or /dev/full is refused as an input before anything is written (tests/test_diff_inputs.py).
"""

from __future__ import annotations

import errno
import os

import pytest
from conftest import FIX_SAMPLE, skip_without_kernel_backend

from gro_replay.cli import main
from gro_replay.outputs import OutputError, RunOutputs

ENOTDIR = os.strerror(errno.ENOTDIR)
EISDIR = os.strerror(errno.EISDIR)
ENOSPC = os.strerror(errno.ENOSPC)
ENOENT = os.strerror(errno.ENOENT)
full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")

#: (command line before the output, option, the name of the file the option writes: None for a file option)
FILE_OPTIONS = [
    ([str(FIX_SAMPLE), "-q"], "--json", "out.json"),
    ([str(FIX_SAMPLE), "-q"], "--markdown", "out.md"),
    ([str(FIX_SAMPLE), "-q"], "--trace", "out.txt"),
    ([str(FIX_SAMPLE), "-q"], "--plot", "out.svg"),
    (["synth"], "", "out.pcap"),
]
DIR_OPTIONS = [
    # the first file each writes: the pre-fix kernel's (report/pcapout.py pcapng_name, pcap_name; batch: its
    # capture's name, cli/batch.py)
    ([str(FIX_SAMPLE), "-q"], "--write-pcap", "pre-fix.pcapng"),
    ([str(FIX_SAMPLE), "-q", "--pcap-format", "pcap"], "--write-pcap", "pre-fix-eth0.pcap"),
    (["batch", str(FIX_SAMPLE), "-q"], "--out", FIX_SAMPLE.stem + ".json"),
]


def _ids(x) -> str:
    if isinstance(x, list):
        return (
            "synth"
            if x == ["synth"]
            else x[0]
            if x[0] == "batch"
            else "replay" + ("-pcap" if "pcap" in x else "")
        )
    return x or "OUTPUT"


def _plot_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _invoke(runner, before: list[str], option: str, path: str):
    if option == "--plot" and not _plot_available():
        pytest.skip("the plot extra (matplotlib) is not installed")
    args = [*before, option, path] if option else [*before[:1], path, *before[1:]]
    return runner.invoke(main, args, prog_name="gro-replay")


def _one_line(r, option: str, path: str, verb: str, cause: str) -> None:
    """Exit 2, one stderr line ``Error: OPTION PATH: cannot VERB: CAUSE``, no traceback."""
    assert r.exit_code == 2, (r.exit_code, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    name = f"{option} {path}" if option else path
    assert lines[0] == f"Error: {name}: cannot {verb}: {cause}", lines[0]


def _no_temporary_left(d) -> None:
    assert [n for n in os.listdir(d) if n.endswith(".tmp")] == []


@pytest.mark.parametrize(("before", "option", "name"), FILE_OPTIONS, ids=_ids)
def test_file_output_under_a_file_is_not_a_directory(runner, tmp_path, before, option, name) -> None:
    parent = tmp_path / "regular"
    parent.write_text("x")
    path = str(parent / name)
    _one_line(_invoke(runner, before, option, path), option, path, "write", ENOTDIR)
    assert parent.read_text() == "x"


@pytest.mark.parametrize(("before", "option", "name"), FILE_OPTIONS, ids=_ids)
def test_file_output_that_is_a_directory(runner, tmp_path, before, option, name) -> None:
    target = tmp_path / name
    target.mkdir()
    # synth's OUTPUT too: the tool's own line (os.strerror(EISDIR)), not click.Path's "file '…' is a directory"
    _one_line(_invoke(runner, before, option, str(target)), option, str(target), "write", EISDIR)
    assert os.listdir(target) == []
    _no_temporary_left(tmp_path)


@full
@pytest.mark.parametrize(("before", "option", "name"), FILE_OPTIONS, ids=_ids)
def test_file_output_to_dev_full(runner, tmp_path, before, option, name) -> None:
    # --plot takes its format from the name's extension: a link named out.svg to /dev/full
    path = "/dev/full"
    if option == "--plot":
        path = str(tmp_path / name)
        os.symlink("/dev/full", path)
    _one_line(_invoke(runner, before, option, path), option, path, "write", ENOSPC)
    _no_temporary_left(tmp_path)


@pytest.mark.parametrize(("before", "option", "name"), DIR_OPTIONS, ids=_ids)
def test_directory_output_under_a_file_or_a_file(runner, tmp_path, before, option, name) -> None:
    regular = tmp_path / "regular"
    regular.write_text("x")
    # batch --out FILE too: the tool's own line (os.strerror(ENOTDIR)), not click.Path's "directory '…' is a file"
    for path in (str(regular / "d"), str(regular)):
        _one_line(_invoke(runner, before, option, path), option, path, "create", ENOTDIR)
    assert regular.read_text() == "x"


@pytest.mark.parametrize(("before", "option", "name"), DIR_OPTIONS, ids=_ids)
def test_directory_output_whose_file_is_a_directory(runner, tmp_path, before, option, name) -> None:
    d = tmp_path / "out"
    (d / name).mkdir(parents=True)
    _one_line(_invoke(runner, before, option, str(d)), option, str(d / name), "write", EISDIR)
    assert sorted(os.listdir(d)) == [name]  # the run's other files were removed with it


@full
@pytest.mark.parametrize(("before", "option", "name"), DIR_OPTIONS, ids=_ids)
def test_directory_output_to_dev_full(runner, tmp_path, before, option, name) -> None:
    _one_line(_invoke(runner, before, option, "/dev/full"), option, "/dev/full", "create", ENOTDIR)
    d = tmp_path / "out"
    d.mkdir()
    os.symlink("/dev/full", d / name)
    _one_line(_invoke(runner, before, option, str(d)), option, str(d / name), "write", ENOSPC)
    assert sorted(os.listdir(d)) == [name]


@pytest.mark.parametrize(("before", "option", "name"), FILE_OPTIONS, ids=_ids)
def test_file_output_that_is_a_link_to_a_missing_path(runner, tmp_path, before, option, name) -> None:
    link, target = tmp_path / name, tmp_path / "missing" / name
    os.symlink(target, link)
    cause = f"a symbolic link to a missing path ({target}): {ENOENT}"
    _one_line(_invoke(runner, before, option, str(link)), option, str(link), "write", cause)
    assert os.readlink(link) == str(target) and not target.parent.exists()


def test_a_link_to_a_missing_file_in_a_directory_is_followed(runner, tmp_path) -> None:
    """A symbolic link is followed (gro_replay/outputs.py): where the target's directory exists the file is made
    there and the link stays."""
    link, target = tmp_path / "out.json", tmp_path / "t.json"
    os.symlink(target, link)
    r = runner.invoke(main, [str(FIX_SAMPLE), "-q", "--json", str(link)], prog_name="gro-replay")
    assert r.exit_code == 0, r.stderr
    assert os.path.islink(link) and target.read_text().startswith("{")


@pytest.mark.parametrize(("before", "option", "name"), DIR_OPTIONS, ids=_ids)
def test_directory_output_that_is_a_link_to_a_missing_path(runner, tmp_path, before, option, name) -> None:
    link, target = tmp_path / "out", tmp_path / "missing" / "out"
    os.symlink(target, link)
    cause = f"a symbolic link to a missing path ({target})"
    _one_line(_invoke(runner, before, option, str(link)), option, str(link), "create", cause)
    assert os.readlink(link) == str(target) and not target.parent.exists()
    # a file of the directory that is such a link: the same words, then the system's cause
    d = tmp_path / "d"
    d.mkdir()
    os.symlink(target, d / name)
    cause = f"a symbolic link to a missing path ({target}): {ENOENT}"
    _one_line(_invoke(runner, before, option, str(d)), option, str(d / name), "write", cause)
    assert sorted(os.listdir(d)) == [name]


@pytest.mark.parametrize(("before", "option", "name"), FILE_OPTIONS + DIR_OPTIONS, ids=_ids)
def test_an_output_that_is_a_loop_of_links_says_so(runner, tmp_path, before, option, name) -> None:
    """Two links naming each other: open(2) and stat(2) give ELOOP; the path is not missing (breaker's finding:
    directory outputs said "a symbolic link to a missing path (loop2)")."""
    a, b = tmp_path / "loop1", tmp_path / "loop2"
    os.symlink(b, a)
    os.symlink(a, b)
    how = "create" if (before, option, name) in DIR_OPTIONS else "write"
    _one_line(_invoke(runner, before, option, str(a)), option, str(a), how, os.strerror(errno.ELOOP))


def test_kernel_trace_is_checked_before_the_backend_runs(runner, tmp_path) -> None:
    """kernel ``--trace`` under a file, at a directory, in a missing directory or at a symbolic link to a missing
    path: refused (exit 2, the cause) before the backend's environment check (which, without root, would be exit 3)
    and before it runs."""
    regular = tmp_path / "regular"
    regular.write_text("x")
    link, target = tmp_path / "link.txt", tmp_path / "missing" / "t.txt"
    os.symlink(target, link)
    dangling = f"a symbolic link to a missing path ({target}): {ENOENT}"
    for path, cause in (
        (str(regular / "t.txt"), ENOTDIR),
        (str(tmp_path), EISDIR),
        (str(tmp_path / "missing" / "t.txt"), ENOENT),
        (str(link), dangling),
    ):
        r = runner.invoke(main, ["kernel", str(FIX_SAMPLE), "--trace", path], prog_name="gro-replay")
        _one_line(r, "--trace", path, "write", cause)


@full
def test_kernel_trace_to_dev_full(runner) -> None:
    skip_without_kernel_backend()
    r = runner.invoke(main, ["kernel", str(FIX_SAMPLE), "--trace", "/dev/full"], prog_name="gro-replay")
    _one_line(r, "--trace", "/dev/full", "write", ENOSPC)


def _in_child_as_nobody(fn) -> tuple[int, str]:
    """Run ``fn`` in a forked child as uid/gid 65534 when this is root (root passes every permission check), else
    as this user; its exit code and what it wrote to a pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.close(r)
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            os.write(w, fn().encode())
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            os.write(w, f"{type(e).__name__}: {e}".encode())
            code = 1
        os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), text


def test_permission_denied_is_the_cause(tmp_path) -> None:
    """A directory the user cannot write into: EACCES ("Permission denied") for a file output and a directory
    output, named with the option."""
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(locked, 0o555)

    def attempt() -> str:
        out = []
        for call in (
            lambda o: o.temp_path(str(locked / "out.json"), "--json"),
            lambda o: o.make_dir(str(locked / "pcaps"), "--write-pcap"),
        ):
            try:
                call(RunOutputs())
            except OutputError as e:
                out.append(e.message)
        return "\n".join(out)

    code, text = _in_child_as_nobody(attempt)
    if code != 0 and "PermissionError" in text:
        pytest.skip(f"cannot run as another user here: {text}")
    denied = os.strerror(errno.EACCES)
    assert text.splitlines() == [
        f"--json {locked / 'out.json'}: cannot write: {denied}",
        f"--write-pcap {locked / 'pcaps'}: cannot create: {denied}",
    ]
