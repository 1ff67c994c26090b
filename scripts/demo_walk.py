"""Walk the demo loop against a running studio through its HTTP API (gradio_client) and print measured figures.

Usage: python scripts/demo_walk.py [URL] [--battles N] [--steps N]
Plays N battles (random MT-Bench prompts, random votes), launches a DPO (LoRA) job on the votes, waits for it,
then reports first-token latency and tokens/s per answer, seconds per DPO step and the time from the end of
training to the new contestant being registered, read from the studio database.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from gradio_client import Client
from sqlalchemy import select

from vibestudio.db.models import Contestant, JobMetric, Turn
from vibestudio.db.session import Database
from vibestudio.training.jobs.runner import job_view, wait


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url", nargs="?", default="http://127.0.0.1:7860")
    ap.add_argument("--battles", type=int, default=8)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    client = Client(args.url, verbose=False)
    rng = random.Random(0)
    for i in range(args.battles):
        client.predict(api_name="/arena_new")
        prompt = client.predict("mt-bench", api_name="/arena_random_prompt")
        prompt = prompt[0] if isinstance(prompt, (list, tuple)) else prompt
        client.predict(prompt, api_name="/arena_send")
        choice = rng.choice(["left", "right", "left", "right", "tie"])
        client.predict(api_name=f"/arena_vote_{choice}")
        print(f"battle {i + 1}/{args.battles} voted {choice}", flush=True)
    out = client.predict(
        "smollm2-plain",
        "new snapshot from current votes",
        args.steps,
        0.1,
        True,
        None,
        api_name="/train_launch_dpo",
    )
    job_id = int(out[1])
    db = Database()
    t0 = time.monotonic()
    view = wait(db, job_id, timeout=3600)
    print(f"job {job_id}: {view.status} after {time.monotonic() - t0:.0f} s; contestant {view.contestant_id}")
    with db.session() as s:
        turns = list(s.scalars(select(Turn)))
        steps = s.scalars(select(JobMetric).where(JobMetric.job_id == job_id, JobMetric.name == "loss")).all()
        new = s.get(Contestant, view.contestant_id) if view.contestant_id else None
    ttft = [x for t in turns for x in (t.latency_a, t.latency_b) if x is not None]
    tps = [x for t in turns for x in (t.tps_a, t.tps_b) if x]
    print(
        f"answers: {len(ttft)}; first-token latency median {statistics.median(ttft):.2f} s "
        f"(max {max(ttft):.2f}); tokens/s per stream median {statistics.median(tps):.1f}"
    )
    v = job_view(db, job_id)
    for name in ("train_runtime", "train_steps_per_second", "publish_seconds", "seconds_per_step"):
        if v.last(name) is not None:
            print(f"{name}: {v.last(name):.3f}")
    print(f"loss points: {len(steps)}; new contestant: {new.public_name if new else None}")


if __name__ == "__main__":
    main()
