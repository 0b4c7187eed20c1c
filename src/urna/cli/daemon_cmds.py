"""``urna daemon status|stop``: the warm server of read verbs (``URNA_DAEMON=1``, ``cli.warm``)."""

from __future__ import annotations

from ._output import echo, emit_json
from .command import argument, command, option
from .options import Choice


@command("daemon")
@argument("action", type=Choice(["status", "stop"]))
@option("--json", "as_json", is_flag=True, help="The answer as JSON.")
def daemon_cmd(action: str, as_json: bool) -> None:
    """Show or stop the warm server that answers read verbs when URNA_DAEMON=1.

    The server is started by the first such call and serves callers with this interpreter,
    package and environment, from URNA_DAEMON_WORKERS processes (2) at once; it exits by
    itself after URNA_DAEMON_IDLE seconds (600) idle.

    Example: URNA_DAEMON=1 urna daemon status
    """
    from .warm import status, stop

    if action == "stop":
        stopped = stop()
        if as_json:
            emit_json({"stopped": stopped})
        else:
            echo("stopped" if stopped else "no warm server was running")
        return
    state = status()
    if as_json:
        emit_json(state)
    elif state is None:
        echo("no warm server is running")
    else:
        workers = state["workers"]
        assert isinstance(workers, list)
        echo(f"warm server pid {state['pid']} ({1 + len(workers)} processes): "
             f"{state['served']} requests served, exits after {state['idle_seconds']:g} s idle")


COMMANDS = [daemon_cmd]
