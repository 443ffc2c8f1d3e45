"""The container engine: images, the registry, phase containers, per-phase networks."""
