"""The backend reads only what a request uploads or files under the folders it was allowed, each no
larger than its cap; a path outside gets one refusal that tells nothing about it, and no error quotes
a file's contents (issue 18, defect 2)."""

from __future__ import annotations

import base64
import os

import pytest
from stub_support import call, stub_backend

from kirin.kirin_addon.backend.protocol import ProtocolError, generate_to_json
from kirin.kirin_addon.backend.protocol_video import extract_to_json
from kirin.kirin_addon.core.rig import RigBuilder
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.video.request import ExtractRequest
from kirin.models.server.files import AllowedFiles, FileLimits

SECRET = "sk-live-SECRET"
REFUSED = "the backend reads files only from the folders it was started to allow"


def small_rig():
    builder = RigBuilder()
    builder.add("hips", None, (0, 0, 1), (0, 0, 1.2))
    builder.add("leg.L", "hips", (0.2, 0, 1), (0.2, 0, 0.1))
    builder.add("leg.R", "hips", (-0.2, 0, 1), (-0.2, 0, 0.1))
    return builder.build()


def outside_paths(tmp_path):
    """Paths outside the allowed folder `tmp_path / "allowed"`: a secret file, a missing one, a
    folder, a link from inside the folder to the secret, a climb out of it, a name no file can have."""
    allowed = tmp_path / "allowed"
    allowed.mkdir(exist_ok=True)
    secret = tmp_path / "shadow"
    secret.write_text(SECRET)
    link = allowed / "link.png"
    if not link.exists():
        link.symlink_to(secret)
    return {
        "secret": str(secret),
        "missing": str(tmp_path / "nowhere" / "x.png"),
        "folder": str(tmp_path),
        "link": str(link),
        "climb": str(allowed / ".." / "shadow"),
        "nul": str(allowed / "a\0b"),
        "etc": "/etc/shadow",
    }


def test_a_path_outside_the_allowed_folders_gets_one_refusal_whatever_it_is(tmp_path):
    files = AllowedFiles([tmp_path / "allowed"])
    messages = set()
    for path in outside_paths(tmp_path).values():
        for kind in ("image", "video", "keypoints", "mask"):
            with pytest.raises(ProtocolError) as info:
                files.file(path, kind, "the file")
            messages.add(str(info.value))
        with pytest.raises(ProtocolError) as info:
            files.folder(path, "the file")
        messages.add(str(info.value))
    assert len(messages) == 1 and REFUSED in messages.pop()
    # Nothing is allowed unless a folder was given.
    with pytest.raises(ProtocolError, match="only from the folders"):
        AllowedFiles().file(str(tmp_path / "allowed" / "link.png"), "image", "image_path")


def test_inside_an_allowed_folder_files_are_checked_and_capped(tmp_path):
    folder = tmp_path / "allowed"
    folder.mkdir()
    (folder / "clip.mp4").write_bytes(b"x" * 2000)
    (folder / "sub").mkdir()
    files = AllowedFiles([folder], FileLimits(video=1000, image=3000))
    with pytest.raises(ProtocolError, match="at most"):
        files.file(folder / "clip.mp4", "video", "video_path")
    assert files.read(folder / "clip.mp4", "image", "image_path") == b"x" * 2000
    with pytest.raises(ProtocolError, match="does not exist"):
        files.file(folder / "none.mp4", "video", "video_path")
    with pytest.raises(ProtocolError, match="not a file"):
        files.file(folder / "sub", "video", "video_path")
    climbed = str(folder / "sub" / ".." / "clip.mp4")
    assert files.file(climbed, "image", "x") == str(folder.resolve() / "clip.mp4")


def test_a_mask_folder_is_listed_but_each_mask_is_checked_when_read(tmp_path):
    folder = tmp_path / "allowed"
    masks = folder / "masks"
    masks.mkdir(parents=True)
    (masks / "0001.png").write_bytes(b"png")
    (masks / "0002.png").symlink_to(tmp_path / "outside.png")
    (tmp_path / "outside.png").write_text(SECRET)
    files = AllowedFiles([folder])
    listed = files.mask_files(str(masks), "silhouettes")
    assert [os.path.basename(p) for p in listed] == ["0001.png", "0002.png"]
    assert files.file(listed[0], "mask", "silhouettes").endswith("0001.png")
    with pytest.raises(ProtocolError, match="only from the folders"):
        files.file(listed[1], "mask", "silhouettes")  # the link leads out of the folder


def _generate(image_path=None):
    return generate_to_json(small_rig(), GenerateRequest("a walk", image=image_path, frames=8))


def test_over_http_no_path_reveals_whether_it_exists_and_no_file_is_echoed(tmp_path):
    paths = outside_paths(tmp_path)
    with stub_backend(tmp_path, allow_dirs=(tmp_path / "allowed",)) as backend:
        answers = set()
        for name, path in paths.items():
            if name == "nul":
                continue  # JSON carries it, but the client's encoder is not what is tested here
            status, answer = call(backend, "POST", "/v1/jobs/generate", _generate(path))
            assert status == 422, (name, answer)
            answers.add(answer["error"])
            body = extract_to_json(small_rig(), ExtractRequest(path, keypoints=path, silhouettes=path))
            status, answer = call(backend, "POST", "/v1/jobs/extract", body)
            assert status == 422 and REFUSED in answer["error"], (name, answer)
        assert len(answers) == 1 and REFUSED in answers.pop()
        assert SECRET not in str(answers)
        # The health answer says nothing of the allowed folders either.
        assert str(tmp_path) not in str(call(backend, "GET", "/v1/health")[1])


@pytest.mark.parametrize("layout", ["json list", "json record", "csv cell", "csv joint", "csv header"])
def test_a_bad_keypoints_file_is_refused_without_quoting_it(tmp_path, layout):
    pytest.importorskip("av")
    from video_support import synthetic_files

    allowed = tmp_path / "allowed"
    files = synthetic_files(allowed, frames=4)
    texts = {
        "json list": f'["{SECRET}"]',
        "json record": f'[{{"frame": 0, "joint": "hips", "x": "{SECRET}", "y": 1}}]',
        "csv cell": f"frame,joint,x,y,confidence\n0,hips,{SECRET},1,1\n",
        "csv joint": f"frame,joint,x,y,confidence\n0,{SECRET},1,1,1\n",
        "csv header": f"frame,{SECRET},x,y\n0,hips,1,1\n",
    }
    keypoints = allowed / ("k.json" if layout.startswith("json") else "k.csv")
    keypoints.write_text(texts[layout])
    with stub_backend(tmp_path, allow_dirs=(allowed,)) as backend:
        body = extract_to_json(small_rig(), ExtractRequest(files["video"], keypoints=keypoints))
        status, answer = call(backend, "POST", "/v1/jobs/extract", body)
    assert status == 422 and answer["error"].startswith(f"keypoints_path: {keypoints.name}")
    assert "SECRET" not in answer["error"] and "sk-live" not in answer["error"]


def test_an_image_past_its_cap_is_refused_before_it_is_read(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    big = allowed / "big.png"
    with open(big, "wb") as handle:  # sparse: 65 MiB on paper, nothing on disk
        handle.truncate(65 * 1024 * 1024)
    with stub_backend(tmp_path, allow_dirs=(allowed,)) as backend:
        status, answer = call(backend, "POST", "/v1/jobs/generate", _generate(str(big)))
        assert status == 422 and "65.0 MiB; at most 64 MiB" in answer["error"], answer
        assert call(backend, "GET", "/v1/jobs")[1] == []


def test_kirin_serve_takes_allowed_folders_and_the_add_on_allows_home_and_temp(tmp_path):
    from kirin.cli.main import build_parser
    from kirin.kirin_addon.backend.process import BackendLaunch, local_folders

    args = build_parser().parse_args(["serve", "--allow-dir", "/a", "--allow-dir", "/b", "--job-ttl", "60"])
    assert args.allow_dir == ["/a", "/b"] and args.job_ttl == 60.0
    assert build_parser().parse_args(["serve"]).allow_dir is None  # default: no folder
    line = BackendLaunch().arguments("python", tmp_path / "token", tmp_path / "url.json")
    allowed = [line[i + 1] for i, word in enumerate(line) if word == "--allow-dir"]
    assert allowed == list(local_folders()) and os.path.realpath(os.path.expanduser("~")) in allowed
    line = BackendLaunch(allow_dirs=()).arguments("python", tmp_path / "token", tmp_path / "url.json")
    assert "--allow-dir" not in line


def test_the_client_uploads_a_reference_image_instead_of_naming_it(tmp_path):
    from kirin.kirin_addon.backend.client import BackendClient

    image = tmp_path / "pose.png"
    image.write_bytes(b"\x89PNG not really")
    sent = {}

    class Recording(BackendClient):
        def submit(self, body):
            sent.update(body)
            return {"id": "0" * 16, "state": "queued", "progress": 0.0, "message": "queued"}

    Recording("http://127.0.0.1:9", "token").generate(small_rig(), GenerateRequest("a", image=str(image)))
    assert "image_path" not in sent and sent["image_data"]
    assert base64.b64decode(sent["image_data"]) == image.read_bytes()


def test_an_image_of_too_many_pixels_is_refused_before_it_is_decoded(tmp_path):
    import struct
    import zlib

    def chunk(kind: bytes, payload: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + payload))
        return struct.pack(">I", len(payload)) + kind + payload + crc

    # A PNG header that claims 8000×6000 pixels (the pixels themselves are never read).
    header = struct.pack(">IIBBBBB", 8000, 6000, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 100))
    with stub_backend(tmp_path) as backend:
        body = generate_to_json(small_rig(), GenerateRequest("a walk", image=png, frames=8))
        status, answer = call(backend, "POST", "/v1/jobs/generate", body)
    assert status == 422 and "8000×6000 pixels; at most 40 million" in answer["error"], answer
