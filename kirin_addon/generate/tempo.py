"""The tempo of each gait on artists' rigs: stride frequency and stance share, calibrated on authored clips.

Medians over the distinct animation sets of the calibration rigs (every authored rig in ../shared/assets
with locomotion clips but the held-out ones, and the CMU subjects 01–06; the 14 Quaternius monsters
that share one set of clips count once), measured on the deformed mesh by
`benchmarks/bench_motion_real.py --calibration`; docs/tempo.md has the table. Game clips keep one
tempo across the rigs' proportions (a monster with legs 0.2 body sizes long walks at the same 1 Hz as a
person), so the frequency is the gait's; a species the prompt names may scale it by its size
(∝ leg^-k, k calibrated with the table: 0 where a species' size tells nothing of an artist's tempo).
A speed word changes the tempo as cadence follows speed in people and animals (frequency ∝
speed^0.55), and the stride carries the rest. A stance share is the one the controllers must be given
for the deformed mesh to read the authored median. Bipeds get the crouch, lean, arm swing and foot roll
their walks and runs have (game characters stand with straight legs: a stride needs bent knees).

Every gait segment made for a prompt or a video gets its tempo here (`gait_segment`): its stride
frequency and the controllers' gait values it changes (GaitOverrides), and the rigs it came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..library.controllers.segments import NO_OVERRIDES, GaitOverrides, GaitSegment
from .rig_shape import FEATURES, RigShape


@dataclass(frozen=True)
class Tempo:
    """A gait as artists animate it: its stride frequency, and what differs from the controllers' gait."""

    frequency: float  # strides per second
    overrides: GaitOverrides = NO_OVERRIDES
    source: tuple[str, ...] = ()  # the calibration rigs built like the user's whose tempo this is


TEMPI: dict[tuple[str, str], Tempo] = {
    ("quadruped", "walk"): Tempo(0.86, GaitOverrides(duty=0.53, lift=0.19)),
    ("quadruped", "trot"): Tempo(1.25, GaitOverrides(duty=0.40)),
    ("quadruped", "pace"): Tempo(1.25, GaitOverrides(duty=0.40)),
    ("quadruped", "canter"): Tempo(1.45, GaitOverrides(duty=0.40)),
    ("quadruped", "gallop"): Tempo(1.58, GaitOverrides(duty=0.40, pitch=0.3, bob=0.08, nod=0.5, lift=0.42)),
    ("quadruped", "rotary_gallop"): Tempo(1.58, GaitOverrides(duty=0.40)),
    ("quadruped", "bound"): Tempo(1.58, GaitOverrides(duty=0.40)),
    ("biped", "walk"): Tempo(0.86, GaitOverrides(duty=0.57, crouch=0.15, lean=0.05, arm_swing=0.5, nod=0.25,
                                                 sway=0.05, bob=0.03, heel_off=0.5, heel_strike=0.25,
                                                 lift=0.17)),
    ("biped", "run"): Tempo(1.30, GaitOverrides(duty=0.39, crouch=0.2, lean=0.3, arm_swing=0.75, elbow=1.3,
                                                heel_off=0.6, heel_strike=0.15, bob=0.08, nod=0.5, sway=0.03,
                                                lift=0.6)),
}
CADENCE_EXPONENT = 0.55

# Leg length (hip or shoulder height, m) of the species a prompt may name: a fox steps quicker than a
# donkey. Typical adults; the family's reference is the calibration rigs' median species.
LEG_METRES = {
    "rat": 0.08, "cat": 0.25, "fox": 0.4, "shiba inu": 0.38, "dog": 0.55, "husky": 0.55, "wolf": 0.75,
    "deer": 1.0, "alpaca": 0.95, "donkey": 1.1, "bear": 1.0, "zebra": 1.3, "cow": 1.4, "bull": 1.5,
    "horse": 1.55, "stegosaurus": 2.0, "triceratops": 2.0, "parasaurolophus": 2.0, "apatosaurus": 4.0,
    "human": 0.9, "person": 0.9, "man": 0.9, "woman": 0.85, "knight": 0.9,
}
REFERENCE_LEG_METRES = {"quadruped": 1.0, "biped": 0.9}
# f ∝ L^-SIZE_EXPONENT where no table is given; the committed table calibrates its own (`size_exponent`).
SIZE_EXPONENT = 0.3


# The calibration rigs' own tempi (tools/calibrate_tempo.py writes it from the --calibration run).
TABLE_PATH = Path(__file__).with_name("tempo_rigs.json")
# Which authored gait of the table a gait follows: its own kind, or (a trot, between the two) both.
KIND_OF_GAIT = {"walk": ("walk",), "trot": ("walk", "run"), "pace": ("walk", "run"), "canter": ("run",),
                "gallop": ("run",), "rotary_gallop": ("run",), "bound": ("run",), "run": ("run",)}
# The family's tempo of each kind (the prior the neighbours are weighed against).
PRIOR_GAIT = {("quadruped", "walk"): "walk", ("quadruped", "run"): "gallop", ("biped", "walk"): "walk",
              ("biped", "run"): "run"}


@dataclass(frozen=True)
class TempoTable:
    """The authored tempo of each calibration rig, by its build (rig_shape.FEATURES).

    A rig is given the weighted mean of the calibration rigs' tempi, each weighted by how alike their
    builds are (a Gaussian of the distance in feature units), with the family's median weighing in as
    `prior_weight` rigs: a rig built like none of them gets the family's tempo, scaled by the size of a
    species the prompt names as leg^-`size_exponent`."""

    rigs: list[dict]  # {"rig", "family", "species", "shape": [FEATURES], "walk"/"run": {"frequency", "duty"}}
    scales: dict[str, list[float]]  # per family, the unit of each feature (its spread over the rigs)
    median_duty: dict[str, float]  # "family/kind" → the rigs' median authored stance share
    bandwidth: float = 0.35
    prior_weight: float = 1.0
    size_exponent: float = SIZE_EXPONENT

    @classmethod
    def load(cls, path: Path = TABLE_PATH) -> TempoTable:
        data = json.loads(path.read_text())
        if data.get("features") != list(FEATURES):
            raise ValueError(f"{path}: made for other rig features; run tools/calibrate_tempo.py again")
        return cls(data["rigs"], data["scales"], data["median_duty"], data["bandwidth"], data["prior_weight"],
                   data["size_exponent"])

    def neighbours(self, shape: RigShape, kind: str) -> list[tuple[dict, float]]:
        """(rig, weight) of the calibration rigs of the shape's family with an authored `kind`."""
        unit = np.asarray(self.scales.get(shape.family, []), dtype=float)
        out = []
        for rig in self.rigs:
            if rig["family"] != shape.family or kind not in rig:
                continue
            gap = (np.asarray(shape.values) - np.asarray(rig["shape"])) / unit
            distance = float(np.sqrt(np.mean(gap**2)))
            out.append((rig, float(np.exp(-0.5 * (distance / self.bandwidth) ** 2))))
        return out

    def shift(self, shape: RigShape, kind: str,
              prior_frequency: float) -> tuple[float, float, list[tuple[str, float]]]:
        """(frequency factor, stance-share change, [(rig, share)], most weight first) of the rigs built
        like `shape` against the family's tempo of `kind`."""
        near = self.neighbours(shape, kind)
        total = self.prior_weight + sum(w for _, w in near)
        log_f = sum(w * np.log(rig[kind]["frequency"] / prior_frequency) for rig, w in near) / total
        prior_duty = self.median_duty.get(f"{shape.family}/{kind}")
        duty = 0.0
        if prior_duty is not None:
            duty = sum(w * (rig[kind]["duty"] - prior_duty) for rig, w in near) / total
        shares = sorted(((rig["rig"], w / total) for rig, w in near), key=lambda item: -item[1])
        return float(np.exp(log_f)), float(duty), shares


def _main_sources(shares: list[tuple[str, float]], most: int = 5) -> list[str]:
    """The rigs that carry most of the neighbours' weight (up to `most`), for the report."""
    total = sum(share for _, share in shares)
    out, carried = [], 0.0
    for name, share in shares[:most]:
        if share < 0.02 or carried >= 0.5 * total:
            break
        out.append(name)
        carried += share
    return out


@lru_cache(maxsize=1)
def tempo_table() -> TempoTable | None:
    return TempoTable.load() if TABLE_PATH.exists() else None


def tempo_of(family: str, gait: str, pace: float = 1.0, species: str | None = None,
             shape: RigShape | None = None, table: TempoTable | None = None) -> Tempo | None:
    """The calibrated tempo of a gait at a pace (a share of its own speed); None where no tempo was
    measured. On a rig of `shape`, the calibration rigs built like it set the tempo (`table`, default the
    committed one); where none is alike, a species the prompt names sets the cadence by its size."""
    tempo = TEMPI.get((family, gait))
    if tempo is None:
        return None
    table = tempo_table() if table is None else table
    size = species_size(family, species, SIZE_EXPONENT if table is None else table.size_exponent)
    factor, duty, source = size, 0.0, ()
    kinds = [k for k in KIND_OF_GAIT.get(gait, ()) if (family, k) in PRIOR_GAIT]
    if shape is not None and table is not None and shape.family == family and kinds:
        factors, duties, shares = [], [], []
        for kind in kinds:
            f, d, near = table.shift(shape, kind, TEMPI[(family, PRIOR_GAIT[(family, kind)])].frequency)
            prior_share = 1.0 - sum(share for _, share in near)
            factors.append(f * size**prior_share)  # the size speaks for the family's share only
            duties.append(d)
            shares += _main_sources(near)
        factor = float(np.prod(factors) ** (1.0 / len(factors)))
        if len(kinds) == 1 and tempo.overrides.duty is not None:
            duty = duties[0]
        source = tuple(dict.fromkeys(shares))
    overrides = tempo.overrides
    if overrides.duty is not None:
        overrides = replace(overrides, duty=overrides.duty + duty)
    return Tempo(tempo.frequency * factor * pace**CADENCE_EXPONENT, overrides, source)


def species_size(family: str, species: str | None, exponent: float) -> float:
    """The factor on a family's stride frequency of a species' size (1 where it is not known)."""
    if species in LEG_METRES and family in REFERENCE_LEG_METRES:
        return (LEG_METRES[species] / REFERENCE_LEG_METRES[family]) ** -exponent
    return 1.0


def gait_segment(family: str, action: str, seconds: float, pace: float = 1.0, species: str | None = None,
                 shape: RigShape | None = None, frequency: float | None = None) -> GaitSegment:
    """The controllers' segment of `action` for `seconds`: at its calibrated tempo (`tempo_of`) where one
    was measured, else at the gait's own; a stride `frequency` asked (Hz; a video's) replaces the tempo's.
    A pace the cadence does not carry (pace^(1 - CADENCE_EXPONENT)) is the stride's."""
    tempo = tempo_of(family, action, pace, species, shape)
    stride = float(pace ** (1.0 - CADENCE_EXPONENT))
    segment = GaitSegment(action, seconds, stride=stride)
    if tempo is not None:
        segment = GaitSegment(action, seconds, frequency=tempo.frequency, overrides=tempo.overrides,
                              tempo_from=tempo.source, stride=stride)
    if frequency is not None:
        segment = replace(segment, frequency=float(frequency))
    return segment


def species_in(text: str) -> str | None:
    """The species of LEG_METRES a prompt names ("a Shiba Inu trotting" → "shiba inu"), longest first."""
    words = " " + " ".join("".join(c if c.isalnum() else " " for c in text.lower()).split()) + " "
    for species in sorted(LEG_METRES, key=len, reverse=True):
        if f" {species} " in words or f" {species}s " in words:
            return species
    return None
