"""The tempo of a rig built like a calibration rig is that rig's; a rig built like none gets the family's.
The committed table holds calibration rigs only, and a rig's build reads the same at any scale."""

from __future__ import annotations

import json

import numpy as np
import pytest
from artist_rigs import biped_with_foot_controls, ik_quadruped

from kirin.benchmarks.motion_real_sets import held_out_relative
from kirin.kirin_addon.core.canonical import CanonicalFrame, canonical_rig
from kirin.kirin_addon.generate.rig_roles import detect_roles
from kirin.kirin_addon.generate.rig_shape import FEATURES, RigShape, rig_shape
from kirin.kirin_addon.generate.tempo import TABLE_PATH, TEMPI, TempoTable, tempo_of
from kirin.kirin_addon.library.controllers.gaits import FAMILY_GAITS, GAITS

MONSTER = (0.9, 1.8, 0.9, 0.0)
WALKER = (0.95, 1.2, 0.8, 0.0)


def _table(bandwidth: float = 0.1, prior_weight: float = 0.5) -> TempoTable:
    rigs = [
        {"rig": "pack/monster", "family": "biped", "shape": list(MONSTER),
         "walk": {"frequency": 1.0, "duty": 0.62}, "run": {"frequency": 1.71, "duty": 0.25}},
        {"rig": "other/walker", "family": "biped", "shape": list(WALKER),
         "walk": {"frequency": 0.7, "duty": 0.55}},
    ]
    scales = {"biped": [0.15, 0.3, 0.6, 0.5]}
    duties = {"biped/walk": 0.56, "biped/run": 0.39}
    return TempoTable(rigs, scales, duties, bandwidth, prior_weight)


def test_a_rig_built_like_a_calibration_rig_gets_its_tempo():
    table = _table()
    run = tempo_of("biped", "run", shape=RigShape("biped", MONSTER), table=table)
    prior = TEMPI[("biped", "run")]
    # one rig of weight 1 against the prior's 0.5: two thirds of the way in log frequency
    expected = np.exp((0.5 * np.log(prior.frequency) + np.log(1.71)) / 1.5)
    assert run.frequency == pytest.approx(expected, rel=1e-6)
    assert run.overrides.duty == pytest.approx(prior.overrides.duty + (0.25 - 0.39) / 1.5, rel=1e-6)
    assert run.source == ("pack/monster",)
    assert run.overrides.arm_swing == prior.overrides.arm_swing  # the gait's own amplitudes stay


def test_a_rig_built_like_none_gets_the_family_tempo_and_its_species_size():
    table = _table()
    odd = RigShape("biped", (0.5, 0.2, 0.1, 2.0))
    walk = tempo_of("biped", "walk", shape=odd, table=table)
    assert walk.frequency == pytest.approx(TEMPI[("biped", "walk")].frequency, rel=1e-3)
    assert walk.source == ()
    assert tempo_of("biped", "walk", species="person", shape=odd, table=table).frequency == \
        pytest.approx(tempo_of("biped", "walk", species="person").frequency, rel=1e-3)
    # on a known build the size of the species named speaks for the family's share only
    known = RigShape("biped", MONSTER)
    plain = tempo_of("biped", "walk", shape=known, table=table).frequency
    small = tempo_of("biped", "walk", species="cat", shape=known, table=table).frequency
    assert plain < small < plain * (0.25 / 0.9) ** -0.3


def test_a_trot_follows_both_kinds_and_another_family_is_not_compared():
    table = _table()
    quadruped = RigShape("quadruped", MONSTER)
    assert tempo_of("quadruped", "walk", shape=quadruped, table=table).source == ()
    assert tempo_of("biped", "walk", shape=RigShape("biped", WALKER), table=table).source == ("other/walker",)


def test_the_committed_table_holds_calibration_rigs_only():
    data = json.loads(TABLE_PATH.read_text())
    assert data["features"] == list(FEATURES)
    held_out = {name.rsplit(".", 1)[0] for name in held_out_relative()}
    names = [rig["rig"] for rig in data["rigs"]]
    assert names and not held_out & set(names)
    assert not any(name.startswith("bvh_cmu_subjects_01_07/007_") for name in names)
    for rig in data["rigs"]:
        assert len(rig["shape"]) == len(FEATURES)
        kinds = [k for k in ("walk", "run") if k in rig]
        assert kinds
        for kind in kinds:
            # giants step at a fifth of a hertz (the Apatosaurus), birds at two (Mesh2Motion's bird)
            assert 0.1 < rig[kind]["frequency"] < 3.0 and 0.1 < rig[kind]["duty"] < 0.9
    TempoTable.load()  # loads as the generator does


@pytest.mark.parametrize("make", [ik_quadruped, biped_with_foot_controls])
def test_a_build_reads_the_same_at_any_scale_and_in_any_frame(make):
    rig = make()
    shape = rig_shape(detect_roles(canonical_rig(rig, CanonicalFrame(np.eye(3), 1.0, np.zeros(3))).rig))
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    matrix = np.eye(4)
    matrix[:3, :3] = 0.01 * turn.T
    frame = CanonicalFrame(turn, 100.0, np.zeros(3))
    moved = rig_shape(detect_roles(canonical_rig(rig.transformed(matrix), frame).rig))
    assert moved.family == shape.family
    assert np.allclose(moved.values, shape.values, atol=1e-3)
    up = np.eye(4)
    up[2, 3] = 0.4 * rig.body_size  # a frame whose origin lies below the soles (the Robot's root)
    raised = rig_shape(detect_roles(canonical_rig(rig.transformed(up), CanonicalFrame(np.eye(3), 1.0,
                                                                                      np.zeros(3))).rig))
    assert np.allclose(raised.values, shape.values, atol=1e-3)
    values = dict(zip(FEATURES, shape.values, strict=True))
    assert values["hip_height"] > 0.5  # legs stand under the hips
    assert (values["arm_length"] > 0) == (shape.family == "biped")


def test_every_calibrated_tempo_is_of_a_controllers_gait_and_sets_its_fields():
    """TEMPI's keys are gaits the family's controllers have, and its overrides the gait's own fields."""
    for (family, gait), tempo in TEMPI.items():
        controllers_gait = GAITS[FAMILY_GAITS[family][gait]]
        changed = tempo.overrides.applied(controllers_gait)
        assert all(getattr(changed, name) == value for name, value in tempo.overrides.given().items())
