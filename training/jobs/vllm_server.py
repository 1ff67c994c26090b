"""GRPO generating on a vLLM server: TRL's server mode, its arguments and the pre-launch check.

TRL's ``vllm_mode="server"`` sends each batch's prompts to a server that ``trl vllm-serve`` started.
After every optimizer step it pushes the policy's weights to that server over NCCL.
So the trainer's side needs a CUDA GPU; a CPU cannot run this mode (docs/training.md).
Colocated vLLM stays the default: vLLM inside the training process, on its GPU.

Before launch, the server must answer TRL's health check, ``GET /health`` with 200.
The URL is user data: the engine URL policy (``arena.engines.egress``) applies to it.
A host that is not public must be allowed in ``VIBESTUDIO_ENGINE_ALLOWED_HOSTS``.
"""

from __future__ import annotations

from typing import Any

from vibestudio.training.jobs.config import GRPOJobConfig, JobConfig

HEALTH_TIMEOUT = 3.0


def server_url(cfg: GRPOJobConfig) -> str:
    host = cfg.vllm_server_host
    return (
        f"http://[{host}]:{cfg.vllm_server_port}" if ":" in host else f"http://{host}:{cfg.vllm_server_port}"
    )


def uses_server(cfg: JobConfig) -> bool:
    return isinstance(cfg, GRPOJobConfig) and cfg.use_vllm and cfg.vllm_mode == "server"


def grpo_args(cfg: GRPOJobConfig) -> dict[str, Any]:
    """GRPOConfig's vLLM arguments for ``cfg``: colocated, or the server's host and port."""
    if not uses_server(cfg):
        return {"use_vllm": cfg.use_vllm, "vllm_mode": "colocate"}
    return {
        "use_vllm": True,
        "vllm_mode": "server",
        "vllm_server_host": cfg.vllm_server_host,
        "vllm_server_port": cfg.vllm_server_port,
    }


def health(url: str) -> str | None:
    """None when the server at ``url`` answers TRL's health check; else what went wrong, in words."""
    import httpx

    from vibestudio.arena.engines.egress import UrlRefused, check_url, client

    try:
        check_url(url, "vllm_server_host")
    except UrlRefused as exc:
        return str(exc)
    try:
        with client(HEALTH_TIMEOUT) as http:
            reply = http.get(f"{url}/health")
    except httpx.HTTPError as exc:
        return f"no vLLM server answers at {url}/health ({exc or type(exc).__name__})"
    if reply.status_code != 200:
        return f"the server at {url}/health answered {reply.status_code}, not 200"
    return None


def check_server(cfg: JobConfig) -> None:
    """ValueError when server mode is asked for and no server answers TRL's health check (or the URL policy
    refuses its address)."""
    if not isinstance(cfg, GRPOJobConfig) or not uses_server(cfg):
        return
    problem = health(server_url(cfg))
    if problem is not None:
        raise ValueError(
            f"{problem}: start one with `trl vllm-serve --model <base>` there, or set vllm_mode: colocate"
        )


def check_gpu(cfg: JobConfig) -> None:
    """ValueError when server mode is asked for where no CUDA GPU is visible (TRL syncs weights over NCCL)."""
    if not isinstance(cfg, GRPOJobConfig) or not uses_server(cfg):
        return
    try:
        import torch

        cuda = bool(torch.cuda.is_available()) and not cfg.use_cpu
    except Exception:
        cuda = False
    if not cuda:
        raise ValueError(
            "TRL's server mode pushes the policy's weights to the server over NCCL after every step, which needs "
            "a CUDA GPU where the job runs; none is visible here (generation alone would work, training cannot)"
        )
