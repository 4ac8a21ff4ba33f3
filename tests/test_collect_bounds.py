"""Every collector bounds what one command may cost (issue #21, finding 1): its output in bytes
and its time from start to finish. A host's root decides what its sshd answers; an answer that
never ends, or one that trickles a byte every half second, ends as that device's status
(`output_too_large`, `timeout`), and the collection goes on with the others.

Each case runs against a real component: a real sshd on 127.0.0.1 whose authorized key forces
a command (tests/sshd.py), real local processes, and the fake Onyx CLI (a paramiko server,
tests/ssh_server/fake_onyx.py). Code that reads without end would hang or exhaust memory, so
the SSH and local cases run in a child process with a hard time and memory limit
(tests/child.py) and the switch cases in a thread with a deadline: a regression is a failed
test, not a stuck CI run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from auditor.collect.onyx import SHOW_IB_STATUS, SHOW_VERSION, SwitchCollection, collect_switches
from tests.child import run_child
from tests.conftest import need
from tests.ssh_server.fake_onyx import FakeOnyx, endless, trickle
from tests.sshd import Sshd, sshd_missing, start_sshd
from tests.test_hostside import GPU05, write_tree
from tests.test_onyx import PASSWORD, PW_ENV, _responses, _sw

_T = TypeVar("_T")

# What a compute host answers its first SSH command with ($1 in the forced command): without
# end, as fast as it can, or one byte every half second. Every later command (the next host's)
# is run as asked, so the sweep can be seen going on.
HOSTILE = """#!/bin/sh
if mkdir "{flag}" 2>/dev/null; then
  case "{mode}" in
    endless) exec yes ;;
    trickle) while :; do printf x; sleep 0.5; done ;;
  esac
fi
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""

COLLECT_HOSTS = """
import json, sys, time
from datetime import UTC, datetime
from pathlib import Path
from auditor.config import load
from auditor.ops.hosts import collect_hosts
from auditor.store import Store
settings = load(Path(sys.argv[1]), Path(sys.argv[2]))
started = time.monotonic()
with Store(settings.db) as store:
    out = collect_hosts(store, settings, now=datetime(2026, 11, 30, 3, tzinfo=UTC))
    rows = {r["device"]: [r["status"], r["detail"]] for r in store.device_status()}
print(json.dumps({"took": time.monotonic() - started, "status": rows,
                  "outcomes": [[o.device, o.status] for o in out]}))
"""


def _hostile_sshd(tmp_path: Path, mode: str) -> Iterator[Sshd]:
    need(sshd_missing())
    script = tmp_path / "forced.sh"
    script.write_text(HOSTILE.format(flag=tmp_path / "first-session", mode=mode))
    script.chmod(0o755)
    server = start_sshd(tmp_path / "sshd", forced_command=script)
    yield server
    server.stop()


@pytest.fixture
def endless_sshd(tmp_path: Path) -> Iterator[Sshd]:
    yield from _hostile_sshd(tmp_path, "endless")


@pytest.fixture
def trickle_sshd(tmp_path: Path) -> Iterator[Sshd]:
    yield from _hostile_sshd(tmp_path, "trickle")


def _hosts_config(tmp_path: Path, server: Sshd) -> Path:
    """Two names of 127.0.0.1 (one sshd): the first is served the hostile answer, the second
    the real commands, on a fake sysfs tree."""
    root = tmp_path / "sys" / "class" / "infiniband"
    write_tree(root, {"mlx5_0": (GPU05, 0)})
    known = tmp_path / "known_hosts"
    line = server.known_hosts.read_text().strip()
    known.write_text(f"{line}\n{line.replace('[127.0.0.1]', '[127.1]', 1)}\n")
    cfg = tmp_path / "auditor.toml"
    cfg.write_text("\n".join([
        "[store]", f'captures = "{tmp_path / "captures"}"',
        "[hosts]", 'names = ["127.0.0.1", "127.1"]', f'user = "{server.user}"',
        f"port = {server.port}", f'known_hosts = "{known}"', f'key_file = "{server.client_key}"',
        "timeout_s = 10", 'kernel_log = "none"', f'sysfs_root = "{root}"', "concurrency = 1",
        "max_output_mb = 1", "command_timeout_s = 3", ""]))
    return cfg


@pytest.mark.ssh
def test_a_host_answering_without_end_is_output_too_large(tmp_path: Path,
                                                         endless_sshd: Sshd) -> None:
    got = run_child(COLLECT_HOSTS, str(_hosts_config(tmp_path, endless_sshd)),
                    str(tmp_path / "a.duckdb"), timeout_s=60)
    assert got["outcomes"] == [["127.0.0.1", "output_too_large"], ["127.1", "ok"]]
    status, detail = got["status"]["127.0.0.1"]
    assert status == "output_too_large"
    assert detail == "127.0.0.1: sh: output over 1 MiB ([hosts] max_output_mb); stopped"
    assert got["status"]["127.1"][1].startswith("1 HCA port(s) on 1 device(s)")
    assert got["took"] < 20


@pytest.mark.ssh
def test_a_host_trickling_without_end_is_a_timeout(tmp_path: Path, trickle_sshd: Sshd) -> None:
    got = run_child(COLLECT_HOSTS, str(_hosts_config(tmp_path, trickle_sshd)),
                    str(tmp_path / "a.duckdb"), timeout_s=60)
    assert got["outcomes"] == [["127.0.0.1", "timeout"], ["127.1", "ok"]]
    assert got["status"]["127.0.0.1"][1] == (
        "127.0.0.1: sh: not finished within 3 s ([hosts] command_timeout_s); stopped")
    assert 3 <= got["took"] < 20


SSH_RUNNER = """
import json, sys, time
from pathlib import Path
from auditor.collect.runner import SshRunner
from auditor.config import load
from auditor.errors import CollectError
settings = load(Path(sys.argv[1]), Path(sys.argv[2]))
runner = SshRunner(settings.sweep)
started = time.monotonic()
try:
    runner.run(["ibnetdiscover"])
    got = {"error": None}
except CollectError as exc:
    got = {"error": str(exc), "status": getattr(exc, "status", None)}
got["took"] = time.monotonic() - started
runner.close()
print(json.dumps(got))
"""


@pytest.mark.ssh
@pytest.mark.parametrize(("mode", "status", "why"), [
    ("endless", "output_too_large", "output over 1 MiB ([sweep] max_output_mb)"),
    ("trickle", "timeout", "not finished within 3 s ([sweep] command_timeout_s)")])
def test_the_management_host_is_bounded_too(tmp_path: Path, mode: str, status: str,
                                            why: str) -> None:
    server = next(_hostile_sshd(tmp_path, mode))
    try:
        cfg = tmp_path / "auditor.toml"
        cfg.write_text("\n".join([
            "[sweep]", 'host = "127.0.0.1"', f"port = {server.port}", f'user = "{server.user}"',
            f'key_file = "{server.client_key}"', f'known_hosts = "{server.known_hosts}"',
            "max_output_mb = 1", "command_timeout_s = 3", ""]))
        got = run_child(SSH_RUNNER, str(cfg), str(tmp_path / "a.duckdb"), timeout_s=60)
    finally:
        server.stop()
    assert got["error"] == f"127.0.0.1: ibnetdiscover: {why}; stopped"
    assert got["status"] == status
    assert got["took"] < 20


# -- the local runner ----------------------------------------------------------------------------

LOCAL = """
import json, os, sys, time
from auditor.collect.bounded import Limits
from auditor.collect.runner import LocalRunner
from auditor.errors import CollectError
runner = LocalRunner({"PATH": sys.argv[1] + os.pathsep + os.environ["PATH"]},
                     limits=Limits.of(1, 3, 2, "[sweep]"))
started = time.monotonic()
try:
    result = runner.run(["ibnetdiscover"])
    got = {"error": None, "stdout": result.stdout[:20]}
except CollectError as exc:
    got = {"error": str(exc), "status": getattr(exc, "status", None)}
got["took"] = time.monotonic() - started
print(json.dumps(got))
"""


@pytest.mark.parametrize(("body", "status", "why"), [
    ("yes &\necho $! > {pid}\nwait\n", "output_too_large",
     "output over 1 MiB ([sweep] max_output_mb)"),
    ("(while :; do printf x; sleep 0.5; done) &\necho $! > {pid}\nwait\n", "timeout",
     "not finished within 3 s ([sweep] command_timeout_s)"),
    ("sleep 30 &\necho $! > {pid}\nwait\n", None, "no answer within 2 s"),
])
def test_the_local_runner_stops_a_command_and_all_it_started(
        tmp_path: Path, body: str, status: str | None, why: str) -> None:
    """A stand-in `ibnetdiscover` first in PATH ([sweep.env] can do that) starts the endless
    writer as its child: both are killed, nothing is left running."""
    bin_dir, pid = tmp_path / "bin", tmp_path / "child.pid"
    bin_dir.mkdir()
    tool = bin_dir / "ibnetdiscover"
    tool.write_text("#!/bin/sh\n" + body.format(pid=pid))
    tool.chmod(0o755)
    got = run_child(LOCAL, str(bin_dir), timeout_s=60)
    assert got["error"] == f"local: ibnetdiscover: {why}" + ("; stopped" if status else "")
    assert got["status"] == status
    assert got["took"] < 15
    child = int(pid.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{child}").exists():
        time.sleep(0.05)  # reaped by init once its parent is gone
    state = Path(f"/proc/{child}/stat").read_text().split()[2] \
        if Path(f"/proc/{child}").exists() else "gone"
    assert state in ("gone", "Z"), f"the tool's child {child} still runs ({state})"


def test_the_local_runner_reads_a_large_answer_whole(tmp_path: Path) -> None:
    """Under the bound nothing changes: 3 MiB on stdout and stderr at once are read whole (an
    unread stderr would block the tool)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "ibnetdiscover"
    tool.write_text("#!/bin/sh\nhead -c 3145728 /dev/zero | tr '\\0' a >&2 &\n"
                    "head -c 3145728 /dev/zero | tr '\\0' b\nwait\n")
    tool.chmod(0o755)
    code = LOCAL.replace("Limits.of(1, 3, 2,", "Limits.of(8, 30, 10,").replace(
        'result.stdout[:20]}', 'len(result.stdout), "stderr": len(result.stderr)}')
    got = run_child(code, str(bin_dir), timeout_s=60)
    assert got == {"error": None, "stdout": 3145728, "stderr": 3145728, "took": got["took"]}


# -- the Onyx CLI --------------------------------------------------------------------------------


def _within(seconds: float, work: Callable[[], _T]) -> _T:
    """work() in a thread; the test fails (the thread is left to the server's stop) if it
    takes longer than `seconds`."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still reading after {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["result"]  # type: ignore[no-any-return]


@pytest.fixture
def password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PW_ENV, PASSWORD)


def _switches(known: Path, *servers: FakeOnyx, **kw: Any) -> list[SwitchCollection]:
    known.write_text("".join(s.known_hosts_line() for s in servers))
    targets = [_sw(s.port, known, name=f"leaf{i:02d}", timeout_s=30.0, max_output_mb=1.0,
                   command_timeout_s=3.0, **kw) for i, s in enumerate(servers, 1)]
    return _within(30, lambda: collect_switches(targets, concurrency=len(targets)))


@pytest.mark.ssh
@pytest.mark.usefixtures("password")
@pytest.mark.parametrize(("stream", "status", "why"), [
    (endless, "output_too_large", "output over 1 MiB ([[switches]] leaf01 ssh max_output_mb)"),
    (trickle, "timeout", "within 3 s ([[switches]] ssh command_timeout_s)")])
def test_a_switch_answering_without_end_is_stopped_and_the_others_are_read(
        tmp_path: Path, stream: Any, status: str, why: str) -> None:
    bad = FakeOnyx({**_responses(), SHOW_IB_STATUS: stream}, password=PASSWORD).start()
    good = FakeOnyx(_responses(), password=PASSWORD).start()
    try:
        started = time.monotonic()
        results = _switches(tmp_path / "known_hosts", bad, good)
        took = time.monotonic() - started
    finally:
        bad.stop()
        good.stop()
    assert [(r.name, r.status) for r in results] == [("leaf01", status), ("leaf02", "ok")]
    assert why in results[0].detail and SHOW_IB_STATUS in results[0].detail
    assert len(results[1].transceivers) == 5
    assert took < 20


@pytest.mark.ssh
@pytest.mark.usefixtures("password")
def test_a_switch_whose_login_never_ends_is_output_too_large(tmp_path: Path) -> None:
    bad = FakeOnyx(_responses(), password=PASSWORD, login=endless).start()
    try:
        results = _switches(tmp_path / "known_hosts", bad)
    finally:
        bad.stop()
    assert results[0].status == "output_too_large", results[0].detail
    assert results[0].detail.endswith(": login: output over 1 MiB ([[switches]] leaf01 ssh "
                                      "max_output_mb); stopped")


@pytest.mark.ssh
@pytest.mark.usefixtures("password")
def test_endless_diagnostics_fail_the_switch(tmp_path: Path) -> None:
    """A diagnostics read that times out ends only the optics read (the port status and the
    inventory are read); one without end fails the switch: its session is spent."""
    from auditor.collect.onyx import diagnostics_command

    answers = {**_responses(), diagnostics_command("IB1/1/1"): endless}
    bad = FakeOnyx(answers, password=PASSWORD).start()
    try:
        results = _switches(tmp_path / "known_hosts", bad, optics=True)
    finally:
        bad.stop()
    assert results[0].status == "output_too_large", results[0].detail
    assert SHOW_VERSION not in results[0].detail


def test_the_config_bounds_are_checked(tmp_path: Path) -> None:
    from auditor.config import load
    from auditor.errors import ConfigError

    cfg = tmp_path / "auditor.toml"
    cfg.write_text("[sweep]\nmax_output_mb = 0\ncommand_timeout_s = 1e9\n"
                   "[hosts]\nmax_output_mb = 1e12\n"
                   '[[switches]]\nname = "s"\nhost = "h"\n'
                   'ssh = { user = "u", command_timeout_s = -1, max_output_mb = "x" }\n')
    with pytest.raises(ConfigError) as err:
        load(cfg, tmp_path / "a.duckdb")
    assert sorted(m.split(":")[0] for m in err.value.messages()) == [
        "hosts.max_output_mb", "sweep.command_timeout_s", "sweep.max_output_mb",
        "switches[0].ssh.command_timeout_s", "switches[0].ssh.max_output_mb"]
    cfg.write_text("[sweep]\nmax_output_mb = 2\n[hosts]\ncommand_timeout_s = 5\n")
    settings = load(cfg, tmp_path / "a.duckdb")
    assert (settings.sweep.max_output_mb, settings.sweep.command_timeout_s) == (2, 3600)
    assert (settings.hosts.max_output_mb, settings.hosts.command_timeout_s) == (64, 5)
