"""Real Chromium: a child of a GGUF parent shows on the Models tab which form plays and how much of its training
each measured form kept (share with interval, sample, KLs, size), from the same record as ``models show --json``."""

from __future__ import annotations

import pytest

from tests.helpers.browser import STEP_MS, open_model
from tests.helpers.servers import start_server
from vibestudio.arena.default_model import default_gguf_path
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Checkpoint, Job
from vibestudio.training.publishing import fidelity
from vibestudio.training.publishing.gguf_export import convert

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(600)
def test_the_models_tab_says_which_form_plays_and_what_it_kept(
    tmp_path, browser, tiny_model_dir, monkeypatch
):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from vibestudio.studio.context import build_context
    from vibestudio.training.report.model_page import model_page

    home = tmp_path / "studio-home"
    home.mkdir()
    monkeypatch.setenv("VIBESTUDIO_HOME", str(home))
    gguf = convert(
        str(tiny_model_dir), None, default_gguf_path(), tmp_path / "parent.q4_1.gguf", ftype=3
    ).path
    torch.manual_seed(1)
    lora = tmp_path / "child"
    get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False),
    ).save_pretrained(lora)
    policy = fidelity.Policy(prompts=4, tokens=8, forms=("adapter", "transformers"))
    choice = fidelity.choose(str(gguf), str(tiny_model_dir), str(lora), lora, policy, say=lambda _m: None)
    assert choice.fidelity.chosen == "adapter"
    ctx = build_context()
    with ctx.db.session() as s:
        parent = register(s, ContestantSpec("gguf-parent", engine="llama_cpp", model_ref=str(gguf)))
        child = register(
            s,
            ContestantSpec(
                "gguf-child",
                engine="llama_cpp",
                model_ref=choice.model_ref or "",
                adapter_ref=choice.adapter_ref,
                parent_id=parent,
                description=choice.note,
            ),
        )
        job = Job(kind="dpo", config={}, status="succeeded")
        s.add(job)
        s.flush()
        s.add(
            Checkpoint(
                job_id=job.id, step=1, path=str(lora), contestant_id=child, fidelity=choice.fidelity.to_dict()
            )
        )
    page_data = model_page(ctx.db, "gguf-child")
    chosen = choice.fidelity.chosen_form
    assert chosen is not None and page_data["fidelity"]["chosen"] == "adapter"
    ctx.db.dispose()
    proc, url = start_server(home)
    try:
        page = open_model(browser, url, "gguf-child")
        page.wait_for_function(
            "document.querySelector('#models-lineage') && "
            "document.querySelector('#models-lineage').innerText.includes('Fidelity')",
            timeout=STEP_MS,
        )
        text = page.locator("#models-lineage").inner_text()
        assert "is the model that plays the model that was trained?" in text
        assert f"kept {chosen.kept:.0%}" in text and "of the trained shift" in text
        low, high = chosen.kept_interval or (0.0, 0.0)
        assert f"[{low:.0%}, {high:.0%}]" in text  # the interval beside the share, from the same record
        assert "4 prompts" in text and "✔" in text and "Floor 90%" in text
        page.close()
    finally:
        proc.terminate()
        proc.wait(10)
