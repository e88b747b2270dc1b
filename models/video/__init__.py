"""Motion From Video with torch: the per-rig inverse-dynamics model and the sequence-level fit."""
