"""Creature families: rigs, roles, naming styles, symmetry, skinned meshes, determinism, speed."""

from __future__ import annotations

import re
import time
from functools import cache

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from kirin.kirin_addon.core.creature import CENTRE, FAMILIES, LEFT, RIGHT, Creature
from kirin.kirin_addon.core.rig import mirror_name
from kirin.kirin_addon.core.skinning import linear_blend_skinning, skin_matrices
from kirin.kirin_addon.library.families.build import POSES, SPECIES, build_creature
from kirin.kirin_addon.library.families.naming import NAMING_STYLES

SEEDS = (0, 1, 2)
JOINT_RANGE = {"quadruped": (28, 42), "biped": (20, 30), "bird": (18, 30), "hexapod": (30, 40),
               "spider": (45, 56), "serpent": (17, 40), "dragon": (45, 60), "fish": (8, 15)}
LEG_COUNT = {"quadruped": 4, "biped": 2, "bird": 2, "hexapod": 6, "spider": 8, "dragon": 4, "serpent": 0,
             "fish": 0}
NAME_PATTERN = {
    "mixamo": r"mixamorig\d*:[A-Z][A-Za-z0-9_]*",
    "rigify": r"DEF-[a-z0-9_]+(\.[LR])?(\.\d{3})?",
    "gltf": r"Bone(\.\d{3})?",
    "quaternius": r"[A-Z][A-Za-z0-9]*(\.[LR])?",
    "unreal": r"[a-z][a-z0-9_]*",
    "bip": r"Bip01 ([LR] )?[A-Z][A-Za-z0-9]*( [A-Z][A-Za-z0-9]*)?",
    "arbitrary": r"[a-z]+[_-]?\d{2}[a-z]?",
}
SIDED_STYLES = ("mixamo", "rigify", "quaternius", "unreal", "bip")


@cache
def creature(family: str, seed: int, naming: str | None = None, species: str | None = None) -> Creature:
    return build_creature(family, seed, naming=naming, species=species)


def roles(c: Creature) -> list[int]:
    """Every joint a role names, with repeats (so the test can check they are disjoint)."""
    named = [c.pelvis, *c.spine, *c.neck, *c.tail, *(j for limb in c.limbs for j in limb.joints)]
    named += [j for j in (c.head, c.jaw) if j >= 0]
    named += [j for joints in c.extras.values() for j in joints]
    return named


def is_chain(rig, joints: list[int]) -> bool:
    return all(rig.parents[b] == a for a, b in zip(joints, joints[1:], strict=False))


def geometric_pairs(c: Creature) -> set[tuple[int, int]]:
    """Joints whose head and tail are the exact mirror image of another joint's."""
    heads, tails = c.rig.heads, c.rig.tails
    flip = np.array([-1.0, 1.0, 1.0])
    pairs = set()
    for i in np.flatnonzero(heads[:, 0] > 0):
        same = np.all(heads == heads[i] * flip, axis=1) & np.all(tails == tails[i] * flip, axis=1)
        match = np.flatnonzero(same)
        assert match.size == 1, f"{c.rig.names[i]} has {match.size} mirror images"
        pairs.add((min(i, int(match[0])), max(i, int(match[0]))))
    return pairs


# --------------------------------------------------------------------------- rigs and names
@pytest.mark.parametrize("naming", NAMING_STYLES)
@pytest.mark.parametrize("family", FAMILIES)
def test_rig_is_valid_and_named_in_style(family, naming):
    for seed in SEEDS:
        c = creature(family, seed, naming)
        c.rig.validate(max_joints=64)
        low, high = JOINT_RANGE[family]
        assert low <= c.rig.joint_count <= high, (c.species, c.rig.joint_count)
        assert c.family == family and c.species in SPECIES[family] and c.naming == naming and c.seed == seed
        assert len(set(c.rig.names)) == c.rig.joint_count
        bad = [n for n in c.rig.names if not re.fullmatch(NAME_PATTERN[naming], n)]
        assert not bad, bad
        if naming not in SIDED_STYLES:  # names that say nothing, not even a side
            assert all(mirror_name(n) is None for n in c.rig.names)


def test_gltf_numbers_are_shuffled_and_arbitrary_tokens_vary():
    c = creature("quadruped", 0, "gltf")
    numbers = [0 if n == "Bone" else int(n.split(".")[1]) for n in c.rig.names]
    assert sorted(numbers) == list(range(c.rig.joint_count)) and numbers != sorted(numbers)
    tokens = {creature("bird", seed, "arbitrary").rig.names[0] for seed in range(6)}
    assert len(tokens) > 1


def test_naming_none_draws_every_style():
    drawn = {build_creature("fish", seed).naming for seed in range(60)}
    assert drawn == set(NAMING_STYLES)


# --------------------------------------------------------------------------- roles
@pytest.mark.parametrize("family", FAMILIES)
def test_roles_are_consistent(family):
    for seed in SEEDS:
        c = creature(family, seed)
        rig = c.rig
        named = roles(c)
        assert len(named) == len(set(named)), "a joint has two roles"
        assert sorted(named) == list(range(rig.joint_count)), "every joint has a role"
        assert rig.parents[c.pelvis] == -1 and list(rig.roots) == [c.pelvis] and rig.main_root == c.pelvis
        assert is_chain(rig, [c.pelvis, *c.spine, *c.neck])
        trunk_end = ([c.pelvis, *c.spine, *c.neck])[-1]
        assert c.head >= 0 and rig.parents[c.head] == trunk_end
        assert c.jaw == -1 or rig.parents[c.jaw] == c.head
        assert not c.tail or (rig.parents[c.tail[0]] == c.pelvis and is_chain(rig, c.tail))
        for limb in c.limbs:
            assert is_chain(rig, limb.joints)
            assert limb.kind in ("leg", "arm", "wing", "fin")
            assert limb.side in (LEFT, RIGHT)
            assert np.all(np.sign(rig.heads[limb.joints[1:], 0]) == limb.side)
            assert np.sign(rig.tails[limb.joints[-1], 0]) == limb.side
            assert limb.foot == -1 or limb.foot in limb.joints
            assert limb.toe == -1 or rig.parents[limb.toe] == limb.foot
        assert len(c.legs()) == LEG_COUNT[family] == len(c.limbs_of("leg"))
        centre = [c.pelvis, *c.spine, *c.neck, c.head, *c.tail] + ([c.jaw] if c.jaw >= 0 else [])
        assert np.all(rig.heads[centre, 0] == 0.0) and np.all(rig.tails[centre, 0] == 0.0)


def test_limb_positions_and_kinds():
    quad = creature("quadruped", 3)
    assert sorted(limb.position for limb in quad.legs()) == ["front", "front", "hind", "hind"]
    hexa = creature("hexapod", 3)
    assert sorted(limb.position for limb in hexa.legs()) == ["front"] * 2 + ["hind"] * 2 + ["middle"] * 2
    assert len(creature("spider", 3).legs()) == 8
    assert len(creature("dragon", 3).limbs_of("wing")) == 2 and len(creature("bird", 3).limbs_of("wing")) == 2
    assert len(creature("biped", 3).limbs_of("arm")) == 2
    assert len(creature("fish", 3).limbs_of("fin")) in (2, 4)
    assert len(creature("bird", 3).limbs_of("wing")[0].joints) == 3
    assert all(len(leg.joints) in (4, 5) for leg in quad.legs())


@pytest.mark.parametrize("family", [f for f in FAMILIES if LEG_COUNT[f]])
def test_feet_rest_on_the_ground(family):
    for seed in SEEDS:
        c = creature(family, seed)
        heads, tails = c.rig.heads, c.rig.tails
        height = float(max(heads[:, 2].max(), tails[:, 2].max()))
        assert abs(min(heads[:, 2].min(), tails[:, 2].min())) <= 1e-9 * height  # nothing below the floor
        for leg in c.legs():
            assert abs(heads[leg.foot, 2]) <= 0.01 * height
            assert heads[leg.foot, 2] <= heads[leg.joints, 2].min() + 1e-12
        assert c.leg_length > 0.0
        assert c.mesh.vertices[:, 2].min() == 0.0  # soles flattened on the floor


@pytest.mark.parametrize("family", ["serpent", "fish"])
def test_legless_creatures_rest_at_zero(family):
    for seed in SEEDS:
        c = creature(family, seed)
        assert c.mesh.vertices[:, 2].min() == pytest.approx(0.0, abs=1e-12)
        assert not c.legs() and c.leg_length == 0.0


# --------------------------------------------------------------------------- symmetry
@pytest.mark.parametrize("naming", NAMING_STYLES)
@pytest.mark.parametrize("family", FAMILIES)
def test_bilateral_symmetry_is_exact(family, naming):
    for seed in SEEDS:
        c = creature(family, seed, naming)
        expected = geometric_pairs(c)  # asserts each x > 0 joint has exactly one mirror image
        lefts = [limb for limb in c.limbs if limb.side == LEFT]
        rights = [limb for limb in c.limbs if limb.side == RIGHT]
        assert len(lefts) == len(rights)
        for left, right in zip(lefts, rights, strict=True):
            assert (left.kind, left.position) == (right.kind, right.position)
            assert np.array_equal(c.rig.heads[left.joints] * [-1, 1, 1], c.rig.heads[right.joints])
            assert (left.foot >= 0) == (right.foot >= 0)
        if not expected:
            assert c.species == "snake"
            continue
        pairs = set(c.rig.mirror_pairs)
        if naming in SIDED_STYLES:
            assert pairs == expected  # names say the side, and say it right
        else:
            assert pairs and pairs <= expected  # found from the geometry alone


# --------------------------------------------------------------------------- mesh
@pytest.mark.parametrize("family", FAMILIES)
def test_mesh_is_skinned_smoothly(family):
    for seed in SEEDS:
        c = creature(family, seed)
        mesh, rig = c.mesh, c.rig
        assert 400 <= mesh.vertex_count <= 6000, mesh.vertex_count
        assert np.all(np.isfinite(mesh.vertices))
        assert mesh.triangles.min() >= 0 and mesh.triangles.max() < mesh.vertex_count
        assert mesh.joint_indices.shape == (mesh.vertex_count, 4)
        assert mesh.joint_indices.min() >= 0 and mesh.joint_indices.max() < rig.joint_count
        assert np.all(mesh.joint_weights >= 0.0)
        assert np.allclose(mesh.joint_weights.sum(axis=1), 1.0, atol=1e-12)
        # Every joint moves some skin; blending reaches across joints (not rigid per bone).
        influence = np.zeros(rig.joint_count)
        np.maximum.at(influence, mesh.joint_indices.ravel(), mesh.joint_weights.ravel())
        assert np.all(influence > 0.3), [rig.names[j] for j in np.flatnonzero(influence <= 0.3)]
        mixed = (mesh.joint_weights > 1e-6).sum(axis=1) > 1
        assert 0.1 < mixed.mean() < 0.9
        rest = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights,
                                     skin_matrices(rig.rest, rig.rest))
        assert np.allclose(rest, mesh.vertices, atol=1e-9 * rig.body_size)
        points = np.concatenate([rig.heads, rig.tails])
        margin = 0.05 * rig.body_size
        assert np.all(points >= mesh.vertices.min(0) - margin)
        assert np.all(points <= mesh.vertices.max(0) + margin)
        size = mesh.vertices.max(0) - mesh.vertices.min(0)
        assert np.all(size <= 1.5 * (points.max(0) - points.min(0)) + 0.3 * rig.body_size)


@pytest.mark.parametrize("family", FAMILIES)
def test_mesh_surfaces_are_closed_and_face_outwards(family):
    c = creature(family, 4)
    tris, verts = c.mesh.triangles, c.mesh.vertices
    edges = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    count = c.mesh.vertex_count
    code = edges[:, 0] * count + edges[:, 1]
    assert len(np.unique(code)) == len(code), "an edge is used twice in the same direction"
    reverse = edges[:, 1] * count + edges[:, 0]
    assert np.array_equal(np.sort(code), np.sort(reverse)), "a hole or a flipped face"
    # Each closed piece encloses positive volume: its normals point out (so renders shade right).
    graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(count, count))
    pieces, label = connected_components(graph, directed=False)
    a, b, d = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    volume = np.einsum("ij,ij->i", a, np.cross(b, d)) / 6.0
    per_piece = np.bincount(label[tris[:, 0]], weights=volume, minlength=pieces)
    assert pieces > 3 and np.all(per_piece > 0.0)


# --------------------------------------------------------------------------- determinism, variety
@pytest.mark.parametrize("family", FAMILIES)
def test_deterministic_by_seed_and_naming_keeps_geometry(family):
    a = build_creature(family, 11, naming="rigify")
    b = build_creature(family, 11, naming="rigify")
    assert a.rig.names == b.rig.names and a.species == b.species
    for name in ("rest", "tails", "parents"):
        assert np.array_equal(getattr(a.rig, name), getattr(b.rig, name))
    for name in ("vertices", "triangles", "joint_indices", "joint_weights"):
        assert np.array_equal(getattr(a.mesh, name), getattr(b.mesh, name))
    other = build_creature(family, 11, naming="gltf", species=a.species)
    assert other.rig.names != a.rig.names
    assert np.array_equal(other.rig.rest, a.rig.rest) and np.array_equal(other.mesh.vertices, a.mesh.vertices)
    different = build_creature(family, 12, species=a.species)
    assert different.rig.joint_count != a.rig.joint_count or not np.allclose(different.rig.heads, a.rig.heads)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_species_builds_and_proportions_vary(family):
    for species in SPECIES[family]:
        sizes = [build_creature(family, seed, species=species).rig.body_size for seed in range(4)]
        assert len(set(sizes)) == 4, species


def test_species_presets_differ_the_way_animals_do():
    def ratio(species: str, stat) -> float:
        return float(np.mean([stat(build_creature("quadruped", s, species=species)) for s in range(5)]))

    def legginess(c: Creature) -> float:  # hip height over body length
        return c.leg_length / abs(c.rig.heads[c.pelvis, 1] - c.rig.heads[c.spine[-1], 1])

    def tail(c: Creature) -> float:
        return float(np.sum(c.rig.lengths[c.tail])) / c.leg_length

    assert ratio("horse", legginess) > 1.3 * ratio("rat", legginess)
    assert ratio("deer", legginess) > ratio("bear", legginess)
    assert ratio("rat", tail) > 3 * ratio("deer", tail)
    assert build_creature("quadruped", 0, species="horse").leg_length > 5 * build_creature(
        "quadruped", 0, species="rat").leg_length


def test_biped_rest_poses():
    for seed in SEEDS:
        t_pose = build_creature("biped", seed, pose="T")
        a_pose = build_creature("biped", seed, pose="A")
        for c, low in ((t_pose, False), (a_pose, True)):
            arm = c.limbs_of("arm")[0]
            shoulder, hand = c.rig.heads[arm.joints[1]], c.rig.tails[arm.joints[-1]]
            drop = (shoulder[2] - hand[2]) / np.linalg.norm(hand - shoulder)
            assert (drop > 0.4) if low else abs(drop) < 1e-9
    assert {build_creature("biped", s).rig.joint_count > 0 for s in range(3)}
    assert POSES["biped"] == ("T", "A")


def test_rolls_vary_and_bones_point_along_y():
    rolled = 0
    for family in FAMILIES:
        for seed in SEEDS:
            rig = creature(family, seed).rig
            along = (rig.tails - rig.heads) / rig.lengths[:, None]
            assert np.allclose(rig.rest[:, :3, 1], along, atol=1e-9)
            rolled += int(np.abs(rig.rest[:, 2, 0]).max() > 1e-6)  # some x axis leaves the horizontal
    assert 0 < rolled < len(FAMILIES) * len(SEEDS) + 1 and rolled > 5


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="family"):
        build_creature("unicorn", 0)
    with pytest.raises(ValueError, match="species"):
        build_creature("quadruped", 0, species="human")
    with pytest.raises(ValueError, match="naming"):
        build_creature("quadruped", 0, naming="maya")
    with pytest.raises(ValueError, match="pose"):
        build_creature("quadruped", 0, pose="T")


def test_building_is_fast():
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    slowest = 0.0
    for k in range(100):
        family = FAMILIES[k % len(FAMILIES)]
        t0 = time.perf_counter()
        build_creature(family, int(rng.integers(1 << 31)))
        slowest = max(slowest, time.perf_counter() - t0)
    assert time.perf_counter() - start < 10.0
    assert slowest < 0.2
    assert CENTRE == 0
