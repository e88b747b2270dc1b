"""Motion controllers: contact-consistent gaits and actions for every creature family.

Creatures are driven only through their roles (pelvis, spine, neck, head, tail, limbs), never
by joint names. Everything is authored as world rotation deltas D_j = R_world_j · R_rest_j⁻¹
(bone-roll independent) and turned into a rotation-only Motion, so bone lengths are exact.

Legs are solved by IK from their girdle joint to a foot target: during stance a foot's target
is one constant point (zero skating by construction); during swing it travels on an arc. The
body is lowered where a foot would be out of reach, so every planted foot is met exactly.

Entry point: `dispatch.generate(creature, action, seed, ...)`; `dispatch.ACTIONS_BY_FAMILY` lists the actions.
Modules: `common` (axes, curves, the clip type), `segments` (what a clip is asked, stretch by stretch: the
frozen GaitSegment and the GaitOverrides a calibrated tempo sets), `poser` (leg IK and the body pose),
`reach` (where feet can go), `path` (ground tracks), `feet` (footfalls and swings), `gaits` (legged
locomotion), `body` (tails, arms, wings, fins), `actions` (in-place actions, jumps, glides), `axial`
(serpents and fish).
"""
