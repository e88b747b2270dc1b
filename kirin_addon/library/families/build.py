"""`build_creature(family, seed)`: a random creature of one family, its geometry, rolls and joint names each
drawn from their own random stream (see the package docstring)."""

from __future__ import annotations

import numpy as np

from ...core.creature import FAMILIES, Creature
from ...core.rig import rig_from_bones
from .biped import build_biped
from .bird import build_bird
from .builder import Builder, pick
from .dragon import build_dragon
from .fish import build_fish
from .hexapod import build_hexapod
from .mesh import skinned_mesh
from .naming import NAMING_STYLES, joint_names
from .quadruped import build_quadruped
from .serpent import build_serpent
from .spider import build_spider

SPECIES: dict[str, tuple[str, ...]] = {
    "quadruped": ("wolf", "dog", "fox", "horse", "deer", "cat", "bear", "cow", "rat"),
    "biped": ("human", "knight", "robot", "goblin"),
    "bird": ("pigeon", "eagle", "chicken", "parrot"),
    "hexapod": ("ant", "beetle"),
    "spider": ("tarantula", "jumping_spider"),
    "serpent": ("snake", "cobra"),
    "dragon": ("dragon",),
    "fish": ("trout", "shark", "tuna"),
}
POSES: dict[str, tuple[str, ...]] = {"biped": ("T", "A")}  # rest-pose variants where a family has them

_BUILDERS = {"quadruped": build_quadruped, "biped": build_biped, "bird": build_bird, "hexapod": build_hexapod,
             "spider": build_spider, "serpent": build_serpent, "dragon": build_dragon, "fish": build_fish}


def _rng(seed: int, stream: int, family: str) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, stream, FAMILIES.index(family)])


def _rolls(b: Builder, rng: np.random.Generator) -> np.ndarray:
    """Per-bone rolls the way real rigs have them: zero, quarter turns or arbitrary."""
    count = len(b.keys)
    mode = pick(rng, ["zero", "quarter", "random", "chaotic"], [0.2, 0.25, 0.35, 0.2])
    if mode == "zero":
        return np.zeros(count)
    if mode == "quarter":
        rolls = rng.integers(-1, 3, count) * (np.pi / 2)
    else:
        rolls = rng.uniform(-np.pi, np.pi, count)
    if mode != "chaotic":  # symmetrised rigs mirror the roll too
        for right, left in b.mirror_of.items():
            rolls[right] = -rolls[left]
    return rolls


def build_creature(family: str, seed: int, naming: str | None = None, species: str | None = None,
                   pose: str | None = None) -> Creature:
    """A random creature of `family`, deterministic by `seed` (see the package docstring).

    `naming` is one of NAMING_STYLES, `species` one of SPECIES[family], `pose` one of
    POSES[family] (bipeds: "T" or "A"); None draws each from the seed. The geometry depends only
    on (family, seed, species, pose), never on the naming style.
    """
    if family not in FAMILIES:
        raise ValueError(f"Unknown family {family!r}; expected one of {', '.join(FAMILIES)}.")
    draw = _rng(seed, 2, family)
    options = SPECIES[family]
    drawn_species = options[int(draw.integers(len(options)))]
    drawn_naming = NAMING_STYLES[int(draw.integers(len(NAMING_STYLES)))]
    poses = POSES.get(family, ())
    drawn_pose = poses[int(draw.integers(len(poses)))] if poses else None
    species = species or drawn_species
    naming = naming or drawn_naming
    pose = pose or drawn_pose
    if species not in options:
        raise ValueError(f"Unknown {family} species {species!r}; expected one of {', '.join(options)}.")
    if naming not in NAMING_STYLES:
        raise ValueError(f"Unknown naming style {naming!r}; expected one of {', '.join(NAMING_STYLES)}.")
    if pose is not None and pose not in poses:
        raise ValueError(f"A {family} has no pose {pose!r}; expected one of {poses or 'none'}.")

    b = Builder()
    geometry = _rng(seed, 0, family)
    _BUILDERS[family](b, geometry, species, pose)
    rolls = _rolls(b, geometry)
    heads, tails = np.array(b.heads), np.array(b.tails)
    mesh = skinned_mesh(b.parts, b.size, ground=family != "fish")
    if family == "fish":  # it floats: lift it so its lowest point is at z = 0
        lift = np.array([0.0, 0.0, -mesh.vertices[:, 2].min()])
        heads, tails = heads + lift, tails + lift
        mesh.vertices = mesh.vertices + lift
    counts = {"spine": len(b.spine), "neck": len(b.neck)}
    names = joint_names(b.keys, naming, _rng(seed, 1, family), counts)
    rig = rig_from_bones(names, b.parents, heads, tails, rolls)
    return Creature(family=family, species=species, rig=rig, mesh=mesh, pelvis=b.pelvis, spine=b.spine,
                    neck=b.neck, head=b.head, jaw=b.jaw, tail=b.tail, limbs=b.limbs, extras=b.extras,
                    naming=naming, seed=int(seed))
