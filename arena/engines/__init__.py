"""Generation engines behind one protocol (``base.Engine``: ``stream_chat``, plus ``generate_batch`` where an engine batches natively): llama.cpp,
transformers, OpenAI-compatible HTTP and vLLM, built by ``factory.get_engine``, queued per engine by
``gate.gate_for``, and asked for finished answers through ``ask`` (the one way outside the live arena)."""
