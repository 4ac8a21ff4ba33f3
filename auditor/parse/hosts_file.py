"""Parse an /etc/hosts-style file (hosts(5)) into HostAddress records.

The operator's map from the addresses NCCL and the kernel print (IPoIB, OOB, link-local
`fe80::...%ib0`) to host names. Each line is `address name [alias ...]`; `#` starts a comment
anywhere on a line; blank lines are skipped. The canonical `host` is the first name, the rest are
`aliases`, all kept as written (case included). One address may appear on several lines, and one
host on several addresses (IPoIB and OOB): each line is a record.

Addresses are IPv4 or IPv6. They are stored in one canonical form so that the same address
written two ways joins: IPv6 compressed lower-case (`fe80::966d:ae03:8b:df78`), IPv4-mapped
IPv6 as `::ffff:a.b.c.d`. An IPv6 zone id (`%ib0`) is checked and dropped: it names the local
interface the address was seen on, not the host.

Errors raise ParseError naming the line: a bad address, a line with an address but no name, a
name with characters no host name has.
"""

from __future__ import annotations

import ipaddress
import re

from auditor.errors import ParseError
from auditor.models import HostAddress
from auditor.parse._common import split_lines

_KIND = "hosts"
# Letters, digits, '-', '.', and '_' (seen in practice though not in RFC 952); a trailing
# dot (absolute FQDN) is allowed.
_NAME_RE = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?$", re.ASCII)
_ZONE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$", re.ASCII)


def canonical_address(text: str) -> str:
    """`FE80::966D:AE03:8B:DF78%ib0` -> `fe80::966d:ae03:8b:df78`; raises ValueError."""
    address, sep, zone = text.partition("%")
    if sep and not _ZONE_RE.match(zone):
        raise ValueError(f"bad zone id {zone!r}")
    ip = ipaddress.ip_address(address)
    if sep and ip.version == 4:
        raise ValueError("an IPv4 address has no zone id")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        # str() of a mapped address differs between Python versions; spell it out.
        return f"::ffff:{ip.ipv4_mapped}"
    return ip.compressed


def short_name(fqdn: str) -> str:
    """`gpu-node-01.cluster.local` -> `gpu-node-01` (what NCCL prints: gethostname() cut at the
    first dot). IP addresses and names that would become empty are returned unchanged."""
    name = fqdn.strip()
    try:
        canonical_address(name)
    except ValueError:
        head = name.split(".", 1)[0]
        return head or name
    return name


def parse_hosts_file(text: str) -> list[HostAddress]:
    records: list[HostAddress] = []
    for line_no, line in enumerate(split_lines(text), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        try:
            address = canonical_address(words[0])
        except ValueError as exc:
            raise ParseError(_KIND, line_no, line, f"not an IP address: {exc}") from None
        names = words[1:]
        if not names:
            raise ParseError(_KIND, line_no, line, "address without a host name")
        for name in names:
            if not _NAME_RE.match(name):
                raise ParseError(_KIND, line_no, line, f"not a host name: {name!r}")
        records.append(HostAddress(address, names[0], tuple(names[1:]), line_no))
    return records
