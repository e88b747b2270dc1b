"""Skeletons built the way game artists rig them (tests only): leg chains that stop at the shin with
the foot on an IK control bone under a floor-level root, pole targets far in front, ears on the head.

Canonical frame: +Z up, facing −Y, left on +X, body size about 1.
"""

from __future__ import annotations

import numpy as np

from kirin.kirin_addon.core.rig import Rig, RigBuilder


def ik_quadruped() -> Rig:
    """A Quaternius-style quadruped: `Root` on the floor holds the body, four foot controls and two pole
    targets; each leg stops at its lower leg, whose foot control sits a little below and behind it."""
    b = RigBuilder()
    b.add("Root", None, (0, 0, 0), (0, 0, 0.1))
    b.add("Hips", "Root", (0, 0.3, 0.5), (0, 0.15, 0.5))
    b.add("Spine", "Hips", (0, 0.15, 0.5), (0, -0.1, 0.52))
    b.add("Chest", "Spine", (0, -0.1, 0.52), (0, -0.3, 0.55))
    b.add("Neck", "Chest", (0, -0.3, 0.55), (0, -0.42, 0.7))
    b.add("Head", "Neck", (0, -0.42, 0.7), (0, -0.6, 0.68))
    for side, x in (("L", 1), ("R", -1)):
        b.add(f"Ear.{side}", "Head", (0.05 * x, -0.45, 0.75), (0.06 * x, -0.45, 0.85))
        for part, y, parent in (("Front", -0.3, "Chest"), ("Back", 0.3, "Hips")):
            b.add(f"{part}Upper.{side}", parent, (0.1 * x, y, 0.45), (0.1 * x, y + 0.03, 0.25))
            b.add(f"{part}Lower.{side}", f"{part}Upper.{side}", (0.1 * x, y + 0.03, 0.25),
                  (0.1 * x, y + 0.03, 0.25 + 1e-3))
            b.add(f"IK{part}.{side}", "Root", (0.1 * x, y, 0.05), (0.1 * x, y - 0.05, 0.05))
            b.add(f"Paw{part}.{side}", f"IK{part}.{side}", (0.1 * x, y - 0.02, 0.0), (0.1 * x, y - 0.08, 0.0))
        b.add(f"Pole.{side}", "Root", (0.1 * x, -1.2, 0.25), (0.1 * x, -1.2, 0.35))
    b.add("Tail1", "Hips", (0, 0.32, 0.52), (0, 0.45, 0.6))
    b.add("Tail2", "Tail1", (0, 0.45, 0.6), (0, 0.55, 0.7))
    return b.build()


def biped_with_foot_controls() -> Rig:
    """A Quaternius-style biped: foot bones beside the body under the root, arms in a T-pose."""
    b = RigBuilder()
    b.add("Bone", None, (0, 0, 0.15), (0, 0, 0.25))
    b.add("Body", "Bone", (0, 0, 0.45), (0, 0, 0.5))
    b.add("Hips", "Body", (0, 0, 0.45), (0, 0, 0.5))
    b.add("Torso", "Hips", (0, 0, 0.5), (0, 0, 0.65))
    b.add("Neck", "Torso", (0, 0, 0.75), (0, 0, 0.8))
    b.add("Head", "Neck", (0, 0, 0.8), (0, 0, 0.95))
    for side, x in (("L", 1), ("R", -1)):
        b.add(f"Shoulder.{side}", "Torso", (0.05 * x, 0, 0.7), (0.1 * x, 0, 0.7))
        b.add(f"UpperArm.{side}", f"Shoulder.{side}", (0.1 * x, 0, 0.7), (0.25 * x, 0, 0.7))
        b.add(f"LowerArm.{side}", f"UpperArm.{side}", (0.25 * x, 0, 0.7), (0.4 * x, 0, 0.7))
        b.add(f"Hand.{side}", f"LowerArm.{side}", (0.4 * x, 0, 0.7), (0.47 * x, 0, 0.7))
        b.add(f"UpperLeg.{side}", "Body", (0.06 * x, 0, 0.45), (0.06 * x, 0, 0.3))
        b.add(f"LowerLeg.{side}", f"UpperLeg.{side}", (0.06 * x, 0, 0.3), (0.06 * x, 0, 0.16))
        b.add(f"LowerLeg.{side}_end", f"LowerLeg.{side}", (0.06 * x, 0, 0.16), (0.06 * x, 0, 0.1))
        b.add(f"Foot.{side}", "Bone", (0.06 * x, 0, 0.16), (0.06 * x, -0.08, 0.16))  # along the sole
    return b.build()


def long_necked_grazer(poles: bool = False) -> Rig:
    """A sauropod built as the Quaternius dinosaurs are: short legs (a fifth of the body) under a long neck
    and tail, each leg stopping at its lower leg with the foot a deforming bone under the floor-level root;
    the knees stand half the leg up. `poles`: pole targets a body length's third in front of the knees, at
    their height (under the lowered head)."""
    b = RigBuilder()
    b.add("Root", None, (0, 0, 0), (0, 0, 0.05))
    b.add("Body", "Root", (0, 0, 0.3), (0, 0, 0.31))
    b.add("Hips", "Body", (0, 0.05, 0.22), (0, 0.0, 0.21))
    b.add("Shoulders", "Hips", (0, 0.0, 0.21), (0, -0.09, 0.19))
    b.add("Neck", "Shoulders", (0, -0.09, 0.19), (0, -0.33, 0.22))
    b.add("Head", "Neck", (0, -0.33, 0.22), (0, -0.46, 0.26))
    b.add("Tail1", "Body", (0, 0.06, 0.2), (0, 0.18, 0.12))
    b.add("Tail2", "Tail1", (0, 0.18, 0.12), (0, 0.3, 0.04))
    b.add("Tail3", "Tail2", (0, 0.3, 0.04), (0, 0.54, 0.03))
    for side, x in (("L", 1), ("R", -1)):
        for part, y in (("Front", -0.12), ("Back", 0.05)):
            b.add(f"{part}Leg.{side}", "Body", (0.006 * x, y, 0.15), (0.03 * x, y, 0.15))
            knee = (0.026 * x, y + 0.02, 0.06)
            b.add(f"{part}UpLeg.{side}", f"{part}Leg.{side}", (0.03 * x, y, 0.15), knee)
            b.add(f"{part}LowLeg.{side}", f"{part}UpLeg.{side}", knee, (0.025 * x, y + 0.01, 0.02))
            b.add(f"{part}Foot.{side}", "Root", (0.025 * x, y - 0.01, 0.005), (0.025 * x, y - 0.01, 0.01))
            if poles:
                b.add(f"Pole{part}.{side}", "Root", (0.026 * x, y - 0.33, 0.06), (0.026 * x, y - 0.33, 0.1))
    rig = b.build()
    deform = np.array([not name.startswith("Pole") for name in rig.names])  # poles deform nothing
    return Rig(list(rig.names), rig.parents, rig.rest, rig.tails, deform, rig.connected, rig.local_rest)


def quadruped_of_separate_roots() -> Rig:
    """A quadruped rigged as Quaternius' FBX red fox is: the spine, the tail and each leg a root of its own
    (no bone joins a leg to the body), numbered bones, each leg's end bone reaching the floor."""
    b = RigBuilder()
    b.add("Bone", None, (0, 0.0, 0.5), (0, -0.3, 0.5))
    b.add("Bone.001", "Bone", (0, -0.3, 0.5), (0, -0.45, 0.6))
    b.add("Bone.002", "Bone.001", (0, -0.45, 0.6), (0, -0.6, 0.6))
    b.add("Bone.003", None, (0, 0.05, 0.5), (0, 0.4, 0.35))
    serial = 4
    for y in (0.05, -0.38):
        for x in (0.1, -0.1):
            top = b.add(f"Bone.{serial:03d}", None, (x, y, 0.36), (x, y, 0.22))
            knee = b.add(f"Bone.{serial + 1:03d}", top, (x, y, 0.22), (x, y + 0.03, 0.1))
            b.add(f"Bone.{serial + 2:03d}", knee, (x, y + 0.03, 0.1), (x, y, 0.0))
            serial += 3
    return b.build()
