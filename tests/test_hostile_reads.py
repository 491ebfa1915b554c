"""A `run` that names something other than a regular file never hangs a tool: a FIFO, a character device,
a socket, a directory where a file is expected, a symlink loop, a name too long, a directory this user may
not search. Each is refused before a byte is read, with a message naming the problem and the fix:
through the Monitor, the CLI in a cold process, the MCP server, and over SSH (a real sshd)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_training_check.config import parse_run
from mcp_training_check.errors import RunNotFound, RunRefError, TrainingCheckError
from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor
from mcp_training_check.sources import LogFileSource, WandbFileSource

from .runs import outcome_as_nobody
from .sshd import SshServer
from .test_ssh_source import jsonl_rows, ssh_source
from .wandb_writer import history_record, run_record, write_run_file

HANG_GUARD_SECONDS = 60.0
"""Not a speed bound: a read that has not answered by then is hung (before the fix it never answers)."""


def answer(call: Callable[[], object]) -> str:
    """``call()`` in a thread: "no error" or "ExcType: message"; fails the test if it hangs."""
    outcome: list[str] = []

    def run() -> None:
        try:
            call()
            outcome.append("no error")
        except BaseException as exc:  # reported to the test
            outcome.append(f"{type(exc).__name__}: {exc}")

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_GUARD_SECONDS)
    assert outcome, f"the call was still blocked after {HANG_GUARD_SECONDS:.0f} s"
    return outcome[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO named like a log; at teardown a writer opens it, so a reader stuck in open() (the bug) ends."""
    path = tmp_path / "train.log"
    os.mkfifo(path)
    yield path
    release(path)


def release(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "metrics.jsonl"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        yield path


# --------------------------------------------------------------------------- local special files


def test_fifo_log_is_refused_at_once_naming_the_fix(fifo: Path) -> None:
    outcome = answer(lambda: Monitor().check(str(fifo)))
    assert outcome.startswith("RunNotFound: ")
    assert f"{fifo} is a FIFO (named pipe), not a regular file: point `run` at the training's log file" in outcome


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_character_devices_are_refused(device: str) -> None:
    outcome = answer(lambda: Monitor().check(device))
    assert outcome.startswith("RunNotFound: ")
    assert f"{device} is a character device, not a regular file: point `run` at" in outcome


def test_socket_is_refused(unix_socket: Path) -> None:
    outcome = answer(lambda: LogFileSource(unix_socket).read(None))
    assert outcome.startswith("RunNotFound: ") and "is a socket, not a regular file" in outcome


def test_directory_where_a_log_is_expected_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound, match="is a directory, not a log file"):
        LogFileSource(tmp_path).read(None)


def test_fifo_run_file_inside_a_wandb_run_directory_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "wandb" / "run-20261201_120000-abcd1234"
    run_dir.mkdir(parents=True)
    os.mkfifo(run_dir / "run-abcd1234.wandb")
    try:
        outcome = answer(lambda: Monitor().check(str(tmp_path)))
    finally:
        release(run_dir / "run-abcd1234.wandb")
    assert outcome.startswith("RunNotFound: ")
    assert (
        "run-abcd1234.wandb is a FIFO (named pipe), not a regular file: pass the run's wandb/run-* directory" in outcome
    )


def test_fifo_named_like_a_run_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run-abcd1234.wandb"
    os.mkfifo(path)
    try:
        outcome = answer(lambda: Monitor().check(str(path)))
    finally:
        release(path)
    assert outcome.startswith("RunNotFound: ") and "is a FIFO (named pipe), not a W&B run file" in outcome


def test_fifo_debug_log_beside_a_run_file_does_not_block_the_read(tmp_path: Path) -> None:
    """The reader looks for the training's pid in the run's logs/debug.log: a FIFO there is skipped."""
    run_dir = tmp_path / "run-20261201_120000-abcd1234"
    (run_dir / "logs").mkdir(parents=True)
    os.mkfifo(run_dir / "logs" / "debug.log")
    records = [run_record(1, "abcd1234")] + [
        history_record(2 + step, [("loss", str(2.0 - step / 100)), ("_step", str(step))], step) for step in range(50)
    ]
    write_run_file(run_dir / "run-abcd1234.wandb", records)
    try:
        batches: list[object] = []
        outcome = answer(lambda: batches.append(WandbFileSource(run_dir).read(None)))
    finally:
        release(run_dir / "logs" / "debug.log")
    assert outcome == "no error"
    assert len(batches[0].series["loss"]) == 50  # type: ignore[attr-defined]


def test_symlink_loop_says_so_and_not_retry_later(tmp_path: Path) -> None:
    (tmp_path / "a.log").symlink_to(tmp_path / "b.log")
    (tmp_path / "b.log").symlink_to(tmp_path / "a.log")
    with pytest.raises(RunNotFound, match=r"symlink loop at .*a\.log") as caught:
        Monitor().check(str(tmp_path / "a.log"))
    assert "retry later" not in str(caught.value)


def test_symlink_loop_named_like_a_run_file(tmp_path: Path) -> None:
    (tmp_path / "a.wandb").symlink_to(tmp_path / "b.wandb")
    (tmp_path / "b.wandb").symlink_to(tmp_path / "a.wandb")
    with pytest.raises(RunNotFound, match=r"symlink loop at .*a\.wandb"):
        Monitor().check(str(tmp_path / "a.wandb"))


def test_file_name_too_long_is_named_not_a_traceback(tmp_path: Path) -> None:
    long_name = tmp_path / ("x" * 300 + ".log")
    with pytest.raises(RunRefError, match=r"file name too long: .*\(.*the longest name 304 bytes; .* 255 bytes"):
        Monitor().check(str(long_name))


def test_open_itself_names_a_name_too_long() -> None:
    """The open every local read goes through, on its own: ENAMETOOLONG from the kernel, as any user."""
    with pytest.raises(RunNotFound, match="file name too long"):
        LogFileSource("/tmp/" + "y" * 300).read(None)


@pytest.fixture
def locked_dir() -> Iterator[Path]:
    """A directory (readable tree up to it) holding ``inner/train.log``, with ``inner`` not searchable."""
    top = Path(tempfile.mkdtemp(prefix="tc-hostile-"))
    top.chmod(0o755)
    inner = top / "inner"
    inner.mkdir()
    (inner / "train.log").write_text("".join(f"step {i} loss {2.0 - i / 100}\n" for i in range(20)))
    inner.chmod(0o600)  # no x: nobody (and, without root, this user) may look inside
    yield top
    inner.chmod(0o755)
    shutil.rmtree(top, ignore_errors=True)


def as_this_user_or_nobody(call: Callable[[], object]) -> str:
    """Root searches every directory: the call runs as 'nobody' then (a forked child), else as is."""
    if os.geteuid() == 0:
        return outcome_as_nobody(call)
    try:
        call()
        return "no error"
    except TrainingCheckError as exc:
        return f"{type(exc).__name__}: {exc}"


def test_path_under_a_directory_this_user_cannot_search(locked_dir: Path) -> None:
    log = locked_dir / "inner" / "train.log"
    outcome = as_this_user_or_nobody(lambda: parse_run(str(log)))
    assert outcome.startswith("RunRefError: "), outcome
    assert f"may not search the directory {locked_dir / 'inner'} (no x permission)" in outcome
    assert "chmod o+x" in outcome


def test_open_under_a_directory_this_user_cannot_search(locked_dir: Path) -> None:
    log = locked_dir / "inner" / "train.log"
    outcome = as_this_user_or_nobody(lambda: LogFileSource(log).read(None))
    assert outcome.startswith("SourceUnavailable: "), outcome
    assert f"may not search the directory {locked_dir / 'inner'}" in outcome


# --------------------------------------------------------------------------- the CLI and the MCP server


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "/dev/urandom"])
def test_cli_check_in_a_cold_process_answers_with_the_fix(target: str, fifo: Path, tmp_path: Path) -> None:
    run = str(fifo) if target == "fifo" else target
    result = subprocess.run(
        [sys.executable, "-m", "mcp_training_check", "check", run],
        capture_output=True, text=True, timeout=HANG_GUARD_SECONDS, cwd=tmp_path,
        env={**os.environ, "TRAINING_CHECK_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "not a regular file: point `run` at the training's log file" in result.stderr
    assert "Traceback" not in result.stderr


def call_tool(tool: str, arguments: dict[str, object]) -> object:
    async def go() -> object:
        with anyio.fail_after(HANG_GUARD_SECONDS):
            async with Client(build_server(Monitor())) as client:
                return await client.call_tool(tool, arguments)

    return anyio.run(go)


@pytest.mark.parametrize("target", ["fifo", "/dev/urandom"])
def test_mcp_check_answers_with_the_fix_and_leaves_no_worker_reading(target: str, fifo: Path) -> None:
    run = str(fifo) if target == "fifo" else target
    for _ in range(5):  # each call used to leave a worker reading for good
        result = call_tool("check", {"run": run})
        assert result.is_error  # type: ignore[attr-defined]
        text = result.content[0].text  # type: ignore[attr-defined]
        assert "RunNotFound" in text and "not a regular file: point `run` at the training's log file" in text
    log = fifo.parent / "ok.log"
    log.write_text("".join(f"step {i} loss {2.0 - i / 400:.4f}\n" for i in range(300)))
    healthy = call_tool("check", {"run": str(log)})
    assert not healthy.is_error  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- over SSH


def fifo_has_a_reader(path: Path) -> bool:
    """A non-blocking open for writing succeeds only while some process has the FIFO open for reading (or
    is stuck opening it, as the remote sftp server was)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        assert exc.errno == errno.ENXIO
        return False
    return True


def test_ssh_fifo_is_refused_and_no_remote_sftp_is_left_stuck(ssh_home: SshServer, tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    os.mkfifo(path)
    try:
        outcome = answer(lambda: ssh_source(ssh_home, path, timeout=3.0).read(None))
        stuck = fifo_has_a_reader(path)
    finally:
        release(path)
    assert outcome.startswith("RunNotFound: "), outcome
    assert f"{path} on " in outcome and "is a FIFO (named pipe), not a regular file: name the training's log" in outcome
    assert not stuck, "the remote internal-sftp is blocked opening the FIFO"


def test_ssh_character_device_is_refused(ssh_home: SshServer) -> None:
    outcome = answer(lambda: ssh_source(ssh_home, Path("/dev/zero"), timeout=3.0).read(None))
    assert outcome.startswith("RunNotFound: ") and "is a character device, not a regular file" in outcome


def test_ssh_regular_log_still_reads(ssh_home: SshServer, tmp_path: Path) -> None:
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 40))
    batch = ssh_source(ssh_home, log).read(None)
    assert len(batch.series["loss"]) == 40


@pytest.mark.parametrize("run", ["\x00", "train\x00.log", "ssh://host/x\x00y"])
def test_a_nul_in_the_run_is_named(run: str) -> None:
    with pytest.raises(RunRefError, match="holds a NUL character"):
        parse_run(run)


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_a_regular_file_that_fails_to_read_is_a_source_error() -> None:
    """/proc/self/mem is a regular file whose first page cannot be read (EIO): the check says so."""
    outcome = answer(lambda: LogFileSource("/proc/self/mem").read(None))
    assert outcome.startswith("SourceUnavailable: cannot read /proc/self/mem: Input/output error"), outcome


def test_open_regular_without_following_symlinks_refuses_a_link(tmp_path: Path) -> None:
    from mcp_training_check.files import open_regular

    (tmp_path / "real.pid").write_text("123\n")
    (tmp_path / "link.pid").symlink_to(tmp_path / "real.pid")
    with open_regular(tmp_path / "link.pid") as handle:
        assert handle.read() == b"123\n"
    with pytest.raises(RunNotFound, match="a symlink where none is allowed"):
        open_regular(tmp_path / "link.pid", what="pid file", fix="name the file itself", follow_symlinks=False)


def test_ssh_file_name_too_long_is_named(ssh_home: SshServer, tmp_path: Path) -> None:
    outcome = answer(lambda: ssh_source(ssh_home, tmp_path / ("x" * 300 + ".log"), timeout=3.0).read(None))
    assert outcome.startswith("RunNotFound: file name too long: a name in "), outcome
    assert "has 304 bytes, a file system allows 255" in outcome
