"""Publishing: a trained checkpoint becomes a contestant.

It holds:
- the job folder's manifest (``artifacts``) and lineage;
- the form the child plays as, and its fidelity to what was trained (``fidelity``);
- GGUF conversion (``gguf_export``, ``gguf_adapter``) and exports (``model_export``).
"""
