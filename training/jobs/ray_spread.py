"""One job across Ray nodes: the Ray job's entrypoint when no single node has all the processes a job asks for.

Ray places; this module only asks. It reserves one bundle per process (a placement group that spreads them
over the nodes), finds a free port on the node of rank 0, and runs the job process once in each bundle with
the environment ``torchrun`` would give it (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``...). Rank 0 records the
job, as under ``accelerate launch``; the other ranks train beside it (``job_process.run_replica``).

Each rank's process dies with the Ray task that started it (the kernel's parent-death signal). When one rank
fails, the others get ``GRACE_S`` seconds to end too: a rank's own failure may come from a peer's lost node,
which Ray names a moment later. Once a node is lost, or the time is up, the rest are stopped and this process
exits non-zero: the Ray job fails. Its verdict says which node was lost and how each rank failed. It goes to
the log and, as JSON, to the ``--verdict`` file. The studio adds it to the row's reason, even when rank 0 failed
the row first on the broken link (``training.jobs.ray_jobs``). A cancel stops this process through Ray; its
tasks and their ranks go with it.

Run as ``python -m vibestudio.training.jobs.ray_spread --processes N --log PATH [--verdict PATH] [--gpus G]
[--resources JSON] -- <argv>``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

VERDICT = "[ray spread] a rank failed, stopping the others: "  # the log line with the verdict
GRACE_S = 30.0  # after one rank fails, how long the others may take to end (and Ray to name a lost node)


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
        raise RuntimeError(f"its job process exited with code {code}")
    return code


def main(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m vibestudio.training.jobs.ray_spread")
    ap.add_argument("--processes", type=int, required=True)
    ap.add_argument("--gpus", type=float, default=0.0)
    ap.add_argument("--resources", default="{}")
    ap.add_argument("--log", required=True)
    ap.add_argument("--verdict", default=None)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    ns = ap.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv

    import ray
    from ray.exceptions import NodeDiedError
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
    rank_of = {ref: rank for rank, ref in enumerate(pending)}
    errors: dict[int, str] = {}
    dead: set[int] = set()  # ranks whose task Ray failed with their node
    deadline = None
    while pending and not dead:  # a lost node says why: nothing more to wait for
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        done, pending = ray.wait(pending, num_returns=1, timeout=left)
        for ref in done:
            try:
                ray.get(ref)
            except Exception as exc:
                errors[rank_of[ref]] = said(exc)
                if isinstance(exc, NodeDiedError):
                    dead.add(rank_of[ref])
        if errors and not dead and deadline is None:
            first = min(errors)
            print(
                f"[ray spread] rank {first} failed ({errors[first]}); the others get {GRACE_S:g} s to end",
                flush=True,
            )
            deadline = time.monotonic() + GRACE_S
    if not errors:
        return 0
    try:
        alive = {str(n.get("NodeID")): bool(n.get("Alive")) for n in ray.nodes()}
    except Exception:  # no word from Ray on its nodes: only the failed tasks say which were lost
        alive = {str(node): True for node in nodes.values()}
    alive.update({str(nodes.get(rank)): False for rank in dead})  # Ray may not list them as dead yet
    text, lost = verdict(
        errors, {int(k): str(v) for k, v in nodes.items()}, alive, [rank_of[r] for r in pending]
    )
    if ns.verdict:  # before this process ends: the studio reads it once Ray calls the job failed
        try:
            write_verdict(ns.verdict, text, lost)
        except OSError as exc:
            print(f"[ray spread] could not write {ns.verdict}: {exc}", flush=True)
    print(VERDICT + text, flush=True)
    for ref in pending:
        ray.cancel(ref, force=True)
    return 1


def said(exc: BaseException, limit: int = 300) -> str:
    """What a rank's failure says, on one line: the rank's own error when its task raised one, else Ray's."""
    cause = getattr(exc, "cause", None)
    return " ".join(str(cause if isinstance(cause, BaseException) else exc).split())[:limit]


def verdict(
    errors: dict[int, str], nodes: dict[int, str], alive: dict[str, bool], unended: list[int]
) -> tuple[str, list[list[Any]]]:
    """Why the job failed, and the lost nodes as [rank, node id] pairs. A rank whose node is gone is named by its
    node; the others by their error, or as not ended (they are stopped next)."""
    lost = [[rank, node] for rank, node in sorted(nodes.items()) if not alive.get(node, False)]
    gone = {rank for rank, _ in lost}
    parts = [f"the node {node} under rank {rank} was lost" for rank, node in lost]
    parts += [f"rank {rank} failed: {errors[rank]}" for rank in sorted(errors) if rank not in gone]
    parts += [f"rank {rank} was stopped" for rank in sorted(unended) if rank not in gone]
    return "; ".join(parts), lost


def write_verdict(path: str, text: str, lost: list[list[Any]]) -> None:
    """The verdict as the studio reads it (``ray_jobs.spread_verdict``): its text and the lost nodes."""
    Path(path).write_text(json.dumps({"verdict": text, "lost": lost}))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
