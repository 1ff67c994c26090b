"""One job across Ray nodes: the Ray job's entrypoint when no single node has all the processes a job asks for.

Ray places; this module only asks. It reserves one bundle per process (a placement group that spreads them
over the nodes), finds a free port on the node of rank 0, and runs the job process once in each bundle with
the environment ``torchrun`` would give it (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``...). Rank 0 records the
job, as under ``accelerate launch``; the other ranks train beside it (``job_process.run_replica``).

Each rank's process dies with the Ray task that started it (the kernel's parent-death signal). When one rank
fails or its node is lost, the others are stopped and this process exits non-zero: the Ray job fails, and the
studio fails the row with why. A cancel stops this process through Ray; its tasks and their ranks go with it.

Run as ``python -m vibestudio.training.jobs.ray_spread --processes N --log PATH [--gpus G] [--resources JSON]
-- <argv>``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
from typing import Any


def _die_with_parent() -> None:
    """In the child, before it runs: SIGKILL it when the Ray worker that started it dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def free_port() -> tuple[str, int]:
    """This node's address as Ray knows it, and a port free on it now."""
    import ray

    with socket.socket() as sock:
        sock.bind(("", 0))
        return ray.util.get_node_ip_address(), int(sock.getsockname()[1])


def run_rank(argv: list[str], env: dict[str, str], log_path: str) -> int:
    """Run one rank's job process here until it ends, its output appended to the job's log; its exit code (a
    failure raises, failing the task)."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            argv,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: a cancel's SIGTERM to it leaves the Ray worker alone
            preexec_fn=_die_with_parent,
        )
    try:
        code = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    if code != 0:
        raise RuntimeError(f"rank {env['RANK']} exited with code {code}")
    return code


def main(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m vibestudio.training.jobs.ray_spread")
    ap.add_argument("--processes", type=int, required=True)
    ap.add_argument("--gpus", type=float, default=0.0)
    ap.add_argument("--resources", default="{}")
    ap.add_argument("--log", required=True)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    ns = ap.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv

    import ray
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    ray.init(log_to_driver=False)  # each rank writes to the job's log itself
    bundle: dict[str, float] = {"CPU": 1.0, **json.loads(ns.resources)}
    if ns.gpus:
        bundle["GPU"] = ns.gpus
    group = placement_group([dict(bundle) for _ in range(ns.processes)], strategy="SPREAD")
    ray.get(group.ready())

    def place(i: int) -> Any:
        return PlacementGroupSchedulingStrategy(placement_group=group, placement_group_bundle_index=i)

    address, port = ray.get(ray.remote(free_port).options(num_cpus=0, scheduling_strategy=place(0)).remote())
    print(f"[ray spread] {ns.processes} processes over the cluster; rank 0 at {address}:{port}", flush=True)
    nodes = ray.util.placement_group_table(group).get("bundles_to_node_id", {})
    for rank in range(ns.processes):
        print(f"[ray spread] rank {rank} on node {nodes.get(rank, '?')}", flush=True)
    task = ray.remote(num_cpus=0, max_retries=0)(run_rank)
    pending = []
    for rank in range(ns.processes):
        env = {
            "RANK": str(rank),
            "WORLD_SIZE": str(ns.processes),
            "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1",
            "MASTER_ADDR": address,
            "MASTER_PORT": str(port),
        }
        pending.append(task.options(scheduling_strategy=place(rank)).remote(argv, env, ns.log))
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            ray.get(done)
    except Exception as exc:
        print(f"[ray spread] a rank failed, stopping the others: {exc}", flush=True)
        for ref in pending:
            ray.cancel(ref, force=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
