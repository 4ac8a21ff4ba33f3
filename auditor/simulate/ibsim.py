"""Run the real infiniband-diags tools against an ibsim-simulated fat tree (the trees and their
net files are in `trees`; re-exported here).

For tests and benchmark scripts only; no command of the auditor imports this module.

    tree = FatTree(spines=2, leaves=4, hosts_per_leaf=2)
    with IbSim(write_net_file(tree), tmp_path) as sim:
        sim.opensm_once()                      # LIDs kept, LFTs set, ports Active
        text = sim.run("iblinkinfo").stdout

How it works: ``ibsim`` simulates the fabric and listens on abstract unix sockets named after
``IBSIM_SOCKNAME``; a tool started with ``LD_PRELOAD=libumad2sim.so`` talks to it instead of
``/dev/infiniband``, sitting on node ``SIM_HOST``. No kernel module or IB hardware is needed.

Limits worth knowing:
- At most 10 clients may be attached to one simulator at a time (an opensm daemon is one).
- Without ``opensm_once()`` ports stay ``Initialize`` and only directed-route tools work
  (ibnetdiscover, iblinkinfo); perfquery and ``ibqueryerrors --skip-sl`` need the LFTs.
- The auditor must never write to a fabric, so ``IbSim.run`` refuses counter resets and
  port-state changes even here (``FabricWriteError``, a ``ValueError``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from types import TracebackType

from auditor.simulate.trees import (
    DEGRADE_MODES,
    FatTree,
    FatTree3,
    expected_links,
    write_net_file,
)

__all__ = [
    "DEGRADE_MODES",
    "FabricWriteError",
    "FatTree",
    "FatTree3",
    "IbSim",
    "IbSimError",
    "available",
    "check_read_only",
    "expected_links",
    "ibsim_limit_args",
    "quote_node",
    "umad2sim_library",
    "unavailable_reason",
    "write_net_file",
]

logger = logging.getLogger(__name__)


# ibsim's compiled-in table sizes; beyond them it aborts with "no more nodes/switches/ports".
_IBSIM_DEFAULT_NODES = 2048
_IBSIM_DEFAULT_SWITCHES = 256
_IBSIM_DEFAULT_PORTS = _IBSIM_DEFAULT_SWITCHES * 36 + _IBSIM_DEFAULT_NODES * 2

_PROC_NET_UNIX = Path("/proc/net/unix")  # lists the abstract sockets ibsim listens on
_TOOL_DIRS = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")  # the diags live in sbin, often off PATH
_REQUIRED_TOOLS = ("ibsim", "opensm", "ibnetdiscover", "iblinkinfo", "perfquery", "ibqueryerrors")


class IbSimError(RuntimeError):
    """The simulator could not be started, died, or refused a console command."""


class FabricWriteError(ValueError):
    """A tool invocation that would write to the fabric (counter reset, port state change)."""
_NODE_LINE = re.compile(r'^(Switch|Hca|Ca|Rt)\s+(\d+)\s+"([^"]+)"', re.MULTILINE)


def _net_nodes(net_text: str) -> list[tuple[str, int, str]]:
    return [(kind, int(n), nodeid) for kind, n, nodeid in _NODE_LINE.findall(net_text)]


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def ibsim_limit_args(net_text: str) -> list[str]:
    """ibsim ``-N/-S/-P`` options the net file needs; empty when the defaults suffice.

    ibsim counts a switch as ports+1 table entries (port 0) and a CA as its ports.
    """
    nodes = _net_nodes(net_text)
    switches = sum(1 for kind, _, _ in nodes if kind == "Switch")
    ports = sum(n + 1 if kind == "Switch" else n for kind, n, _ in nodes)
    args: list[str] = []
    for flag, need, default in (
        ("-N", len(nodes), _IBSIM_DEFAULT_NODES),
        ("-S", switches, _IBSIM_DEFAULT_SWITCHES),
        ("-P", ports, _IBSIM_DEFAULT_PORTS),
    ):
        if need > default:
            args += [flag, str(_pow2_at_least(need))]
    return args


# ---------------------------------------------------------------------------------- environment


def _which(tool: str) -> str | None:
    path = os.environ.get("PATH", "")
    return shutil.which(tool, path=os.pathsep.join([path, *_TOOL_DIRS]))


@cache
def umad2sim_library() -> str | None:
    """Path of libumad2sim.so (Debian package libumad2sim0), or None."""
    for pattern in ("lib/*/umad2sim/libumad2sim.so", "lib*/umad2sim/libumad2sim.so"):
        found = sorted(Path("/usr").glob(pattern))
        if found:
            return str(found[0])
    dpkg = _which("dpkg")
    if dpkg is None:
        return None
    try:
        listing = subprocess.run(
            [dpkg, "-L", "libumad2sim0"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in listing.splitlines():
        if line.endswith("/libumad2sim.so") and Path(line).is_file():
            return line
    return None


def unavailable_reason() -> str | None:
    """Why the simulator can't run here (for ``pytest.mark.skipif``), or None if it can."""
    missing = [tool for tool in _REQUIRED_TOOLS if _which(tool) is None]
    if umad2sim_library() is None:
        missing.append("libumad2sim.so")
    if not _PROC_NET_UNIX.exists():
        missing.append("/proc/net/unix")
    if missing:
        return (
            f"ibsim harness needs {', '.join(missing)} "
            "(apt-get install ibsim-utils infiniband-diags opensm)"
        )
    return None


def available() -> bool:
    """True when ibsim, opensm, the diag tools and libumad2sim.so are all installed."""
    return unavailable_reason() is None


# ---------------------------------------------------------------------------------- read-only guard

# tool -> (forbidden short flags, short flags that take a value, forbidden long options)
_RESET_OPTIONS: Mapping[str, tuple[str, str, tuple[str, ...]]] = {
    "perfquery": ("rR", "zCPtsy", ("reset_after_read", "Reset_only")),
    "ibqueryerrors": ("kK", "sGSDozCPty", ("clear-errors", "clear-counts")),
}
_WRITING_TOOLS = frozenset({"ibclearerrors", "ibclearcounters", "ibccconfig"})
_PORTSTATE_WRITE_OPS = frozenset(
    {"enable", "disable", "on", "off", "reset", "speed", "espeed", "fdr10", "width", "down"}
    | {"arm", "active", "vls", "mtu", "lid", "smlid", "lmc", "mkey", "mkeylease", "mkeyprot"}
)


def check_read_only(args: Iterable[str]) -> None:
    """Raise ``FabricWriteError`` for a command line that resets counters or sets port state.

    Conservative on purpose: a long option counts if it is any prefix of a forbidden one
    (getopt_long accepts unique prefixes) and short-flag clusters such as ``-xR`` are split.
    """
    argv = list(args)
    if not argv:
        raise ValueError("no command given")
    tool = Path(argv[0]).name
    if tool in _WRITING_TOOLS:
        raise FabricWriteError(f"{tool} writes to the fabric; refused")
    if tool == "ibportstate":
        ops = [a for a in argv[1:] if a.lower() in _PORTSTATE_WRITE_OPS]
        if ops:
            raise FabricWriteError(f"ibportstate {ops[0]} changes port state; refused")
        return
    if tool in _RESET_OPTIONS:
        _check_reset_options(tool, argv[1:])


def _check_reset_options(tool: str, args: list[str]) -> None:
    bad_short, value_short, bad_long = _RESET_OPTIONS[tool]
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--"):
            name = arg[2:].split("=", 1)[0]
            if name and any(opt.startswith(name) for opt in bad_long):
                raise FabricWriteError(f"{tool} {arg} resets counters; refused")
        elif arg.startswith("-"):
            for flag in arg[1:]:
                if flag in bad_short:
                    raise FabricWriteError(f"{tool} -{flag} resets counters; refused")
                if flag in value_short:
                    break  # the rest of the cluster is that option's value


# ---------------------------------------------------------------------------------- simulator

_NAME_OK = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_PROMPT = re.compile(r"sim(?: \(inactive\))?> ")
_CONSOLE_ERROR = re.compile(r"^# |unknown - skipped|bad param", re.MULTILINE)
# client variables that would point a tool at another simulator (UDP mode) or preload twice
_CLIENT_ENV_DROP = ("LD_PRELOAD", "IBSIM_SERVER_NAME", "IBSIM_SERVER_PORT", "SIM_HOST")


def _die_with_parent_prefix() -> list[str]:
    """Command prefix making ibsim get SIGKILL if we die without stopping it.

    Otherwise a killed test run would leave ibsim behind, spinning at 100% CPU once its
    console FIFO hits EOF. setpriv (util-linux, always on Debian) sets PR_SET_PDEATHSIG and
    execs; that survives the exec, and avoids a thread-unsafe preexec_fn.
    """
    setpriv = _which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def quote_node(node: str) -> str:
    if not node or any(c in node for c in '"\n['):
        raise ValueError(f"bad node id {node!r}")
    return f'"{node}"'


class IbSim:
    """One running ibsim instance with a console, as a context manager.

    ``sim_host`` is the node the tools sit on (default: the first CA in the net file).
    ``name`` becomes ``IBSIM_SOCKNAME`` (default: unique per instance), so several
    simulators can run side by side. Everything goes into ``workdir``: the net file, the
    console FIFO, the console log and the clients' fake ``sys-<pid>/`` trees.

    ibsim runs under ``setpriv --pdeathsig KILL``, so it dies with the *thread* that started
    it: start it from a thread that outlives its use. One instance is not thread-safe.
    """

    def __init__(
        self,
        net_text: str,
        workdir: Path,
        sim_host: str | None = None,
        name: str | None = None,
        *,
        start_timeout: float = 120.0,
    ) -> None:
        self.name = name or f"fa{os.getpid()}x{secrets.token_hex(4)}"
        if not _NAME_OK.fullmatch(self.name):
            raise ValueError(f"bad simulator name {self.name!r}")
        self.net_text = net_text
        self.workdir = Path(workdir)
        if sim_host is None:
            cas = (nodeid for kind, _, nodeid in _net_nodes(net_text) if kind != "Switch")
            sim_host = next(cas, None)
        self.sim_host = sim_host
        self.start_timeout = start_timeout
        self.net_path = self.workdir / f"{self.name}.net"
        self.fifo_path = self.workdir / f"{self.name}.console"
        self.log_path = self.workdir / f"{self.name}.log"
        self.opensm_dir = self.workdir / f"{self.name}-opensm"
        self._proc: subprocess.Popen[bytes] | None = None
        self._console_fd: int | None = None
        self._log_offset = 0
        self._markers = itertools.count(1)
        self._client_pids: set[int] = set()

    # -- lifecycle

    def __enter__(self) -> IbSim:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> None:
        """Start ibsim and wait until its control socket exists (the net file is parsed)."""
        if self._proc is not None:
            raise IbSimError("simulator already started")
        ibsim = _which("ibsim")
        if ibsim is None:
            raise IbSimError(unavailable_reason() or "ibsim not found")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.net_path.write_text(self.net_text)
        try:
            os.mkfifo(self.fifo_path)
            # Open the read end non-blocking first so opening the write end doesn't block,
            # then hand ibsim a blocking read end. We keep the write end open for ibsim's
            # lifetime: at EOF on its console ibsim busy-loops at 100% CPU.
            read_fd = os.open(self.fifo_path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                self._console_fd = os.open(self.fifo_path, os.O_WRONLY)
                os.set_blocking(read_fd, True)
                env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV_DROP}
                env["IBSIM_SOCKNAME"] = self.name
                cmd = [
                    *_die_with_parent_prefix(),
                    ibsim,
                    "-s",
                    *ibsim_limit_args(self.net_text),
                    self.net_path.name,
                ]
                logger.debug("starting %s in %s", cmd, self.workdir)
                with self.log_path.open("wb") as log:
                    self._proc = subprocess.Popen(
                        cmd,
                        stdin=read_fd,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        cwd=self.workdir,
                        env=env,
                    )
            finally:
                os.close(read_fd)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        if self._proc is None:
            raise IbSimError("simulator not started")
        needle = f"@{self.name}:ctl@"
        deadline = time.monotonic() + self.start_timeout
        while True:
            rc = self._proc.poll()
            if rc is not None:
                raise IbSimError(f"ibsim exited ({rc}) while starting:\n{self.log_tail()}")
            if needle in _PROC_NET_UNIX.read_text(encoding="utf-8", errors="replace"):
                break
            if time.monotonic() > deadline:
                raise IbSimError(
                    f"ibsim not ready after {self.start_timeout:.0f} s:\n{self.log_tail()}"
                )
            time.sleep(0.02)
        # the console replies of later commands are searched from here on; the parse noise
        # before it ("cannot parse remote lid ...") can be megabytes on large fabrics
        self._log_offset = self.log_path.stat().st_size

    def stop(self) -> None:
        """Quit ibsim (killing it if it doesn't go) and clean up; safe to call twice."""
        proc, fd = self._proc, self._console_fd
        self._console_fd = None
        try:
            if fd is not None:
                if proc is not None and proc.poll() is None:
                    # if ibsim is gone or its pipe is full, the kill below handles it
                    with contextlib.suppress(OSError):
                        os.write(fd, b"Quit\n")
                os.close(fd)
            if proc is not None:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    logger.warning("ibsim %s did not quit; killing it", proc.pid)
                    proc.kill()
                    proc.wait(timeout=10)
        finally:
            self.fifo_path.unlink(missing_ok=True)
            for pid in list(self._client_pids):
                self._remove_client_tree(pid)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the console/stderr log, for error messages."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 64 * 1024))
                text = log.read().decode(errors="replace")
        except OSError:
            return "(no ibsim log)"
        return "\n".join(text.splitlines()[-lines:])

    def _require_running(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise IbSimError("simulator not started")
        rc = self._proc.poll()
        if rc is not None:
            raise IbSimError(f"ibsim exited with status {rc}:\n{self.log_tail()}")
        return self._proc

    # -- clients

    def client_env(self) -> dict[str, str]:
        """Environment for a diag tool attached to this simulator."""
        so = umad2sim_library()
        if so is None:
            raise IbSimError(unavailable_reason() or "libumad2sim.so not found")
        env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV_DROP}
        env |= {"LD_PRELOAD": so, "IBSIM_SOCKNAME": self.name}
        if self.sim_host is not None:
            env["SIM_HOST"] = self.sim_host
        return env

    def run(
        self, *args: str, timeout: float = 60.0, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run one diag tool against the simulator and return its output (never raises on rc).

        Raises ``FabricWriteError`` for counter resets, ``subprocess.TimeoutExpired`` after
        ``timeout`` seconds (a client whose simulator is gone retries forever).
        """
        check_read_only(args)
        self._require_running()
        exe = _which(args[0])
        if exe is None:
            raise IbSimError(f"{args[0]} not found")
        full_env = self.client_env() | dict(env or {})
        # cwd matters: umad2sim builds its fake /sys and /dev in ./sys-<pid>/
        with subprocess.Popen(
            [exe, *args[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            cwd=self.workdir,
            env=full_env,
        ) as proc:
            self._client_pids.add(proc.pid)
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                self._remove_client_tree(proc.pid)
                raise
        self._remove_client_tree(proc.pid)
        return subprocess.CompletedProcess(list(args), proc.returncode, out, err)

    def _remove_client_tree(self, pid: int) -> None:
        shutil.rmtree(self.workdir / f"sys-{pid}", ignore_errors=True)
        self._client_pids.discard(pid)

    def opensm_once(
        self,
        timeout: float = 300.0,
        *,
        routing_engine: str | None = None,
        lmc: int = 0,
        dump_dir: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """One opensm sweep: keeps the static LIDs, programs LFTs, ports become Active.

        The cache/tmp dirs are per simulator, so the LID assignment is not taken from
        another fabric's guid2lid file. ``routing_engine`` is opensm's ``-R`` (minhop, updn,
        ftree, ...; opensm falls back to minhop when an engine fails: its log says which ran),
        ``lmc`` its ``-l`` (LMC > 0 gives each CA port 2^LMC LIDs: opensm then moves LIDs that
        are not aligned). ``dump_dir`` makes opensm write its routing dumps (opensm-lfts.dump,
        opensm.fdbs, ...) there: log flags 0x43 switch on OSM_LOG_ROUTING.
        """
        self.opensm_dir.mkdir(parents=True, exist_ok=True)
        osm_env = {"OSM_CACHE_DIR": str(self.opensm_dir), "OSM_TMP_DIR": str(self.opensm_dir)}
        log = self.opensm_dir / "opensm.log"
        args = ["opensm", "--once", "-f", str(log)]
        if routing_engine is not None:
            if not re.fullmatch(r"[a-z_0-9,]+", routing_engine):
                raise ValueError(f"bad routing engine {routing_engine!r}")
            args += ["--routing_engine", routing_engine]
        if not 0 <= lmc <= 7:
            raise ValueError("LMC is 0..7")
        if lmc:
            args += ["-l", str(lmc)]
        if dump_dir is not None:
            Path(dump_dir).mkdir(parents=True, exist_ok=True)
            args += ["-D", "0x43", "--dump_files_dir", str(dump_dir)]
        result = self.run(*args, timeout=timeout, env=osm_env)
        if result.returncode != 0:
            raise IbSimError(
                f"opensm --once failed with status {result.returncode}: "
                f"{(result.stderr or result.stdout).strip()[-2000:]} (log: {log})"
            )
        return result

    # -- console

    def console(self, *commands: str, timeout: float = 30.0) -> str:
        """Send console commands and return ibsim's replies once it has handled them all.

        The console is asynchronous, so a comment ``#<name>-mark-N`` goes last and we wait
        until ibsim echoes it back into the log.
        """
        proc = self._require_running()
        if self._console_fd is None:
            raise IbSimError("simulator console closed")
        for command in commands:
            if "\n" in command or "\r" in command:
                raise ValueError(f"one console command per argument, got {command!r}")
        marker = f"#{self.name}-mark-{next(self._markers)}"
        # a trailing non-digit keeps mark-1 from matching a half-written mark-10
        found = re.compile(re.escape(marker).encode() + rb"\D")
        payload = "".join(f"{c}\n" for c in commands) + marker + "\n"
        start = self._log_offset
        data = payload.encode()
        while data:
            data = data[os.write(self._console_fd, data) :]
        deadline = time.monotonic() + timeout
        buf = b""
        with self.log_path.open("rb") as log:
            while True:
                log.seek(start + len(buf))
                buf += log.read()
                hit = found.search(buf)
                if hit:
                    self._log_offset = start + hit.start() + len(marker)
                    return _PROMPT.sub("", buf[: hit.start()].decode(errors="replace"))
                if proc.poll() is not None:
                    raise IbSimError(f"ibsim exited during {commands!r}:\n{self.log_tail()}")
                if time.monotonic() > deadline:
                    raise IbSimError(f"no console reply to {commands!r} within {timeout} s")
                time.sleep(0.01)

    def command(self, command: str) -> str:
        """One console command; IbSimError when ibsim refuses it."""
        reply = self.console(command)
        if _CONSOLE_ERROR.search(reply):
            raise IbSimError(f"ibsim refused {command!r}: {reply.strip()}")
        return reply

    def unlink(self, node: str, port: int | None = None) -> str:
        """Pull a cable: both ends go Down/Polling. ``port=None`` unlinks the whole node."""
        where = quote_node(node) + ("" if port is None else f"[{port}]")
        return self.command(f"Unlink {where}")

    def relink(self, node: str, port: int | None = None) -> str:
        """Put a cable back: both ends go Initialize/LinkUp (Active after ``opensm_once``)."""
        where = quote_node(node) + ("" if port is None else f"[{port}]")
        return self.command(f"ReLink {where}")
