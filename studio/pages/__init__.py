"""One module per tab; each exposes ``build(ctx)`` that lays out its components and wires thin handlers."""
