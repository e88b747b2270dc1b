"""Generate Motion on the engine side: what happens to sampled motion before it reaches a rig."""
