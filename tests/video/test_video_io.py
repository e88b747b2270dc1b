"""Reading driving videos through PyAV: ranges, strides, downscaling, probing and bad files."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.video.video_io import (
    VideoClip,
    VideoError,
    probe_video,
    read_video,
    scene_frame_map,
    write_video,
)

from assets_support import ASSETS

av = pytest.importorskip("av")

H, W, T = 120, 160, 20


def blob_frames(count: int = T) -> tuple[np.ndarray, np.ndarray]:
    """A red ellipse moving over a smooth static texture: frames (T,H,W,3) uint8 and true masks."""
    yy, xx = np.mgrid[0:H, 0:W]
    background = np.stack([90 + 40 * np.sin(xx / 9.0), 110 + 40 * np.cos(yy / 7.0),
                           120 + 30 * np.sin((xx + yy) / 13.0)], -1)
    frames, masks = [], []
    for t in range(count):
        cx, cy = 25 + 5.5 * t, 60 + 20 * np.sin(t / 4)
        mask = ((xx - cx) / 16) ** 2 + ((yy - cy) / 11) ** 2 <= 1
        frame = background.copy()
        frame[mask] = (230, 40, 40)
        frames.append(frame)
        masks.append(mask)
    return np.clip(frames, 0, 255).astype(np.uint8), np.array(masks)


@pytest.fixture(scope="module")
def blob_video(tmp_path_factory):
    frames, masks = blob_frames()
    path = write_video(tmp_path_factory.mktemp("video") / "blob.mp4", frames, 24)
    return path, frames, masks


def test_round_trip_keeps_frames_fps_and_content(blob_video):
    path, frames, _ = blob_video
    clip = read_video(path)
    assert isinstance(clip, VideoClip)
    assert clip.frames.shape == (T, H, W, 3) and clip.frames.dtype == np.uint8
    assert clip.frame_count == T and clip.size == (W, H)
    assert clip.fps == pytest.approx(24) and clip.source_fps == pytest.approx(24)
    assert (clip.indices == np.arange(T)).all()
    error = np.abs(clip.frames.astype(int) - frames.astype(int))
    assert error.mean() < 4 and np.median(error) <= 2  # lossy H.264 at CRF 18
    # RGB order, not BGR: the blob stays red
    blob = clip.frames[5][blob_frames()[1][5]].mean(0)
    assert blob[0] > 180 and blob[2] < 90


def test_probe_reports_without_decoding(blob_video):
    info = probe_video(blob_video[0])
    assert info["frames"] == T and info["fps"] == pytest.approx(24)
    assert (info["width"], info["height"]) == (W, H)
    assert info["duration"] == pytest.approx(T / 24, abs=0.05)
    assert info["codec"] in ("h264", "mpeg4")


def test_range_stride_and_max_side(blob_video):
    path, frames, _ = blob_video
    clip = read_video(path, start=3, stop=15, stride=4)
    assert list(clip.indices) == [3, 7, 11]
    assert clip.fps == pytest.approx(6) and clip.source_fps == pytest.approx(24)
    assert np.abs(clip.frames.astype(int) - frames[[3, 7, 11]].astype(int)).mean() < 4
    small = read_video(path, stop=2, max_side=80)
    assert small.frames.shape == (2, 60, 80, 3) and small.size == (80, 60)
    assert read_video(path, max_side=1000).size == (W, H)  # never upscales
    assert read_video(path, start=T - 1).frame_count == 1


@pytest.mark.parametrize("suffix,codec", [(".avi", "mpeg4"), (".mkv", None)])
def test_other_containers_and_codecs(tmp_path, suffix, codec):
    frames, _ = blob_frames(6)
    path = write_video(tmp_path / f"clip{suffix}", frames, 30, codec=codec)
    info = probe_video(path)
    assert info["frames"] == 6 and info["fps"] == pytest.approx(30)
    clip = read_video(path, stride=2)
    assert list(clip.indices) == [0, 2, 4] and clip.fps == pytest.approx(15)
    assert np.abs(clip.frames.astype(int) - frames[::2].astype(int)).mean() < 6


def test_odd_frame_size(tmp_path):
    frames, _ = blob_frames(3)
    path = write_video(tmp_path / "odd.mp4", frames[:, :119, :159], 25)
    assert read_video(path).size == (159, 119)


def test_bad_files_are_clear_errors(tmp_path, blob_video):
    with pytest.raises(VideoError, match="not found"):
        read_video(tmp_path / "missing.mp4")
    with pytest.raises(VideoError, match="not found"):
        probe_video(tmp_path / "missing.mp4")
    text = tmp_path / "notes.mp4"
    text.write_text("these are my notes, not a video\n")
    with pytest.raises(VideoError, match="not a video"):
        read_video(text)
    with pytest.raises(VideoError, match="not a video"):
        probe_video(text)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(VideoError, match="empty"):
        read_video(empty)
    with pytest.raises(VideoError, match="folder"):
        read_video(tmp_path)


def _zero_frame_video(path, codec="mpeg4"):
    container = av.open(str(path), mode="w")
    stream = container.add_stream(codec, rate=25)
    stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
    container.start_encoding()
    container.close()
    return path


def test_zero_frames(tmp_path):
    avi = _zero_frame_video(tmp_path / "zero.avi")  # AVI keeps an empty video stream
    assert probe_video(avi)["frames"] == 0
    with pytest.raises(VideoError, match="zero frames"):
        read_video(avi)
    mp4 = _zero_frame_video(tmp_path / "zero.mp4", "h264")  # MP4 drops it: no video stream at all
    with pytest.raises(VideoError, match="no video stream"):
        read_video(mp4)
    with pytest.raises(VideoError):
        write_video(tmp_path / "none.mp4", np.zeros((0, H, W, 3), np.uint8), 24)


def test_range_outside_the_clip(blob_video):
    path = blob_video[0]
    with pytest.raises(VideoError, match="outside the clip"):
        read_video(path, start=T)
    with pytest.raises(VideoError, match="outside the clip"):
        read_video(path, start=5, stop=T + 5)
    with pytest.raises(VideoError, match="empty"):
        read_video(path, start=5, stop=5)
    with pytest.raises(VideoError, match="stride"):
        read_video(path, stride=0)
    with pytest.raises(VideoError, match="Start"):
        read_video(path, start=-1)


def test_scene_frame_map():
    same = scene_frame_map(24, 24, 10)
    assert (same == np.arange(10)).all()
    slower = scene_frame_map(20, 24, 5)  # 4 clip frames of 1/20 s = 0.2 s → scene frames 0..4
    assert slower == pytest.approx([0, 20 / 24, 40 / 24, 60 / 24, 80 / 24])
    faster = scene_frame_map(60, 30, 7)  # every second clip frame
    assert faster == pytest.approx([0, 2, 4, 6])
    assert scene_frame_map(30, 24, 1) == pytest.approx([0])
    with pytest.raises(VideoError):
        scene_frame_map(0, 24, 5)
    with pytest.raises(VideoError):
        scene_frame_map(24, 24, 0)


def test_cockatoo_probe_and_a_few_frames():
    path = ASSETS / "video_cockatoo" / "cockatoo.mp4"
    if not path.is_file():
        pytest.skip("../shared/assets/video_cockatoo/cockatoo.mp4 is not present")
    info = probe_video(path)
    assert info["frames"] > 100 and info["fps"] > 0 and info["width"] > info["height"] > 0
    clip = read_video(path, start=10, stop=22, stride=4, max_side=160)
    assert list(clip.indices) == [10, 14, 18]
    assert clip.size == (160, round(160 * info["height"] / info["width"]))
    assert clip.fps == pytest.approx(info["fps"] / 4)
    assert clip.frames.std() > 10  # real picture content, not a blank decode
