"""2D evidence for video extraction: keypoint files, tracks, silhouettes and their combination."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kirin.kirin_addon.library.render import write_png
from kirin.kirin_addon.video.evidence import Evidence2D, combine
from kirin.kirin_addon.video.keypoints import load_keypoints
from kirin.kirin_addon.video.silhouettes import background_silhouettes, mask_silhouettes
from kirin.kirin_addon.video.tracks import tracks_evidence
from kirin.kirin_addon.video.video_io import VideoError

H, W, T = 120, 160, 20
JOINTS = ["Hips", "Spine", "Head", "LeftHand", "RightHand", "Tail_01"]


def background() -> np.ndarray:
    yy, xx = np.mgrid[0:H, 0:W]
    return np.stack([90 + 40 * np.sin(xx / 9.0), 110 + 40 * np.cos(yy / 7.0),
                     120 + 30 * np.sin((xx + yy) / 13.0)], -1)


def blob_frames(count: int = T) -> tuple[np.ndarray, np.ndarray]:
    """A red ellipse moving over a smooth static texture: frames (T,H,W,3) uint8 and true masks."""
    yy, xx = np.mgrid[0:H, 0:W]
    frames, masks = [], []
    for t in range(count):
        cx, cy = 25 + 5.5 * t, 60 + 20 * np.sin(t / 4)
        mask = ((xx - cx) / 16) ** 2 + ((yy - cy) / 11) ** 2 <= 1
        frame = background()
        frame[mask] = (230, 40, 40)
        frames.append(frame)
        masks.append(mask)
    return np.clip(frames, 0, 255).astype(np.uint8), np.array(masks)


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a & b).sum((1, 2)) / np.maximum((a | b).sum((1, 2)), 1)


def panning_frames(subject: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The camera pans 9 px a frame along three copies of the texture; the red ellipse, if any, walks the
    other way (5 px a frame in the picture, 14 px on the texture)."""
    wide = np.concatenate([background()] * 3, axis=1)
    yy, xx = np.mgrid[0:H, 0:W]
    frames, masks = [], []
    for t in range(T):
        frame = wide[:, 9 * t:9 * t + W].copy()
        mask = ((xx - (30 + 5 * t)) / 16) ** 2 + ((yy - 60 - 15 * np.sin(t / 3)) / 11) ** 2 <= 1
        if subject:
            frame[mask] = (230, 40, 40)
        frames.append(frame)
        masks.append(mask & subject)
    return np.clip(frames, 0, 255).astype(np.uint8), np.array(masks)


def hand_held_frames(count: int = 40, subject: bool = True, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A hand-held camera over a textured wall: the view wanders by a slow random walk (sub-pixel, up to
    ±30 px); a red ellipse moves across the wall, always in view. Frames (T,H,W,3) uint8, true masks."""
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    margin = 32
    noise = rng.normal(0, 1, (H + 2 * margin, W + 2 * margin, 3))
    wall = sum(s * ndimage.gaussian_filter(noise, (s, s, 0)) for s in (1.5, 4.0, 10.0))
    wall = 128 + 45 * (wall - wall.mean()) / wall.std()
    yy, xx = np.mgrid[0:H, 0:W]
    view, velocity = np.zeros(2), np.zeros(2)  # the view's top-left corner on the wall, from (margin, margin)
    frames, masks = [], []
    for t in range(count):
        velocity = 0.8 * velocity + rng.normal(0, 1.2, 2)
        view = np.clip(view + velocity, -margin + 2, margin - 2)
        frame = ndimage.shift(wall, (-view[0], -view[1], 0), order=1)[margin:margin + H, margin:margin + W]
        cy, cx = 60 + 18 * np.sin(t / 6) - view[0], 35 + 2.2 * t - view[1]  # on the wall, into the view
        mask = ((xx - cx) / 15) ** 2 + ((yy - cy) / 10) ** 2 <= 1
        if subject:
            frame[mask] = (225, 45, 40)
        frames.append(frame)
        masks.append(mask & subject)
    return np.clip(frames, 0, 255).astype(np.uint8), np.array(masks)


# ------------------------------------------------------------------------------ silhouettes


def test_background_subtraction_finds_the_blob():
    frames, truth = blob_frames()
    sil = background_silhouettes(frames)
    assert sil.shape == (T, H, W) and sil.dtype == np.float32
    assert sil.min() >= 0 and sil.max() <= 1
    assert iou(sil > 0.5, truth).min() >= 0.8


def test_background_subtraction_on_a_decoded_video(tmp_path):
    pytest.importorskip("av")
    from kirin.kirin_addon.video.video_io import read_video, write_video

    frames, truth = blob_frames()
    clip = read_video(write_video(tmp_path / "blob.mp4", frames, 24))
    sil = background_silhouettes(clip.frames)
    assert iou(sil > 0.5, truth).min() >= 0.8


def test_background_subtraction_downscales_and_softens():
    frames, truth = blob_frames()
    small = background_silhouettes(frames, max_side=80)
    assert small.shape == (T, 60, 80)
    truth_small = truth.reshape(T, 60, 2, 80, 2).mean((2, 4)) > 0.5
    assert iou(small > 0.5, truth_small).min() >= 0.8
    soft = background_silhouettes(frames, soft_edge=1.0)
    assert ((soft > 0.05) & (soft < 0.95)).any()
    assert iou(soft > 0.5, truth).min() >= 0.8
    explicit = background_silhouettes(frames, threshold=60.0)
    assert iou(explicit > 0.5, truth).min() >= 0.8


def test_no_moving_subject():
    still = np.repeat(np.clip(background(), 0, 255).astype(np.uint8)[None], T, axis=0)
    with pytest.raises(VideoError, match="no moving subject"):
        background_silhouettes(still)
    noisy = np.clip(still + np.random.default_rng(0).normal(0, 3, still.shape), 0, 255).astype(np.uint8)
    with pytest.raises(VideoError, match="no moving subject"):
        background_silhouettes(noisy)
    # A camera panning over a still scene: the whole picture changes in every frame, but once aligned
    # nothing moves.
    with pytest.raises(VideoError, match="no moving subject"):
        background_silhouettes(panning_frames(subject=False)[0])
    with pytest.raises(VideoError, match="zero frames"):
        background_silhouettes(np.zeros((0, H, W, 3), np.uint8))
    with pytest.raises(VideoError):
        background_silhouettes(np.zeros((T, H, W), np.uint8))


def test_hand_held_camera():
    """The view wanders by up to ±30 px: one median of the clip would smear the wall (every frame would
    change almost everywhere); each frame's background is aligned to it instead."""
    for seed in range(3):
        frames, truth = hand_held_frames(seed=seed)
        sil = background_silhouettes(frames) > 0.5
        assert iou(sil, truth).min() >= 0.85 and iou(sil, truth).mean() >= 0.95
        with pytest.raises(VideoError, match="no moving subject"):
            background_silhouettes(hand_held_frames(seed=seed, subject=False)[0])
    frames, truth = hand_held_frames(count=30, seed=3)
    frames[10] = 200  # a frame where something fills the view: no silhouette, the others unharmed
    sil = background_silhouettes(frames, max_side=80) > 0.5
    assert not sil[10].any()
    small = truth.reshape(30, 60, 2, 80, 2).mean((2, 4)) > 0.5
    kept = np.delete(np.arange(30), 10)
    assert iou(sil[kept], small[kept]).min() >= 0.75


def test_panning_camera_with_a_subject():
    """A fast pan (a 17th of the view a frame): each frame is aligned with the few that still overlap it.
    Near the clip's ends fewer frames see the edge of the view, so a silhouette there may grow a little."""
    frames, truth = panning_frames()
    overlap = iou(background_silhouettes(frames) > 0.5, truth)
    assert overlap.min() >= 0.6 and (overlap >= 0.9).mean() >= 0.9


def test_a_frame_filled_by_the_subject_gets_no_silhouette():
    frames, truth = blob_frames()
    frames[7] = (230, 40, 40)  # static camera; the subject right at the lens
    sil = background_silhouettes(frames) > 0.5
    assert not sil[7].any()
    assert iou(np.delete(sil, 7, 0), np.delete(truth, 7, 0)).min() >= 0.8


def test_mask_arrays():
    _, truth = blob_frames(4)
    for masks in (truth, truth.astype(np.uint8) * 255, truth.astype(np.float64)):
        sil = mask_silhouettes(masks)
        assert sil.dtype == np.float32 and sil.shape == (4, H, W)
        assert ((sil > 0.5) == truth).all()
    rgba = np.zeros((4, H, W, 4), np.uint8)
    rgba[..., :3] = 255
    rgba[..., 3] = truth * 255  # white everywhere, the subject in alpha
    assert ((mask_silhouettes(rgba) > 0.5) == truth).all()
    half = mask_silhouettes(truth, size=(80, 60))
    assert half.shape == (4, 60, 80)
    with pytest.raises(VideoError, match="zero frames"):
        mask_silhouettes(np.zeros((0, H, W)))
    with pytest.raises(VideoError):
        mask_silhouettes(np.full((2, H, W), -3.0))


def test_mask_png_sequence(tmp_path):
    pytest.importorskip("av")
    _, truth = blob_frames(3)
    paths = []
    for t, mask in enumerate(truth):
        paths.append(tmp_path / "masks" / f"mask_{t:04d}.png")
        paths[-1].parent.mkdir(exist_ok=True)
        write_png(paths[-1], np.repeat(mask[..., None] * 255, 3, -1).astype(np.uint8))
    sil = mask_silhouettes(paths)
    assert sil.shape == (3, H, W) and ((sil > 0.5) == truth).all()
    assert (mask_silhouettes(tmp_path / "masks") == sil).all()
    assert mask_silhouettes([str(p) for p in paths], size=(80, 60)).shape == (3, 60, 80)
    write_png(tmp_path / "other.png", np.zeros((10, 10, 3), np.uint8))
    with pytest.raises(VideoError, match="differ in size"):
        mask_silhouettes([paths[0], tmp_path / "other.png"])
    with pytest.raises(VideoError, match="not found"):
        mask_silhouettes([tmp_path / "nope.png"])
    (tmp_path / "bad.png").write_text("not a png")
    with pytest.raises(VideoError, match="bad.png"):
        mask_silhouettes([tmp_path / "bad.png"])


# ------------------------------------------------------------------------------ keypoint files


def test_keypoint_json_records_round_trip(tmp_path):
    rows = [{"frame": 0, "joint": "head", "x": 10.5, "y": 20.0, "confidence": 0.9},
            {"frame": 2, "joint": "HIPS", "x": 30.0, "y": 40.0},
            {"frame": 2, "joint": "lhand", "x": 1.0, "y": 2.0, "confidence": 0.5}]
    path = tmp_path / "kp.json"
    path.write_text(json.dumps(rows))
    points, conf = load_keypoints(path, JOINTS, aliases={"LHand": "lefthand"})
    assert points.shape == (3, len(JOINTS), 2) and conf.shape == (3, len(JOINTS))
    assert points[0, 2] == pytest.approx([10.5, 20.0]) and conf[0, 2] == pytest.approx(0.9)
    assert points[2, 0] == pytest.approx([30, 40]) and conf[2, 0] == 1.0  # confidence optional → 1
    assert points[2, 3] == pytest.approx([1, 2]) and conf[2, 3] == 0.5
    assert np.isnan(points[1]).all() and (conf[1] == 0).all()
    assert (conf > 0).sum() == 3
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"keypoints": rows}))
    points2, conf2 = load_keypoints(wrapped, JOINTS, frame_count=5, aliases={"lhand": "LeftHand"})
    assert points2.shape[0] == 5
    assert np.array_equal(conf2[:3], conf) and np.allclose(points2[:3], points, equal_nan=True)


def test_keypoint_json_frames_layout(tmp_path):
    data = {"fps": 30, "frames": [{"frame": 1, "joints": {"Head": [5, 6, 0.7], "tail_01": {"x": 1, "y": 2}}},
                                  {"joints": {"Spine": [3, 4]}}]}
    path = tmp_path / "frames.json"
    path.write_text(json.dumps(data))
    points, conf = load_keypoints(path, JOINTS)
    assert points.shape[0] == 2
    assert points[1, 2] == pytest.approx([5, 6]) and conf[1, 2] == pytest.approx(0.7)
    assert points[1, 5] == pytest.approx([1, 2]) and conf[1, 5] == 1
    assert points[1, 1] == pytest.approx([3, 4])  # no "frame": numbered by its position


def test_keypoint_csv_round_trip(tmp_path):
    path = tmp_path / "kp.csv"
    path.write_text("# from my detector\nframe,joint,x,y,confidence\n0,Head,1.5,2.5,0.8\n"
                    "\n3,spine,7,8,1\n3,Tail_01,,,0\n")
    points, conf = load_keypoints(path, JOINTS)
    assert points.shape == (4, len(JOINTS), 2)
    assert points[0, 2] == pytest.approx([1.5, 2.5]) and conf[0, 2] == pytest.approx(0.8)
    assert points[3, 1] == pytest.approx([7, 8]) and conf[3, 1] == 1
    assert conf[3, 5] == 0 and np.isnan(points[3, 5]).all()  # invisible: empty x, y with confidence 0
    reordered = tmp_path / "no_conf.csv"
    reordered.write_text("joint,y,x,frame\nhead,2,1,0\n")  # any column order, no confidence column
    points, conf = load_keypoints(reordered, JOINTS, frame_count=2)
    assert points[0, 2] == pytest.approx([1, 2]) and conf[0, 2] == 1 and conf.shape == (2, len(JOINTS))


def test_unknown_joints_name_them_and_list_bones(tmp_path):
    path = tmp_path / "kp.csv"
    path.write_text("frame,joint,x,y\n0,head,1,2\n0,left_wing,3,4\n1,beak,5,6\n")
    with pytest.raises(VideoError) as info:
        load_keypoints(path, JOINTS)
    message = str(info.value)  # where, and the rig's bones; never what the file holds
    assert "2 joint name(s)" in message and "line 3" in message and "Hips" in message and "Head" in message
    assert "left_wing" not in message and "beak" not in message
    with pytest.raises(VideoError, match="no bone named 'Wing'"):
        load_keypoints(path, JOINTS, aliases={"left_wing": "Wing"})


@pytest.mark.parametrize("body,match", [
    ("frame,joint,x,y\n0,Head,abc,2\n", "line 2: x is not a number"),
    ("frame,joint,x,y\n1.5,Head,1,2\n", "whole number"),
    ("frame,joint,x,y\n-1,Head,1,2\n", "whole number"),
    ("frame,joint,x,y,confidence\n0,Head,1,2,1.5\n", r"confidence must lie in \[0, 1\]"),
    ("frame,joint,x,y,confidence\n0,Head,,2,0.5\n", "x and y must be numbers"),
    ("frame,joint,x,y\n0,Head,1,2\n0,head,3,4\n", "two keypoints for joint 'Head' at frame 0"),
    ("frame,joint,x\n0,Head,1\n", "missing y"),
    ("frame,joint,x,y\n0,Head\n", "line 2: 2 values"),
    ("frame,joint,x,y\n9,Head,1,2\n", "line 2: the frame is beyond the video"),
    ("", "empty"),
    ("frame,joint,x,y\n", "no keypoints"),
])
def test_bad_csv_rows(tmp_path, body, match):
    path = tmp_path / "kp.csv"
    path.write_text(body)
    with pytest.raises(VideoError, match=match):
        load_keypoints(path, JOINTS, frame_count=5)


@pytest.mark.parametrize("data,match", [
    ([{"frame": 0, "joint": "Head", "x": 1}], "entry 0: missing y"),
    ([{"frame": 0, "joint": "Head", "x": "1", "y": [2]}], "y is not a number"),
    ([["frame", 0]], "expected an object"),
    ({"frames": [{"frame": 0, "joints": {"Head": [1]}}]}, r"is not \[x, y\]"),
    ({"something": 1}, "expected a list"),
    ([{"frame": True, "joint": "Head", "x": 1, "y": 2}], "frame is not a number"),
])
def test_bad_json(tmp_path, data, match):
    path = tmp_path / "kp.json"
    path.write_text(json.dumps(data))
    with pytest.raises(VideoError, match=match):
        load_keypoints(path, JOINTS)


def test_unreadable_keypoint_files(tmp_path):
    with pytest.raises(VideoError, match="not found"):
        load_keypoints(tmp_path / "none.json", JOINTS)
    broken = tmp_path / "broken.json"
    broken.write_text("[{\"frame\": 0,")
    with pytest.raises(VideoError, match="not valid JSON"):
        load_keypoints(broken, JOINTS)
    sniffed = tmp_path / "keypoints.txt"  # no known suffix: JSON by its first character
    sniffed.write_text(json.dumps([{"frame": 0, "joint": "Head", "x": 1, "y": 2}]))
    assert load_keypoints(sniffed, JOINTS)[1][0, 2] == 1


# ------------------------------------------------------------------------------ tracks and combining


def test_tracks_evidence():
    track = np.array([[1.0, 2.0], [np.nan, np.nan], [5.0, 6.0]])
    points, conf = tracks_evidence({2: track, 0: np.zeros((2, 2))}, frame_count=3, joint_count=4,
                                   confidence={2: np.array([0.5, 1.0, 0.25])})
    assert points.shape == (3, 4, 2) and conf.shape == (3, 4)
    assert points[0, 2] == pytest.approx([1, 2]) and conf[0, 2] == 0.5
    assert np.isnan(points[1, 2]).all() and conf[1, 2] == 0  # no marker in that frame
    assert conf[2, 2] == 0.25
    assert conf[:2, 0].tolist() == [1, 1] and conf[2, 0] == 0  # a shorter track: padded as unknown
    assert (conf[:, [1, 3]] == 0).all() and np.isnan(points[:, [1, 3]]).all()
    scalar = tracks_evidence({1: track}, 3, 4, confidence=0.7)[1]
    assert scalar[[0, 2], 1] == pytest.approx([0.7, 0.7])
    with pytest.raises(VideoError, match="joint 7"):
        tracks_evidence({7: track}, 3, 4)
    with pytest.raises(VideoError, match="4 frames"):
        tracks_evidence({1: np.zeros((4, 2))}, 3, 4)
    with pytest.raises(VideoError, match="shape"):
        tracks_evidence({1: np.zeros((3, 3))}, 3, 4)


def test_combine_prefers_tracks_and_validates():
    count, joints = 3, 4
    kp_points = np.full((count, joints, 2), np.nan)
    kp_conf = np.zeros((count, joints))
    kp_points[:, 1] = [10.0, 10.0]
    kp_conf[:, 1] = 0.6
    kp_points[0, 2] = [50.0, 50.0]
    kp_conf[0, 2] = 0.9
    tracks = tracks_evidence({1: np.array([[20.0, 20.0], [np.nan, np.nan], [22.0, 22.0]])}, count, joints)
    sil = np.zeros((count, 60, 80), np.float32)
    sil[:, 20:40, 30:50] = 1
    ev = combine((W, H), 24.0, joints, keypoints=(kp_points, kp_conf), tracks=tracks, silhouettes=sil)
    assert isinstance(ev, Evidence2D) and ev.frame_count == count and ev.image_size == (W, H)
    assert ev.points[0, 1] == pytest.approx([20, 20]) and ev.confidence[0, 1] == 1  # the track wins
    assert ev.points[1, 1] == pytest.approx([10, 10]) and ev.confidence[1, 1] == 0.6  # no marker: keypoint
    assert ev.points[0, 2] == pytest.approx([50, 50])
    assert (ev.confidence[:, [0, 3]] == 0).all() and np.isnan(ev.points[:, [0, 3]]).all()
    assert ev.silhouettes.shape == (count, 60, 80)
    only_sil = combine((W, H), 24.0, joints, silhouettes=sil)
    assert only_sil.frame_count == count and (only_sil.confidence == 0).all()
    with pytest.raises(VideoError, match="No evidence given"):
        combine((W, H), 24.0, joints)
    with pytest.raises(VideoError, match="different numbers of frames"):
        combine((W, H), 24.0, joints, keypoints=(kp_points, kp_conf), silhouettes=sil[:2])
    with pytest.raises(VideoError, match="aspect"):
        combine((W, H), 24.0, joints, silhouettes=np.ones((count, 60, 60), np.float32))
    with pytest.raises(VideoError, match="No evidence at all"):
        combine((W, H), 24.0, joints, silhouettes=np.zeros_like(sil))
    with pytest.raises(VideoError, match="shapes"):
        combine((W, H), 24.0, joints + 1, keypoints=(kp_points, kp_conf))


def test_silhouettes_that_the_points_contradict_are_dropped():
    """A frame whose confident joints mostly lie off its mask loses the mask (a partial silhouette would
    pull the body onto itself); a frame whose joints lie in it, or with too few sure points, keeps it."""
    count, joints = 3, 6
    sil = np.zeros((count, 60, 80), np.float32)
    sil[:, 20:40, 30:50] = 1  # x 30–50, y 20–40 of 80×60: video pixels × W/80
    inside = np.array([[40.0, 30.0], [35.0, 25.0], [45.0, 35.0], [49.0, 39.0], [31.0, 21.0], [40.0, 22.0]])
    outside = inside + [25.0, 0.0]
    scale = np.array([W / 80, H / 60])
    points = np.stack([inside, outside, outside]) * scale
    conf = np.ones((count, joints))
    conf[2, 2:] = 0.2  # frame 2: only two sure points, not enough to overrule its mask
    ev = combine((W, H), 24.0, joints, keypoints=(points, conf), silhouettes=sil)
    assert ev.silhouettes_dropped == 1
    assert ev.silhouettes[0].sum() == sil[0].sum() and ev.silhouettes[2].sum() == sil[2].sum()
    assert not ev.silhouettes[1].any()
    assert sil[1].any()  # the caller's masks are left as they were
    assert combine((W, H), 24.0, joints, silhouettes=sil).silhouettes_dropped == 0  # nothing to check


def test_validate_messages():
    points = np.zeros((2, 3, 2))
    conf = np.ones((2, 3))

    def check(match, **changes):
        fields = dict(image_size=(W, H), fps=24.0, points=points, confidence=conf) | changes
        with pytest.raises(VideoError, match=match):
            Evidence2D(**fields).validate(3)

    assert Evidence2D((W, H), 24.0, points, conf).validate(3).frame_count == 2
    check("rig has 3", points=np.zeros((2, 4, 2)), confidence=np.ones((2, 4)))
    check("zero frames", points=np.zeros((0, 3, 2)), confidence=np.zeros((0, 3)))
    check("NaN", confidence=np.where(np.eye(2, 3) > 0, np.nan, 1.0))
    check(r"\[0, 1\]", confidence=conf * 2)
    check("not a number", points=np.where(np.eye(2, 3)[..., None] > 0, np.nan, points))
    check("shape", confidence=np.ones((2, 2)))
    check("No evidence at all", confidence=np.zeros((2, 3)))
    check("frame rate", fps=0.0)
    check("image size", image_size=(0, H))
    check("Silhouettes must have shape", silhouettes=np.ones((3, 60, 80), np.float32))
