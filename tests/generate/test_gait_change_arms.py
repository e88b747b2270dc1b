"""A walk into a run changes the arms with the gait: the run's half swings and bends them as a run does, the
walk's as a walk does (one blend of the two for the whole clip had a robot's long arms, bent as a walk's,
drag their hands through the floor in the run: the guard then sent the prompt to the network)."""

from __future__ import annotations

import numpy as np
from artist_rigs import biped_with_foot_controls

from kirin.kirin_addon.core.canonical import CanonicalFrame
from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.generate.pipeline import GeneratePipeline
from kirin.kirin_addon.generate.request import GenerateRequest

FRAMES = 180


def _elbow_bends(prompt: str) -> np.ndarray:
    """(T,) degrees the left elbow is bent, each frame of a constructed clip of `prompt`."""
    rig = biped_with_foot_controls()
    pipeline = GeneratePipeline(None)
    prepared = pipeline.prepare(rig, None, CanonicalFrame(np.eye(3), 1.0, np.zeros(3)))
    made = pipeline.run(prepared, GenerateRequest(prompt, frames=FRAMES, seed=0).check())[0]
    assert made.report["path"] == "constructed"
    positions = joint_positions(rig, made.motion)
    shoulder, elbow, hand = (rig.names.index(n) for n in ("UpperArm.L", "LowerArm.L", "Hand.L"))
    upper = positions[:, elbow] - positions[:, shoulder]
    fore = positions[:, hand] - positions[:, elbow]
    cosine = np.sum(upper * fore, axis=1) / np.linalg.norm(upper, axis=1) / np.linalg.norm(fore, axis=1)
    return np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))


def test_a_walk_into_a_run_bends_the_elbows_as_each_gait_does():
    walk = np.median(_elbow_bends("a person walking forward"))
    run = np.median(_elbow_bends("a person running forward"))
    both = _elbow_bends("a person walks, then runs")
    assert run > walk + 20.0  # a run pumps bent arms
    quarter = FRAMES // 4
    assert abs(np.median(both[:quarter]) - walk) < 5.0
    assert abs(np.median(both[-quarter:]) - run) < 5.0
