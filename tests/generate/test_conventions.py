"""Issue 31's metamorphic convention tests: an artist's rig made the way another artist or tool would make
it — other bone names, another rest pose (re-bound), rolls, scale, Y-up, IK controls, a prop, disconnected
bones, no toes — is the same creature, and the engine's walk on it must not move: duty, stride frequency
and travel speed (body sizes/s) within 10 %, left/right coupling within 0.1, the same heading, and a rig
refused as it was made is refused as mutated. Measured on the deformed mesh in the original rig's frame
(benchmarks/convention_measure.py; the mutations: benchmarks/convention_mutations.py; the table:
benchmarks/bench_conventions.py). No Blender, no network."""

from __future__ import annotations

import numpy as np
import pytest
from artist_rigs import ik_quadruped

from kirin.benchmarks.convention_measure import RIGS, compare, measure, rig_case
from kirin.benchmarks.convention_mutations import (
    Anatomy,
    Mutant,
    controls,
    mutations,
    renamed,
    rest_pose_changed,
    rigify_copies,
)
from kirin.kirin_addon.core.canonical import canonical_rig
from kirin.kirin_addon.core.rest_pose_cues import control_joints
from kirin.kirin_addon.core.rig import Rig, side_of
from kirin.kirin_addon.core.skinning import SkinnedMesh
from kirin.kirin_addon.generate.rig_roles import detect_roles

from assets_support import ASSETS

pytestmark = pytest.mark.slow

# What still moves, and why (the closing note of issue 31 has the table).
KNOWN = {
    ("luanti_spider/gltf_spider_animated.gltf", "names_numbered"):
        "the spider's walk is refused as made (broken, no network to try); numbered, its IK targets (its "
        "only bones on the floor: the file has no leg tips) no longer show the floor: read on its side, "
        "it walks as a quadruped",
}


@pytest.fixture(scope="module")
def cases() -> dict:
    """The originals, loaded and measured once (the mutations are measured against them)."""
    return {}


def _case(cases: dict, path: str, creature: str):
    if not (ASSETS / path).exists():
        pytest.skip(f"../shared/assets/{path} is not present")
    if path not in cases:
        cases[path] = rig_case(path, creature)
    return cases[path]


@pytest.mark.parametrize(("path", "creature"), RIGS, ids=[path.split("/")[-1] for path, _ in RIGS])
def test_every_mutation_leaves_the_walk_as_it_is(cases, path, creature):
    case = _case(cases, path, creature)
    moved = {}
    for mutant in mutations(case.rig, case.mesh, case.body):
        if (path, mutant.name) in KNOWN:
            continue
        found = compare(case.original, measure(mutant, case.probe, creature))
        if found:
            moved[mutant.name] = found
    assert moved == {}, f"{path}: {moved}"


def test_the_measure_sees_a_walk_that_changes(cases):
    """Not blind: the same rig running instead of walking moves the statistics past the bounds."""
    path, creature = RIGS[1]  # the Quaternius cow
    case = _case(cases, path, creature)
    assert case.original.stats is not None and case.original.stats["frequency_hz"]
    running = measure(Mutant("original", case.rig, case.mesh), case.probe, creature + " galloping, a")
    assert compare(case.original, running)


def test_refusals_are_compared(cases):
    """A refused original and a made mutant (or the other way round) differ; two refusals of one class
    agree."""
    path, creature = RIGS[1]
    case = _case(cases, path, creature)
    refused = type(case.original)(None, "GenerationError", "No clip was made")
    assert compare(case.original, refused) and compare(refused, case.original)
    assert compare(refused, type(case.original)(None, "GenerationError", "other words")) == []


# ----------------------------------------------------------------------------- the mutations themselves
def _cow(cases: dict):
    return _case(cases, *RIGS[1])


def test_mutations_keep_the_creature(cases):
    """Every mutation but the re-bound rest poses keeps the rest mesh where it was (in the original's
    frame); the re-bound ones keep the feet's vertices and are their own rest: the mesh is their skin at
    rest."""
    case = _cow(cases)
    for mutant in mutations(case.rig, case.mesh, case.body):
        back = mutant.mesh.vertices @ mutant.to_original[:3, :3].T + mutant.to_original[:3, 3]
        assert np.allclose(back, case.mesh.vertices, atol=1e-6 * case.rig.body_size), mutant.name
        weights = mutant.mesh.joint_weights.sum(axis=1)
        assert np.allclose(weights, case.mesh.joint_weights.sum(axis=1)), mutant.name
        assert mutant.mesh.joint_indices.max() < mutant.rig.joint_count, mutant.name
        mutant.rig.validate()


def test_a_rest_pose_re_bound_moves_the_arms_only():
    """T ↔ A pose on a small humanoid: the arms' bones turn 40° about the forward axis, the legs stay,
    the mesh of the arms follows them (skinned), the mesh of the legs stays."""
    rig = ik_quadruped()  # its shape does not matter: the arms are named in the anatomy
    mesh = SkinnedMesh(rig.heads.copy(), np.zeros((0, 3)), np.arange(rig.joint_count)[:, None],
                       np.ones((rig.joint_count, 1)))
    up, forward, left = np.array([0.0, 0, 1]), np.array([0.0, -1, 0]), np.array([1.0, 0, 0])
    arm = [rig.index("FrontUpper.L"), rig.index("FrontLower.L")]
    body = Anatomy([], [], [], [arm], {}, False, forward, up, left, 1.0, True)
    mutant = rest_pose_changed(rig, mesh, body)
    moved = np.linalg.norm(mutant.rig.heads - rig.heads, axis=1) > 1e-9
    assert set(np.flatnonzero(moved)) == {rig.index("FrontLower.L")}
    assert np.allclose(mutant.mesh.vertices, mutant.rig.heads)  # vertices on the heads moved with them
    # the upper bone's direction turned by 40°
    before = rig.tails[arm[0]] - rig.heads[arm[0]]
    after = mutant.rig.tails[arm[0]] - mutant.rig.heads[arm[0]]
    angle = np.degrees(np.arccos(before @ after / np.linalg.norm(before) / np.linalg.norm(after)))
    assert angle == pytest.approx(40.0, abs=0.5)


def test_numbered_names_say_nothing_and_rigify_copies_are_controls(cases):
    case = _cow(cases)
    numbered = renamed(case.rig, case.mesh, case.body, "numbered").rig
    assert all(side_of(name) == 0 for name in numbered.names)
    rigify = renamed(case.rig, case.mesh, case.body, "rigify").rig
    control = control_joints(rigify)
    copies = list(range(case.rig.joint_count + 1, rigify.joint_count))  # after the new `root`
    assert copies and all(rigify.names[j].startswith(("ORG-", "MCH-")) for j in copies)
    assert control[copies].all()
    assert not control[[j for j, name in enumerate(rigify.names) if name.startswith("DEF-")]].any()


# ----------------------------------------------------------------------------- the engine, without assets
def _deforming(rig: Rig, controls_named: tuple[str, ...]) -> Rig:
    deform = np.array([not name.startswith(controls_named) for name in rig.names])
    return Rig(list(rig.names), rig.parents, rig.rest, rig.tails, deform)


def test_controls_are_read_from_what_deforms_not_from_names():
    """Pole targets that deform nothing are controls whatever they are called; so is a prop off a
    bone; an end bone at its parent's tail is not."""
    rig = _deforming(ik_quadruped(), ("Pole",))
    names = [f"Bone.{k:03d}" for k in range(rig.joint_count)]  # nothing in the names
    bare = Rig(names, rig.parents, rig.rest, rig.tails, rig.deform)
    control = control_joints(bare)
    assert [rig.names[j] for j in np.flatnonzero(control)] == ["Pole.L", "Pole.R"]


def test_roles_ignore_control_copies_of_the_legs():
    """A Rigify-like rig: the deforming skeleton and a non-deforming copy of it under one root; the legs
    found are the deforming ones, as on the rig alone."""
    rig = _deforming(ik_quadruped(), ("Pole",))
    alone = detect_roles(rig)
    body = Anatomy([], [], [], [], {}, False, np.array([0.0, -1, 0]), np.array([0.0, 0, 1]),
                   np.array([1.0, 0, 0]), 1.0, True)
    copied = rigify_copies(rig, body)
    assert controls(copied) >= set(range(rig.joint_count + 1, copied.joint_count))
    roles = detect_roles(canonical_rig(copied, canonical_rig(rig).frame).rig)
    def legs(found):
        return sorted([found.rig.names[j] for j in leg.chain] for leg in found.legs)

    assert legs(roles) == legs(alone) and len(roles.legs) == 4
