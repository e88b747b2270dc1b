"""Kirin's engine: rig and motion model, rotations, canonical frame, joint mapping, retargeting,
skinning, file loaders and the command line. Never imports bpy (tests/test_layers.py checks)."""
