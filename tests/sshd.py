"""A real OpenSSH server on 127.0.0.1 for tests: its own host key, one authorised client key,
and a known_hosts file that holds exactly that host key."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


def sshd_missing() -> str | None:
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        return "OpenSSH sshd is not installed (Debian: openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is not installed"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sshd:
    port: int
    user: str
    client_key: Path
    known_hosts: Path
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_sshd(folder: Path, forced_command: Path | None = None) -> Sshd:
    """`forced_command`: a program sshd runs instead of every command the client asks for
    (authorized_keys `command=`; the request is in $SSH_ORIGINAL_COMMAND), as a host whose
    root decides what its sshd answers."""
    folder.mkdir(parents=True, exist_ok=True)
    host_key, client_key = folder / "host_ed25519", folder / "client_ed25519"
    for key in (host_key, client_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                       check=True)
    authorized = folder / "authorized_keys"
    public = client_key.with_suffix(".pub").read_text()
    options = f'command="{forced_command}",no-pty ' if forced_command else ""
    authorized.write_text(options + public)
    authorized.chmod(0o600)
    port = free_port()
    known = folder / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_key.with_suffix('.pub').read_text()}")
    user = os.environ.get("USER") or subprocess.run(
        ["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    config = folder / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}",
        f"AuthorizedKeysFile {authorized}", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "PermitRootLogin yes",
        "StrictModes no", "UsePAM no", f"PidFile {folder / 'sshd.pid'}",
        "Subsystem sftp internal-sftp", "",
    ]))
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege-separation directory sshd insists on
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)],
                            stdout=subprocess.DEVNULL, stderr=(folder / "sshd.log").open("wb"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError((folder / "sshd.log").read_text()) from None
            time.sleep(0.05)
    return Sshd(port, user, client_key, known, proc)
