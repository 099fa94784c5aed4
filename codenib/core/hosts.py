"""Which hosts are this machine: where plain http may carry a secret (a cluster token, an API key)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address (127.0.0.0/8, ::1). Names are not resolved, so DNS
    cannot make a remote host look local."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
