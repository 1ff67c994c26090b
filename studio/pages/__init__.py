"""One module per tab. Each exposes ``build(ctx)``, which lays out its components and wires thin handlers."""
