"""Creature families: randomised skeletons with joint roles, varied naming and a skinned mesh.

`build.build_creature(family, seed)` gives a `Creature` in the canonical frame (+Z up, facing −Y, the
creature's left on +X, metres). Everything is deterministic by seed, and three independent
random streams keep the parts apart: proportions/rolls (so the same seed gives the same geometry
under every naming style), names, and the species/pose/naming draw.

Ground: legged families stand with the head of every `Limb.foot` joint at z = 0 (the paw, hoof,
ball of the foot or tarsus tip), and their mesh is flattened at z = 0 so soles sit on the floor.
Serpents lie with a flattened belly at z = 0. Fish float: the whole fish is lifted so its lowest
mesh point (belly or a fin) is at z = 0.

Mesh: closed tubes with elliptic sections and rounded caps around each body part (torso and neck
in one, then head, jaw, limbs, tail, ears, flat wings and fins), framed by parallel transport so
they never twist, wound so normals face out. Each vertex follows its segment's joint and blends
smoothly half-way into the neighbouring joint across each joint (at most 3 influences, stored in
4 columns; rows sum to 1). A creature has about 0.45k (boxy robots) to 3k vertices.

Roles: `Limb.foot` is the joint whose head rests on the ground — the paw/hoof digit of a
quadruped, the ball of the foot (ToeBase; its parent is the ankle) of a biped, the toes of a bird,
the tarsus of an insect or spider — and `Limb.toe` the bone beyond it when there is one (a
biped's toe end). Limbs run girdle → tip; arthropod legs are coxa → tarsus. Serpents and fish are
rooted mid-body (the vent / the centre of mass): `spine` runs forward to the head, `tail` back.
Arthropod abdomens, antennae, mandibles, chelicerae, pedipalps, ears, horns, a cobra's hood and
the unpaired fins are `extras`; paired fins are limbs of kind "fin".

Joint names follow one of `NAMING_STYLES`; where a style has no word for a part (Mixamo for a
tail or a spider leg) a consistent one is invented. Rolls vary per bone as they do on real rigs
(all zero, quarter turns, random; mirrored across the body or not), and some rest orientations
vary too (pelvis and head bones point different ways), while joint positions stay anatomical.

Modules: `build` (`build_creature`, SPECIES, POSES), `builder` (bones, tubes, limbs, mirroring), one
builder per family (`quadruped`, `dragon`, `biped`, `bird`, `hexapod` and `spider` with the shared
`arthropods` leg, `serpent`, `fish`), `naming` (NAMING_STYLES) and `mesh` (the skinned tubes).
"""
