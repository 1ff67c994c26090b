"""Generation engines behind one protocol (``base.Engine``): llama.cpp, transformers, OpenAI-compatible HTTP and
vLLM, built by ``factory.get_engine`` and queued per engine by ``gate.gate_for``."""
