"""Reading driving videos (and writing test videos) through PyAV.

The engine side of issue 8's video input. PyAV (`av`, FFmpeg bindings) lives in the backend
environment and is imported lazily inside the functions, so importing this module needs only numpy.
Everything that can go wrong with a user's file is a `VideoError` whose message is meant for
Blender's status bar.

Frames are numbered from 0 in decoding order (presentation order, as FFmpeg returns them); a clip
read with `start`, `stop` and `stride` keeps the source numbers of its frames in `VideoClip.indices`
and its own frame rate (`source_fps / stride`) in `VideoClip.fps`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np


class VideoError(ValueError):
    """Bad video input, with a message for the user (unreadable file, not a video, zero frames...)."""


@dataclass
class VideoClip:
    frames: np.ndarray  # (T,H,W,3) uint8 RGB
    fps: float  # of the returned frames (source fps / stride)
    source_fps: float
    indices: np.ndarray  # (T,) source frame numbers

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels of the returned frames."""
        return int(self.frames.shape[2]), int(self.frames.shape[1])

    @property
    def frame_count(self) -> int:
        return int(self.frames.shape[0])


def _av():
    try:
        import av
    except ImportError as exc:  # pragma: no cover - the backend environment has it
        raise VideoError("Reading video needs PyAV in the backend environment "
                         "(pip install av==18.1.0)") from exc
    return av


def _open(path: str | Path):
    """An opened input container with at least one video stream (the caller closes it)."""
    path = Path(path)
    if not path.exists():
        raise VideoError(f"Video file not found: {path}")
    if not path.is_file():
        raise VideoError(f"Not a video file: {path} is a folder")
    if path.stat().st_size == 0:
        raise VideoError(f"Video file {path.name} is empty (0 bytes)")
    av = _av()
    try:
        container = av.open(str(path))
    except av.FFmpegError as exc:
        raise VideoError(f"Cannot read {path.name}: not a video FFmpeg understands ({exc.strerror})") from exc
    except OSError as exc:
        raise VideoError(f"Cannot read {path.name}: {exc}") from exc
    if not container.streams.video:
        container.close()
        raise VideoError(f"{path.name} has no video stream (not a video, or a video with zero frames)")
    return container


def _stream_fps(stream) -> float:
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        if rate and float(rate) > 0:
            return float(rate)
    return 0.0


def _count_frames(container, stream) -> int:
    """Frames of the first video stream: the header's count, else one per demuxed packet (no decoding;
    it leaves the container at its end)."""
    if stream.frames and stream.frames > 0:
        return int(stream.frames)
    count = 0
    for packet in container.demux(stream):
        if packet.size and packet.pts is not None:
            count += 1
    return count


def probe_video(path: str | Path) -> dict:
    """Facts about a video without decoding it: frames, fps, width, height, duration (s), codec.
    A video stream without frames reports frames 0 (read_video then raises)."""
    container = _open(path)
    try:
        stream = container.streams.video[0]
        fps = _stream_fps(stream)
        try:
            frames = _count_frames(container, stream)
        except Exception as exc:  # a damaged index: FFmpeg errors while demuxing
            raise VideoError(f"Cannot read {Path(path).name}: the video is damaged ({exc})") from exc
        if stream.duration is not None and stream.time_base is not None and stream.duration > 0:
            duration = float(stream.duration * stream.time_base)
        elif container.duration:
            duration = container.duration / 1_000_000
        else:
            duration = frames / fps if fps > 0 else 0.0
        return {
            "frames": frames,
            "fps": fps,
            "width": int(stream.codec_context.width),
            "height": int(stream.codec_context.height),
            "duration": duration,
            "codec": stream.codec_context.name,
        }
    finally:
        container.close()


def _scaled_size(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    if max_side is None or max(width, height) <= max_side:
        return width, height
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def read_video(path: str | Path, start: int = 0, stop: int | None = None, stride: int = 1,
               max_side: int | None = None) -> VideoClip:
    """Decode source frames start, start+stride, ... (< stop; None: to the end) as RGB.

    `max_side` downscales (never upscales) so the longer side is at most this many pixels. A range
    that starts outside the clip, ends past it, or is empty is a VideoError, as is a video that
    decodes to zero frames.
    """
    if int(stride) != stride or stride < 1:
        raise VideoError(f"Frame stride must be a whole number ≥ 1, got {stride}")
    if int(start) != start or start < 0:
        raise VideoError(f"Start frame must be a whole number ≥ 0, got {start}")
    if stop is not None and (int(stop) != stop or stop <= start):
        raise VideoError(f"Frame range {start}–{stop} is empty: the end must come after the start")
    if max_side is not None and max_side < 1:
        raise VideoError(f"max_side must be ≥ 1, got {max_side}")
    start, stride = int(start), int(stride)
    name = Path(path).name
    container = _open(path)
    try:
        stream = container.streams.video[0]
        source_fps = _stream_fps(stream)
        known = int(stream.frames) if stream.frames else 0
        if known == 0 and stream.duration == 0:
            raise VideoError(f"{name} has zero frames")
        if known and start >= known:
            raise VideoError(f"Frame range {start}–{stop if stop is not None else known} is outside the clip "
                             f"({name} has {known} frames, 0–{known - 1})")
        if known and stop is not None and stop > known:
            raise VideoError(f"Frame range {start}–{stop} is outside the clip ({name} has {known} frames)")
        width, height = _scaled_size(stream.codec_context.width, stream.codec_context.height, max_side)
        frames, indices, index = [], [], -1
        try:
            for frame in container.decode(stream):
                index += 1
                if stop is not None and index >= stop:
                    break
                if index < start or (index - start) % stride:
                    continue
                frames.append(frame.to_ndarray(format="rgb24", width=width, height=height,
                                               interpolation="AREA"))
                indices.append(index)
        except Exception as exc:  # FFmpeg decoding errors deep in a damaged file
            if not frames:
                raise VideoError(f"Cannot decode {name}: {exc}") from exc
        total = index + 1
        if total == 0:
            raise VideoError(f"{name} has zero frames")
        if not frames:
            raise VideoError(f"Frame range {start}–{stop if stop is not None else total} is outside the clip "
                             f"({name} has {total} frames)")
        if stop is not None and stop > total and not known:
            raise VideoError(f"Frame range {start}–{stop} is outside the clip ({name} has {total} frames)")
    finally:
        container.close()
    if source_fps <= 0:
        source_fps = 24.0  # a container without timing (an image sequence); Blender's default
    return VideoClip(frames=np.stack(frames), fps=source_fps / stride, source_fps=source_fps,
                     indices=np.asarray(indices, dtype=np.int64))


def write_video(path: str | Path, frames: np.ndarray, fps: float, codec: str | None = None,
                quality: int = 18) -> Path:
    """Write (T,H,W,3) uint8 RGB frames as a video: H.264 (x264, `quality` = CRF, lower is better)
    where FFmpeg has it, else MPEG-4 Part 2. The container follows the suffix (.mp4, .mkv, .avi,
    .mov). Odd sizes are stored as 4:4:4 (H.264) rather than cropped."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.shape[0] == 0:
        raise VideoError(f"write_video wants (T,H,W,3) RGB frames with T ≥ 1, got shape {frames.shape}")
    if not np.isfinite(fps) or fps <= 0:
        raise VideoError(f"Frame rate must be positive, got {fps}")
    if frames.dtype != np.uint8:
        frames = np.clip(np.rint(frames), 0, 255).astype(np.uint8)
    av = _av()
    path = Path(path)
    height, width = frames.shape[1:3]
    if codec is None:
        codec = "h264" if "h264" in av.codecs_available else "mpeg4"
    rate = Fraction(float(fps)).limit_denominator(1001)
    odd = width % 2 or height % 2
    container = av.open(str(path), mode="w")
    try:
        stream = container.add_stream(codec, rate=rate)
        stream.width, stream.height = width, height
        if codec in ("h264", "libx264"):
            stream.pix_fmt = "yuv444p" if odd else "yuv420p"
            stream.options = {"crf": str(int(quality)), "preset": "medium"}
        else:
            if odd:
                container.close()
                raise VideoError(f"{codec} needs an even frame size, got {width}×{height}")
            stream.pix_fmt = "yuv420p"
            stream.bit_rate = int(max(1_000_000, width * height * float(fps) * 12 / max(1, quality)))
        for image in frames:
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    finally:
        container.close()
    return path


def scene_frame_map(clip_fps: float, scene_fps: float, count: int) -> np.ndarray:
    """Map a clip of `count` frames at `clip_fps` onto the scene's frame rate.

    Returns, for each scene frame 0, 1, ... N−1 that falls within the clip's duration, the
    fractional clip frame shown at that time (`k · clip_fps / scene_fps`, in [0, count−1]); interpolate
    the per-clip-frame result at these positions. N = ⌊(count−1) · scene_fps / clip_fps⌋ + 1.
    """
    if not (np.isfinite(clip_fps) and clip_fps > 0 and np.isfinite(scene_fps) and scene_fps > 0):
        raise VideoError(f"Frame rates must be positive (clip {clip_fps}, scene {scene_fps})")
    if count <= 0:
        raise VideoError("The clip has zero frames")
    ratio = clip_fps / scene_fps
    n = int(np.floor((count - 1) / ratio + 1e-9)) + 1
    return np.minimum(np.arange(n, dtype=np.float64) * ratio, count - 1)
