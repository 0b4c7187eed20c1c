"""The one rule for binding a server verb (serve, mcp --http) to a network interface."""

from __future__ import annotations

from urna.errors import UsageError


def check_bind(host: str, expose: bool, token: str | None) -> None:
    """Refuse a non-loopback host without --expose, and an exposed one without a token."""
    from urna.serve.app import is_loopback

    if is_loopback(host):
        return
    if not expose:
        raise UsageError(
            f"--host {host} is not loopback; pass --expose to serve on another interface")
    if not token:
        raise UsageError(f"--host {host} is exposed: give a bearer token with "
                               "--token or URNA_TOKEN")
