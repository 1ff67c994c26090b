"""Jobs on a Ray cluster (``VIBESTUDIO_JOBS=ray``): Ray places the job process; the database row stays the
truth.

The studio schedules nothing here. A queued row is handed to Ray's Jobs API (``JobSubmissionClient``). It
goes as the same job process every other path runs (``runner.job_command``). It asks for the CPUs, GPUs
and custom resources it needs. Ray decides where and when it runs. The row records the submission as its
host: ``ray:<submission id>``, then ``... on node <id>`` once Ray names the node.

The job process on the node does what it does anywhere. It marks the row running, beats, writes metrics,
checkpoints and its log. It stops when the row stops being running. Status, metrics, logs and cancel stay
in the database and the job folder. So the nodes must reach the database and see the data home at its
path.

This module talks to Ray and returns plain data. It changes a row only to claim it for a submission or to
name its node. ``runner`` finishes rows. It fails those whose Ray job ended without a result (``ended``).
A row the job's own process failed first (rank 0 on the broken link to a lost rank's node) gets Ray's reason
put before its error, once (``Amend``). The reason names the lost node (the driver's verdict,
``training.jobs.ray_spread``). It stops the Ray job of a cancelled row (``stop``). Ray is imported only when
used: it is an extra.
"""

from __future__ import annotations

import json
import secrets
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from vibestudio.common.settings import get_settings, variable_name
from vibestudio.db.models import Job, utcnow
from vibestudio.db.session import Database, data_home
from vibestudio.training.jobs.config import load_config
from vibestudio.training.jobs.errors import JobError

PREFIX = "ray:"
SUBMITTING = "ray-submitting:"  # claimed, the submission on its way (a watcher must not call it lost yet)
ON_NODE = " on node "
TIMEOUT_S = 10  # seconds an answer from the cluster may take before it counts as unreachable
LATE_S = 600  # how long after a row failed Ray's reason may still join its error (``Amend``)
PLAIN_EXIT = "Job entrypoint command failed with exit code"  # Ray saw only the job's own exit
FIRST = "\n--- the job process recorded first ---\n"  # between Ray's reason and the row's own error
_CLIENTS: dict[str, Any] = {}  # one Jobs API client per address (each new one checks the version twice)


@dataclass(frozen=True)
class Needs:
    """What one job asks Ray for; all of it on the node that runs the job process."""

    cpus: float
    gpus: float
    resources: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        parts = [f"{self.cpus:g} CPU"]
        if self.gpus:
            parts.append(f"{self.gpus:g} GPU")
        parts += [f"{name} {amount:g}" for name, amount in sorted(self.resources.items())]
        return ", ".join(parts)

    def per_process(self) -> Needs:
        """One process's share when the job is spread over nodes (the operator's resources with each)."""
        return Needs(1.0, self.gpus / self.cpus if self.cpus else 0.0, self.resources)


@dataclass(frozen=True)
class Node:
    """A node of the cluster and its total resources (what it has, busy or not)."""

    node_id: str
    alive: bool
    total: dict[str, float]

    def fits(self, needs: Needs) -> bool:
        wanted = {"CPU": needs.cpus, "GPU": needs.gpus, **needs.resources}
        return self.alive and all(self.total.get(k, 0.0) >= v for k, v in wanted.items() if v > 0)

    def holds(self, needs: Needs) -> int:
        """How many processes of ``needs`` (each one CPU, its share of GPUs, the resources) this node holds."""
        per = needs.per_process()
        wanted = {"CPU": per.cpus, "GPU": per.gpus, **per.resources}
        if not self.alive:
            return 0
        return min(int(self.total.get(k, 0.0) // v) for k, v in wanted.items() if v > 0)

    def describe(self) -> str:
        shown = {k: v for k, v in self.total.items() if k in ("CPU", "GPU") or not _internal(k)}
        have = ", ".join(f"{k} {v:g}" for k, v in sorted(shown.items())) or "nothing"
        return f"{self.node_id[:12]} ({have})"


@dataclass(frozen=True)
class Ended:
    """A row whose Ray job ended without the row ending: the status and reason to record, and the status the
    row had when it was looked at (the finish is conditional on it)."""

    job_id: int
    status: str
    reason: str
    was: str
    log_path: str | None = None


@dataclass(frozen=True)
class Amend:
    """A row its own job process failed before Ray ended its job (rank 0 on a lost peer's broken link): the
    error to record, Ray's reason first, and the error the row had when looked at (the change is conditional on
    it, so it is made once)."""

    job_id: int
    error: str
    was: str


def _internal(resource: str) -> bool:
    return (
        resource.startswith("node:") or resource in ("memory", "object_store_memory") or "_group_" in resource
    )


def parse_resources(text: str | None) -> dict[str, float]:
    """``trainer=1,big_disk=0.5`` -> {"trainer": 1.0, "big_disk": 0.5}; a bad entry raises JobError naming it."""
    out: dict[str, float] = {}
    for entry in (text or "").split(","):
        if not entry.strip():
            continue
        name, sep, amount = entry.partition("=")
        try:
            value = float(amount)
        except ValueError:
            value = -1.0
        if not sep or not name.strip() or value <= 0 or name.strip() in ("CPU", "GPU"):
            raise JobError(
                f"{variable_name('ray_resources')}: {entry.strip()!r} is not name=amount with a positive amount "
                "(CPUs and GPUs come from the job's config)"
            )
        out[name.strip()] = value
    return out


def needs_of(cfg: Any, cluster_has_gpus: bool) -> Needs:
    """What a job config asks for: one CPU per process, and one GPU per process unless it runs on the CPU
    (``use_cpu: true``, or ``use_cpu`` unset on a cluster without GPUs); a checkpoint report needs one CPU.
    The operator's ``VIBESTUDIO_RAY_RESOURCES`` come with every job."""
    resources = parse_resources(get_settings().ray_resources)
    if getattr(cfg, "kind", None) == "report" or cfg is None:
        return Needs(1.0, 0.0, resources)
    processes = float(max(1, int(getattr(cfg, "num_processes", 1) or 1)))
    use_cpu = getattr(cfg, "use_cpu", None)
    on_gpu = use_cpu is False or (use_cpu is None and cluster_has_gpus)
    return Needs(processes, processes if on_gpu else 0.0, resources)


# ---- the cluster ----------------------------------------------------------------------------------------------
def address() -> str:
    """The Ray dashboard address the studio submits to (JobError when it is not set)."""
    addr = (get_settings().ray_address or "").strip().rstrip("/")
    if not addr:
        raise JobError(
            f"{variable_name('jobs')}=ray needs {variable_name('ray_address')}: the Ray cluster's dashboard "
            "address, as `ray job submit --address` takes it (e.g. http://ray-head:8265)"
        )
    return addr if "://" in addr else f"http://{addr}"


def _unreachable(addr: str, exc: BaseException) -> JobError:
    return JobError(
        f"the Ray cluster at {addr} ({variable_name('ray_address')}) did not answer: "
        f"{type(exc).__name__}: {str(exc)[:300]}; start it or correct the address"
    )


def client() -> Any:
    """A Jobs API client for the configured cluster; JobError with the reason when Ray is not installed or the
    cluster does not answer within ``TIMEOUT_S`` seconds."""
    addr = address()
    if addr in _CLIENTS:
        return _CLIENTS[addr]
    try:
        import requests
        from ray.job_submission import JobSubmissionClient
    except ImportError as exc:
        raise JobError(
            f"{variable_name('jobs')}=ray needs Ray: install the studio's ray extra (pip install 'vibestudio[ray]')"
        ) from exc
    try:  # the client itself waits as long as TCP does; ask once with a time limit first
        requests.get(f"{addr}/api/version", timeout=TIMEOUT_S).raise_for_status()
        made = JobSubmissionClient(addr)
    except Exception as exc:
        raise _unreachable(addr, exc) from exc
    _CLIENTS[addr] = made
    return made


def nodes() -> list[Node]:
    """The cluster's nodes and their total resources (JobError when the cluster does not answer)."""
    client()  # the same answer for an address that is not a Ray cluster as for a submit
    try:
        from ray.util.state import list_nodes

        found = list_nodes(address=address(), timeout=TIMEOUT_S, limit=10_000)
    except Exception as exc:
        raise _unreachable(address(), exc) from exc
    return [
        Node(
            str(n.node_id),
            str(n.state) == "ALIVE",
            {k: float(v) for k, v in (n.resources_total or {}).items()},
        )
        for n in found
    ]


def placement(found: list[Node], needs: Needs, cfg: Any) -> str | None:
    """``node`` when one node has everything the job asks for; ``spread`` when a job of several processes
    (``launcher: accelerate``) fits only across nodes, one process per share (``training.jobs.ray_spread``);
    None when it fits nowhere."""
    if any(n.fits(needs) for n in found):
        return "node"
    several = needs.cpus > 1 and getattr(cfg, "launcher", None) == "accelerate"
    if several and sum(n.holds(needs) for n in found) >= needs.cpus:
        return "spread"
    return None


def _nowhere(found: list[Node], needs: Needs) -> JobError:
    alive = [n.describe() for n in found if n.alive] or ["none alive"]
    return JobError(
        f"the Ray cluster at {address()} has no node with {needs.describe()} for this job, nor room for its "
        f"processes across nodes (nodes: {'; '.join(alive)}); ask for fewer (use_cpu, num_processes) or add a "
        "node that has them"
    )


def check_cluster(cfg: Any) -> Needs:
    """Refuse (JobError) a job that this cluster cannot run: the cluster does not answer, or no live node has
    what the job needs (its GPUs and CPUs and the operator's resources), nor do the nodes together for a job of
    several processes; the refusal names what each node has."""
    found = nodes()
    needs = needs_of(cfg, any(n.alive and n.total.get("GPU", 0) > 0 for n in found))
    if placement(found, needs, cfg) is None:
        raise _nowhere(found, needs)
    return needs


def spread_argv(
    python: str, needs: Needs, config_path: str, job_id: int, log_path: str, verdict: str
) -> list[str]:
    """The driver that runs one job's processes across nodes, each the plain job process; on a failure it writes
    its verdict to ``verdict`` (``verdict_path``)."""
    per = needs.per_process()
    return [
        python,
        "-m",
        "vibestudio.training.jobs.ray_spread",
        "--processes",
        str(int(needs.cpus)),
        "--gpus",
        f"{per.gpus:g}",
        "--resources",
        json.dumps(per.resources),
        "--log",
        log_path,
        "--verdict",
        verdict,
        "--",
        python,
        "-m",
        "vibestudio.training.jobs.job_process",
        config_path,
        "--job",
        str(job_id),
    ]


# ---- submitting -----------------------------------------------------------------------------------------------
def submission_of(host: str | None) -> str | None:
    """The Ray submission id a row's host records (``ray:<id>``, ``ray:<id> on node <node>``, or
    ``ray-submitting:<id>`` while it is submitted), else None."""
    for prefix in (PREFIX, SUBMITTING):
        if host and host.startswith(prefix):
            return host[len(prefix) :].split(ON_NODE, 1)[0] or None
    return None


def entrypoint(argv: list[str], log_path: str) -> str:
    """The command Ray runs (its Jobs API takes a shell line): in the job's folder, the job's argv with every
    part quoted, replacing the shell, its output appended to the job's ``train.log`` as on any other host."""
    folder = str(Path(argv_config(argv)).parent)
    return f"cd {shlex.quote(folder)} && exec {shlex.join(argv)} >> {shlex.quote(log_path)} 2>&1"


def verdict_path(log_path: str, sid: str) -> str:
    """Where the driver of a job across nodes writes its verdict: beside the job's log, one file per submission."""
    return str(Path(log_path).parent / f"{sid}.verdict.json")


def spread_verdict(log_path: str | None, sid: str) -> tuple[str, bool]:
    """The driver's verdict for a submission (which rank failed, which node was lost) and whether it names a
    lost node; ("", False) when it wrote none (a job on one node, or the driver itself was lost)."""
    if not log_path:
        return "", False
    try:
        found = json.loads(Path(verdict_path(log_path, sid)).read_text())
        return str(found["verdict"]), bool(found["lost"])
    except (OSError, ValueError, KeyError, TypeError):
        return "", False


def argv_config(argv: list[str]) -> str:
    """The config path in a job argv (the argument before ``--job``)."""
    return argv[argv.index("--job") - 1]


def environment(db: Database) -> dict[str, str]:
    """What the job process needs on the node: the database, the data home, the heartbeat period. It starts
    nothing itself when it ends (Ray runs every queued job; ``workers`` leaves them to the studio)."""
    settings = get_settings()
    return {
        variable_name("database_url"): db.url,
        variable_name("home"): str(data_home()),
        variable_name("heartbeat_s"): str(settings.heartbeat_s),
        variable_name("jobs"): "workers",
        "PYTHONUNBUFFERED": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "MASTER_ADDR": "127.0.0.1",  # one node: several processes meet on loopback, as ``runner.spawn`` does
    }


def _claim(db: Database, job_id: int, host: str) -> bool:
    with db.session() as s:
        won = s.execute(
            update(Job).where(Job.id == job_id, Job.status == "queued", Job.host.is_(None)).values(host=host)
        )
        return int(won.rowcount) == 1  # type: ignore[attr-defined]


def submit_queued(db: Database, command: Callable[[str, int], list[str]]) -> tuple[list[int], list[Ended]]:
    """Hand every queued job not yet submitted to Ray; ``command`` is the argv that runs a job
    (``runner.job_command``). Returns the ids submitted and the jobs that could not be (to fail, with why):
    the cluster does not answer, has no node for the job, or refused the submission."""
    with db.session() as s:
        rows = s.execute(
            select(Job.id, Job.config_path, Job.log_path)
            .where(Job.status == "queued", Job.host.is_(None))
            .order_by(Job.id)
        ).all()
    if not rows:
        return [], []
    submitted: list[int] = []
    refused: list[Ended] = []
    try:
        found = nodes()
    except JobError as exc:
        return [], [Ended(job_id, "failed", str(exc), "queued") for job_id, _, _ in rows]
    has_gpus = any(n.alive and n.total.get("GPU", 0) > 0 for n in found)
    for job_id, config_path, log_path in rows:
        sid = f"vibestudio-job-{job_id}-{secrets.token_hex(4)}"
        if not config_path or not log_path or not _claim(db, job_id, SUBMITTING + sid):
            continue
        try:
            cfg = _config(config_path)
            needs = needs_of(cfg, has_gpus)
            where = placement(found, needs, cfg)
            if where is None:
                raise _nowhere(found, needs)
            python = get_settings().ray_python or sys.executable
            if where == "spread":  # the driver asks for each process's share itself
                argv = spread_argv(python, needs, config_path, job_id, log_path, verdict_path(log_path, sid))
                asks: dict[str, Any] = {"entrypoint_num_cpus": 0}
            else:
                argv = [python, *command(config_path, job_id)[1:]]
                asks = {
                    "entrypoint_num_cpus": needs.cpus,
                    "entrypoint_num_gpus": needs.gpus,
                    "entrypoint_resources": needs.resources or None,
                }
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
            client().submit_job(
                entrypoint=entrypoint(argv, log_path),
                submission_id=sid,
                runtime_env={"env_vars": environment(db)},
                metadata={"vibestudio_job": str(job_id)},
                **asks,
            )
            _name_node(db, job_id, SUBMITTING + sid, PREFIX + sid)
            submitted.append(job_id)
        except Exception as exc:
            reason = (
                str(exc) if isinstance(exc, JobError) else f"Ray refused the job: {type(exc).__name__}: {exc}"
            )
            refused.append(Ended(job_id, "failed", reason, "queued"))
    return submitted, refused


def _config(config_path: str) -> Any:
    from vibestudio.common.files import read_yaml

    data, _ = read_yaml(Path(config_path))
    if isinstance(data, dict) and data.get("kind") == "report":
        return None
    return load_config(config_path)


# ---- watching and stopping ------------------------------------------------------------------------------------
def ended(db: Database) -> list[Ended | Amend]:
    """Rows still queued or running whose Ray job ended (the node was lost, the process failed before it could
    record why, it was stopped through Ray), each with the reason to record. Names the node of a job Ray
    started on the row. A cluster that does not answer ends nothing: the heartbeats judge a running job.

    Also rows that failed in the last ``LATE_S`` seconds before Ray called their job failed, when Ray's reason
    says more than the job's own exit (a lost node): that reason, to put before the row's error (``Amend``)."""
    if get_settings().jobs != "ray":
        return []
    with db.session() as s:
        rows = s.execute(
            select(Job.id, Job.status, Job.host, Job.log_path).where(
                Job.status.in_(("queued", "running")),
                Job.host.like(PREFIX + "%") | Job.host.like(SUBMITTING + "%"),
            )
        ).all()
        failed = s.execute(
            select(Job.id, Job.host, Job.error, Job.log_path).where(
                Job.status == "failed",
                Job.host.like(PREFIX + "%"),
                Job.ended_at >= utcnow() - timedelta(seconds=LATE_S),
            )
        ).all()
    late = [r for r in failed if f"the Ray job {submission_of(r.host)} " not in (r.error or "")]
    if not rows and not late:
        return []
    try:
        known = {j.submission_id: j for j in client().list_jobs() if j.submission_id}
    except Exception:
        _CLIENTS.clear()  # a new client next time (the cluster may have restarted at the same address)
        return []
    out: list[Ended | Amend] = []
    for job_id, status, host, log_path in rows:
        host = str(host)
        sid = submission_of(host)
        info = known.get(sid)
        if host.startswith(SUBMITTING):  # its submitter may still be on its way (or died after submitting)
            if info is not None:
                _name_node(db, job_id, host, PREFIX + str(sid))
            continue
        if info is None:
            out.append(
                Ended(
                    job_id,
                    "failed",
                    f"the Ray cluster at {address()} has no job {sid} (was it restarted?); resume the job to "
                    "submit it again",
                    status,
                    log_path,
                )
            )
            continue
        node = info.driver_node_id
        if node and ON_NODE not in host:
            _name_node(db, job_id, host, f"{PREFIX}{sid}{ON_NODE}{node}")
        ray_status = str(getattr(info.status, "value", info.status))
        if ray_status in ("PENDING", "RUNNING"):
            continue
        where = f" on node {node}" if node else ""
        message = ray_message(info.message)
        if ray_status == "STOPPED":
            reason = f"the Ray job {sid} was stopped through Ray{where} ({message or 'no message'})"
            out.append(Ended(job_id, "cancelled", reason, status, log_path))
        elif ray_status == "FAILED":
            said, _ = spread_verdict(log_path, str(sid))
            out.append(Ended(job_id, "failed", _failed(str(sid), info, said), status, log_path))
        else:  # SUCCEEDED, yet the row did not end: the process left without recording its result
            reason = f"the Ray job {sid} ended{where} (exit code {info.driver_exit_code}) without recording a result"
            out.append(Ended(job_id, "failed", reason, status, log_path))
    for job_id, host, error, log_path in late:
        sid = str(submission_of(host))
        info = known.get(sid)
        if info is None or str(getattr(info.status, "value", info.status)) != "FAILED":
            continue  # Ray has not called it yet (the driver waits for the other ranks), or never will
        said, lost = spread_verdict(log_path, sid)  # the driver's verdict file, read once
        if lost or not ray_message(info.message).startswith(PLAIN_EXIT):
            out.append(Amend(job_id, _failed(sid, info, said) + FIRST + (error or ""), error or ""))
    return out


def _failed(sid: str, info: Any, said: str) -> str:
    """Why a Ray job failed: Ray's message, and ``said``, the driver's verdict for a job across nodes."""
    where = f" on node {info.driver_node_id}" if info.driver_node_id else ""
    detail = f" ({said})" if said else ""
    message = ray_message(info.message) or "no message"
    return f"the Ray job {sid} failed{where}: {message}{detail}; resume the job to run it again"


def ray_message(text: str | None, limit: int = 600) -> str:
    """Ray's status message in one line: its headline lines and those about nodes, without the actor's
    tab-indented details (class, actor id, pid, namespace), and without Ray's copy of the job's logs (the
    job's own log tail comes with the reason)."""
    text = str(text or "").split(", last available logs", 1)[0]
    kept = []
    for raw in str(text or "").splitlines():
        if raw.strip() and (not raw.startswith("\t") or "node" in raw):
            kept.append(raw.strip())
    return " ".join(" ".join(kept).split())[:limit]


def _name_node(db: Database, job_id: int, old: str, new: str) -> None:
    with db.session() as s:
        s.execute(update(Job).where(Job.id == job_id, Job.host == old).values(host=new[:255]))


def stop(host: str | None) -> str | None:
    """Stop the Ray job a row's host names (a cancel); None when it was asked to stop, else why it could not be
    (the cluster did not answer): the job process still stops at its next heartbeat."""
    sid = submission_of(host)
    if sid is None:
        return None
    try:
        client().stop_job(sid)
        return None
    except Exception as exc:
        return f"could not reach Ray to stop {sid}: {exc}"
