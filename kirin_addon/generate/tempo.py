"""The tempo of each gait on artists' rigs: stride frequency and stance share, calibrated on authored clips.

Medians over the distinct animation sets of the calibration rigs (every authored rig in ../shared/assets
with locomotion clips but the held-out ones, and the CMU subjects 01–06; the 14 Quaternius monsters
that share one set of clips count once), measured on the deformed mesh by
`benchmarks/bench_motion_real.py --calibration`; docs/tempo.md has the table. Game clips keep one
tempo across the rigs' proportions (a monster with legs 0.2 body sizes long walks at the same 1 Hz as a
person), so the frequency is the gait's; a species the prompt names scales it mildly by its size
(∝ leg^-0.3). A speed word changes the tempo as cadence follows speed in people and animals
(frequency ∝ speed^0.55). A stance share is the one the controllers must be given for the deformed
mesh to read the authored median. Bipeds get the crouch, lean, arm swing and foot roll their walks and
runs have (game characters stand with straight legs: a stride needs bent knees).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Tempo:
    """A gait as artists animate it: its stride frequency, and what differs from the controllers' gait
    (None keeps theirs; the names are the controllers' GAIT_OVERRIDES)."""

    frequency: float  # strides per second
    duty: float | None = None  # stance share
    crouch: float | None = None  # body drop (leg lengths) a stride may count on
    lean: float | None = None  # forward pitch (rad) of the spine
    arm_swing: float | None = None  # fore–aft arm swing (rad)
    elbow: float | None = None  # forearm bend (rad) of swinging arms
    bob: float | None = None  # vertical body bob (leg lengths)
    sway: float | None = None  # lateral body sway (leg lengths)
    nod: float | None = None  # head-and-neck pitch oscillation (rad)
    heel_off: float | None = None  # foot pitch (rad) as the heel comes up before lift-off
    heel_strike: float | None = None  # toes up (rad) as the foot lands heel first

    def gait_overrides(self) -> dict[str, float]:
        return {key: value for key, value in vars(self).items() if key != "frequency" and value is not None}


TEMPI: dict[tuple[str, str], Tempo] = {
    ("quadruped", "walk"): Tempo(0.86, duty=0.53),
    ("quadruped", "trot"): Tempo(1.25, duty=0.40),
    ("quadruped", "pace"): Tempo(1.25, duty=0.40),
    ("quadruped", "canter"): Tempo(1.45, duty=0.40),
    ("quadruped", "gallop"): Tempo(1.58, duty=0.40),
    ("quadruped", "rotary_gallop"): Tempo(1.58, duty=0.40),
    ("quadruped", "bound"): Tempo(1.58, duty=0.40),
    ("biped", "walk"): Tempo(0.86, duty=0.57, crouch=0.15, lean=0.05, arm_swing=1.2, nod=0.25, sway=0.05,
                             bob=0.03, heel_off=0.5, heel_strike=0.25),
    ("biped", "run"): Tempo(1.30, duty=0.39, crouch=0.2, lean=0.3, arm_swing=1.0, elbow=1.3, heel_off=0.6,
                            heel_strike=0.15),
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
# Game clips follow size more weakly than Froude's f ∝ L^-0.5: f ∝ L^-0.3 fits the calibration rigs.
SIZE_EXPONENT = 0.3


def tempo_of(family: str, gait: str, pace: float = 1.0, species: str | None = None) -> Tempo | None:
    """The calibrated tempo of a gait at a pace (a share of its own speed), for a species when it is
    known (its size sets the cadence); None where no tempo was measured."""
    tempo = TEMPI.get((family, gait))
    if tempo is None:
        return None
    size = 1.0
    if species in LEG_METRES and family in REFERENCE_LEG_METRES:
        size = (LEG_METRES[species] / REFERENCE_LEG_METRES[family]) ** -SIZE_EXPONENT
    return replace(tempo, frequency=tempo.frequency * size * pace**CADENCE_EXPONENT)


def species_in(text: str) -> str | None:
    """The species of LEG_METRES a prompt names ("a Shiba Inu trotting" → "shiba inu"), longest first."""
    words = " " + " ".join("".join(c if c.isalnum() else " " for c in text.lower()).split()) + " "
    for species in sorted(LEG_METRES, key=len, reverse=True):
        if f" {species} " in words or f" {species}s " in words:
            return species
    return None
