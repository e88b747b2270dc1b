"""The files a backend may read: only those under the folders it was started to allow (`kirin serve
--allow-dir`), each kind of file no larger than its cap.

A request names files by path (a video, a keypoints file, a mask folder, a reference image). Behind
`--host 0.0.0.0` that would make the backend a file-reading service for whoever has the token, so a
path is resolved (symbolic links and `..` followed) and refused unless it lies under an allowed
folder. The refusal is one message whatever the path is: it never says whether it exists or what it
is. Inside an allowed folder the messages are specific (the folder is the user's own), and they never
quote a file's contents.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from ...kirin_addon.backend.protocol import MAX_IMAGE_BYTES, ProtocolError

MIB = 1024 * 1024


@dataclass(frozen=True)
class FileLimits:
    """The largest file of each kind a request may name, in bytes (a mask: each image of the folder)."""

    image: int = MAX_IMAGE_BYTES
    video: int = 8 * 1024 * MIB
    keypoints: int = 64 * MIB
    mask: int = 32 * MIB
    masks: int = 200_000  # images one mask folder may hold

    def of(self, kind: str) -> int:
        return int(getattr(self, kind))


def _resolved(path: str | os.PathLike) -> str | None:
    """The absolute path with `~`, `..` and symbolic links resolved; None for a path no file can have
    (an embedded NUL, a name too long...)."""
    try:
        return os.path.realpath(os.path.expanduser(os.fspath(path)))
    except (OSError, ValueError, TypeError):
        return None


class AllowedFiles:
    """The folders a backend reads request files from, and the caps on their sizes. No folder: every
    path is refused (a request may still upload its reference image)."""

    def __init__(self, folders: Iterable[str | os.PathLike] = (), limits: FileLimits | None = None):
        resolved = (_resolved(folder) for folder in folders)
        self.folders = tuple(dict.fromkeys(f for f in resolved if f))
        self.limits = limits or FileLimits()

    def __repr__(self) -> str:
        return f"AllowedFiles({list(self.folders)!r})"

    def inside(self, path: str | os.PathLike, what: str) -> str:
        """`path` resolved, when it lies under an allowed folder; the one refusal otherwise."""
        full = _resolved(path)
        if full is not None:
            compared = os.path.normcase(full)  # Windows: names differ in case only
            for folder in map(os.path.normcase, self.folders):
                if compared == folder or compared.startswith(folder.rstrip(os.sep) + os.sep):
                    return full
        raise ProtocolError(
            f"{what}: the backend reads files only from the folders it was started to allow, and this "
            "path is not in one of them (start it with --allow-dir FOLDER, or send the file itself where "
            "the request can carry it)."
        )

    def file(self, path: str | os.PathLike, kind: str, what: str) -> str:
        """The resolved path of a regular file of `kind` (image, video, keypoints, mask) under an
        allowed folder, no larger than its cap; ProtocolError otherwise."""
        full = self.inside(path, what)
        name = os.path.basename(full)
        try:
            info = os.stat(full)
        except FileNotFoundError:
            raise ProtocolError(f"{what}: {name} does not exist (on the backend's machine).") from None
        except OSError as exc:
            raise ProtocolError(f"{what}: cannot read {name} ({exc.strerror or 'unreadable'}).") from None
        if not os.path.isfile(full):
            raise ProtocolError(f"{what}: {name} is not a file.")
        cap = self.limits.of(kind)
        if info.st_size > cap:
            raise ProtocolError(f"{what}: {name} is {info.st_size / MIB:.1f} MiB; at most "
                                f"{cap / MIB:.0f} MiB.")
        return full

    def read(self, path: str | os.PathLike, kind: str, what: str) -> bytes:
        """The bytes of a checked file, read no further than its cap (it may grow after the check)."""
        full = self.file(path, kind, what)
        cap = self.limits.of(kind)
        try:
            with open(full, "rb") as handle:
                data = handle.read(cap + 1)
        except OSError as exc:
            raise ProtocolError(f"{what}: cannot read {os.path.basename(full)} "
                                f"({exc.strerror or 'unreadable'}).") from None
        if len(data) > cap:
            raise ProtocolError(f"{what}: {os.path.basename(full)} is more than {cap / MIB:.0f} MiB.")
        return data

    def folder(self, path: str | os.PathLike, what: str) -> str:
        """The resolved path of a folder under an allowed folder; ProtocolError otherwise."""
        full = self.inside(path, what)
        if not os.path.isdir(full):
            raise ProtocolError(f"{what}: the folder {os.path.basename(full) or full} does not exist on the "
                                "backend's machine.")
        return full

    def mask_files(self, folder: str, what: str) -> list[str]:
        """The PNG mask images of an allowed folder (one per video frame from frame 0, in name order),
        at most `limits.masks` of them; each is checked (`file(..., "mask", ...)`) when it is read."""
        full = self.folder(folder, what)
        names = []
        with os.scandir(full) as entries:
            for entry in entries:
                if entry.name.lower().endswith(".png"):
                    names.append(entry.name)
                    if len(names) > self.limits.masks:
                        raise ProtocolError(f"{what}: the folder holds more than {self.limits.masks} "
                                            "mask images.")
        return [os.path.join(full, n) for n in sorted(names)]
