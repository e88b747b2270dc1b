"""Roles read from artists' skeletons: whole legs, foot controls that follow them, the axial body."""

from __future__ import annotations

import numpy as np
import pytest
from artist_rigs import (
    biped_with_foot_controls,
    ik_quadruped,
    long_necked_grazer,
    quadruped_of_separate_roots,
)

from kirin.kirin_addon.core.creature import LEFT, RIGHT
from kirin.kirin_addon.core.rig import RigBuilder
from kirin.kirin_addon.core.skinning import SkinnedMesh
from kirin.kirin_addon.generate.rig_roles import RoleError, detect_roles


def _names(roles, joints):
    return [roles.rig.names[j] for j in joints]


def test_quadruped_legs_stop_at_the_shin_and_get_a_tip_at_the_foot_control():
    roles = detect_roles(ik_quadruped())
    assert roles.family == "quadruped"
    assert len(roles.legs) == 4
    assert {leg.position for leg in roles.legs} == {"front", "hind"}
    assert sorted(leg.side for leg in roles.legs) == [RIGHT, RIGHT, LEFT, LEFT]
    assert len(roles.tips) == 4  # every leg stopped short of its foot control
    for leg in roles.legs:
        assert leg.foot in roles.tips
        control = [top for top, anchor in roles.followers.items() if anchor == leg.foot]
        assert len(control) == 1 and roles.rig.names[control[0]].startswith("IK")
        # the tip is where the control is: the leg solved by IK ends on it
        assert np.allclose(roles.rig.heads[leg.foot], roles.rig.heads[control[0]])
    assert roles.rig.names[roles.pelvis] == "Hips"
    assert _names(roles, roles.tail) == ["Tail1", "Tail2"]
    assert roles.rig.names[roles.head] in ("Head", "Neck")


def test_pole_targets_far_from_the_body_follow_the_pelvis():
    roles = detect_roles(ik_quadruped())
    poles = [j for j, name in enumerate(roles.rig.names) if name.startswith("Pole")]
    assert poles and all(roles.followers[j] == -1 for j in poles)


def test_biped_foot_bones_beside_the_body_follow_the_leg_end():
    roles = detect_roles(biped_with_foot_controls())
    assert roles.family == "biped"
    assert roles.tips == []  # the legs reach the foot bones' heads
    ends = {roles.rig.names[leg.foot] for leg in roles.legs}
    assert ends == {"LowerLeg.L_end", "LowerLeg.R_end"}
    for side in "LR":
        foot = roles.rig.names.index(f"Foot.{side}")
        assert roles.rig.names[roles.followers[foot]] == f"LowerLeg.{side}_end"
    assert roles.rig.names[roles.pelvis] == "Body"
    assert [_names(roles, arm)[1] for arm in roles.arms] == ["UpperArm.L", "UpperArm.R"]


def test_twist_bones_and_toes_stay_on_one_whole_leg():
    b = RigBuilder()
    b.add("Hips", None, (0, 0, 0.5), (0, 0, 0.6))
    b.add("Spine", "Hips", (0, 0, 0.6), (0, 0, 0.8))
    b.add("Head", "Spine", (0, 0, 0.8), (0, 0, 1.0))
    for side, x in (("L", 1), ("R", -1)):
        b.add(f"{side}_Thigh", "Hips", (0.05 * x, 0, 0.5), (0.05 * x, 0, 0.27))
        b.add(f"{side}_ThighTwist", f"{side}_Thigh", (0.05 * x, 0, 0.45), (0.05 * x, 0, 0.35))
        b.add(f"{side}_Calf", f"{side}_Thigh", (0.05 * x, 0, 0.27), (0.05 * x, 0, 0.05))
        b.add(f"{side}_Foot", f"{side}_Calf", (0.05 * x, 0, 0.05), (0.05 * x, -0.06, 0.01))
        for k, dx in enumerate((-0.015, 0.0, 0.015)):
            toe = (0.05 + dx) * x
            b.add(f"{side}_Toe{k}", f"{side}_Foot", (toe, -0.06, 0.01), (toe, -0.09, 0.01))
    roles = detect_roles(b.build())
    assert roles.family == "biped"
    for leg in roles.legs:
        names = _names(roles, leg.chain)
        assert names[0].endswith("_Thigh") and "Twist" not in "".join(names)
        assert roles.rig.names[leg.foot].endswith("_Foot")


def test_a_rig_without_legs_is_a_clear_error():
    b = RigBuilder()
    b.add("Body", None, (0, 0, 0.5), (0, -0.3, 0.5))
    b.add("Head", "Body", (0, -0.3, 0.5), (0, -0.5, 0.5))
    with pytest.raises(RoleError, match="no legs"):
        detect_roles(b.build())


def test_a_giants_short_legs_plant_their_feet_not_their_knees():
    """Under a long neck and tail a sauropod's legs are a fifth of the body, the knees half the leg up: the
    legs end at the foot bones beside the body (tips there), not at the knees (0.06 body sizes up, which
    on a person's leg would be the ankle) — with the knee as the foot the legs reached nothing and the
    walk stood still."""
    roles = detect_roles(long_necked_grazer())
    assert roles.family == "quadruped"
    assert sorted(leg.side for leg in roles.legs) == [RIGHT, RIGHT, LEFT, LEFT]
    for leg in roles.legs:
        assert leg.foot in roles.tips
        assert roles.rig.heads[leg.foot, 2] < 0.01  # on the floor, where the foot bone is
    assert _names(roles, roles.tail) == ["Tail1", "Tail2", "Tail3"]


def test_a_pole_target_under_a_lowered_head_does_not_lengthen_the_neck():
    """Pole targets in front of the knees lie under a grazer's lowered head, low and near it: a head rises
    from its neck, so the pole is no foot control of it (it had made a tip of the head, and the rig's
    build — its head height — moved with the controls a rigger adds)."""
    plain, with_poles = detect_roles(long_necked_grazer()), detect_roles(long_necked_grazer(poles=True))
    assert len(with_poles.tips) == len(plain.tips) == 4
    assert with_poles.rig.names[with_poles.head] == plain.rig.names[plain.head] == "Head"
    assert _names(with_poles, with_poles.neck) == _names(plain, plain.neck)



def test_legs_rigged_as_roots_of_their_own_hang_from_the_body():
    """Spine, tail and each leg a separate root: the legs stand down to the floor beside the body, so they
    are its legs (the red fox was refused: 'no chain of bones reaches down to the floor')."""
    rig = quadruped_of_separate_roots()
    roles = detect_roles(rig)
    assert roles.family == "quadruped" and len(roles.legs) == 4
    tops = {leg.chain[0] for leg in roles.legs}
    assert tops == set(roles.hung) and all(rig.parents[top] < 0 for top in tops)
    assert sorted(leg.side for leg in roles.legs) == [RIGHT, RIGHT, LEFT, LEFT]
    assert {leg.position for leg in roles.legs} == {"front", "hind"}


def _mech(end_below_floor: bool = False):
    """A mech's legs as the Quaternius mech has them without its foot controls: hip → knee → a shin leaf
    whose skin is a spike down to the floor, the bone itself ending high above it (or, an FBX end bone's
    way, pointing through the floor)."""
    b = RigBuilder()
    b.add("Body", None, (0, 0, 0.55), (0, 0, 0.7))
    b.add("Chest", "Body", (0, 0, 0.7), (0, 0, 0.95))
    for side, x in (("L", 1), ("R", -1)):
        b.add(f"UpperLeg.{side}", "Body", (0.1 * x, 0, 0.55), (0.1 * x, 0, 0.3))
        shin_end = (0.1 * x, 0.02, -0.2) if end_below_floor else (0.1 * x, 0.02, 0.14)
        b.add(f"LowerLeg.{side}", f"UpperLeg.{side}", (0.1 * x, 0, 0.3), shin_end)
    rig = b.build()
    vertices, joints = [], []
    for j, name in enumerate(rig.names):
        if name.startswith("LowerLeg"):  # the spike: from the knee down to a point behind it on the floor
            x = rig.heads[j, 0]
            vertices += [(x + dx, 0.04 * s, 0.3 * s) for s in np.linspace(0, 1, 6) for dx in (-0.02, 0.02)]
            joints += [j] * 12
        elif name.startswith(("Body", "Chest")):
            vertices += [(dx, dy, rig.heads[j, 2] + 0.1) for dx in (-0.1, 0.1) for dy in (-0.05, 0.05)]
            joints += [j] * 4
    count = len(vertices)
    skin = SkinnedMesh(np.array(vertices), np.array([[0, 1, 2]]), np.array(joints)[:, None],
                       np.ones((count, 1)))
    return rig, skin


def test_a_shin_whose_skin_is_the_foot_ends_where_the_skin_meets_the_floor():
    """Without a foot bone or control, the leg plants the spike's point, not the knee; the skin says so,
    the bone's tail does not (an FBX end bone points anywhere: through the floor here)."""
    rig, skin = _mech()
    roles = detect_roles(rig, skin)
    assert roles.family == "biped" and len(roles.legs) == 2
    for leg in roles.legs:
        assert roles.rig.names[leg.foot].startswith("LowerLeg") and leg.foot >= rig.joint_count  # a tip
        assert roles.rig.heads[leg.foot, 2] == pytest.approx(0.0, abs=1e-9)  # the spike's point
        assert roles.rig.heads[leg.foot, 1] == pytest.approx(0.0, abs=1e-9)
    knees = detect_roles(rig)  # without the skin: as before, the knee
    assert sorted(knees.rig.names[leg.foot] for leg in knees.legs) == ["LowerLeg.L", "LowerLeg.R"]
    through, _ = _mech(end_below_floor=True)
    unskinned = SkinnedMesh(skin.vertices, skin.triangles, np.zeros_like(skin.joint_indices),
                            skin.joint_weights)
    assert all(leg.foot < through.joint_count for leg in detect_roles(through, unskinned).legs)


def test_a_foot_bone_that_ends_the_leg_along_the_sole_rolls_over_its_end():
    """Toes taken away (or never made), the foot still rolls at heel-off over where they were: a tip at
    the foot bone's tail is the leg's toe (the Mesh2Motion bird without toes walked 25 % longer on the
    ground, its flat feet never rolling)."""
    def biped(toes: bool):
        b = RigBuilder()
        b.add("Hips", None, (0, 0, 0.5), (0, 0, 0.6))
        b.add("Chest", "Hips", (0, 0, 0.6), (0, 0, 0.9))
        for side, x in (("L", 1), ("R", -1)):
            b.add(f"UpperLeg.{side}", "Hips", (0.1 * x, 0, 0.5), (0.1 * x, 0, 0.27))
            b.add(f"LowerLeg.{side}", f"UpperLeg.{side}", (0.1 * x, 0, 0.27), (0.1 * x, 0, 0.05))
            b.add(f"Foot.{side}", f"LowerLeg.{side}", (0.1 * x, 0, 0.05), (0.1 * x, -0.09, 0.01))
            if toes:
                b.add(f"Toes.{side}", f"Foot.{side}", (0.1 * x, -0.09, 0.01), (0.1 * x, -0.14, 0.01))
        return b.build()

    with_toes, without = detect_roles(biped(True)), detect_roles(biped(False))
    for a, b in zip(with_toes.legs, without.legs, strict=True):
        assert with_toes.rig.names[a.foot] == without.rig.names[b.foot]  # the ankle plants either way
        assert without.rig.names[b.toe].endswith("(tip)")
        assert np.allclose(without.rig.heads[b.toe], with_toes.rig.heads[a.toe])  # the same pivot
