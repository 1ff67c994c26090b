"""Generation engines behind one protocol: llama.cpp, transformers, OpenAI-compatible HTTP and vLLM.

The protocol is ``base.Engine``: ``stream_chat``, plus ``generate_batch`` where an engine batches
natively. ``factory.get_engine`` builds an engine. ``gate.gate_for`` queues requests per engine. Outside
the live arena, ``ask`` is the one way to get finished answers.
"""
