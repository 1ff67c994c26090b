"""``accelerate launch`` with its rendezvous on loopback: how a job with ``launcher: accelerate`` starts.

A job runs on one host; ``training.jobs.launcher`` allows one machine only. But torch's elastic agent runs
in its own process under ``accelerate launch``. It serves its rendezvous and its workers' store
(``TCPStore``) on every interface of the host. Anyone who reached the port could join the job's process
group or feed it values.

This module binds every store the launcher serves to 127.0.0.1. It binds a socket here and hands it to the
store as its listening descriptor. Then it runs ``accelerate launch`` with the arguments it was given. The
job's workers connect to the agent's store (``MASTER_ADDR`` is a loopback name). So nothing of the job
listens elsewhere.

Run as ``python -m vibestudio.training.jobs.loopback_launch <accelerate launch arguments>``. Only the job
command uses it.
"""

from __future__ import annotations

import runpy
import socket
import sys
from typing import Any

LOOPBACK = "127.0.0.1"
_PARAMS = (
    "host_name",
    "port",
    "world_size",
    "is_master",
    "timeout",
    "wait_for_workers",
    "multi_tenant",
    "master_listen_fd",
    "use_libuv",
)


def bind_stores_to_loopback() -> None:
    """Make every ``TCPStore`` this process serves listen on 127.0.0.1 only (patched where torch names it)."""
    import torch.distributed as dist
    import torch.distributed.run  # noqa: F401  (imports the modules that name TCPStore, so they are patched too)

    original = dist.TCPStore
    if getattr(original, "_vibestudio_loopback", False):
        return

    def store(*args: Any, **kwargs: Any) -> Any:
        bound = dict(zip(_PARAMS, args, strict=False))
        bound.update(kwargs)
        if bound.get("is_master") and bound.get("master_listen_fd") is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((LOOPBACK, int(bound.get("port") or 0)))
            sock.listen(128)
            bound["port"] = sock.getsockname()[1]
            bound["host_name"] = LOOPBACK
            bound["master_listen_fd"] = sock.detach()
        return original(**bound)

    store._vibestudio_loopback = True  # type: ignore[attr-defined]
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "") or ""
        if name.startswith("torch.distributed") and getattr(module, "TCPStore", None) is original:
            setattr(module, "TCPStore", store)  # noqa: B010  (a module attribute mypy cannot see)


def main(argv: list[str]) -> None:
    bind_stores_to_loopback()
    sys.argv = ["accelerate-launch", *argv]
    runpy.run_module("accelerate.commands.launch", run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
