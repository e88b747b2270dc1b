"""The core data model: rig, motion, rotations, the canonical frame, skinning, camera and IK."""
