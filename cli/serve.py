"""`kirin serve`: the local inference backend of Generate Motion (HTTP + token); its parser and handler."""

from __future__ import annotations

import argparse


def _cmd_serve(args: argparse.Namespace) -> int:
    # Imported lazily: the server needs FastAPI, uvicorn and torch, which no other command does.
    from ..models.server.app import serve

    return serve(args)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register `serve`."""
    serve = sub.add_parser("serve", help="run the local inference backend of Generate Motion (HTTP + token)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1; 0.0.0.0 for a GPU box others reach)")
    serve.add_argument("--port", type=int, default=0, help="port (default 0: a free one, printed)")
    serve.add_argument("--token-file", help="where to write the session token (0600; default: a private file "
                                            "under $XDG_RUNTIME_DIR or the temp folder)")
    serve.add_argument("--url-file", help="write {url, pid, token_file} as JSON here once listening")
    serve.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                       help="cuda (onnxruntime-gpu), cpu, or auto (CUDA when present)")
    serve.add_argument("--threads", type=int, default=0, help="CPU threads for the model (0: the default)")
    serve.add_argument("--model", help="motion model folder (default: the shipped one)")
    serve.add_argument("--pose-model", dest="pose_model", help="pose prior folder (default: the shipped one)")
    serve.add_argument("--bank", default="default",
                       help="motion bank to retrieve from: 'default' (when built), a cache folder or 'none'")
    serve.add_argument("--max-jobs", type=int, default=256,
                       help="jobs queued, running or done and not yet fetched, at most")
    serve.add_argument("--job-ttl", type=float, default=900.0,
                       help="seconds a finished job (its result, a cancel, an error) is kept (default 900)")
    serve.add_argument("--allow-dir", action="append", metavar="FOLDER",
                       help="a folder whose files requests may name (videos, keypoints, masks, images); "
                            "repeatable; default: none, a request then reads only what it uploads")
    serve.add_argument("--max-connections", type=int, default=256,
                       help="open client connections at most (fewer when the open-file limit is lower)")
    serve.add_argument("--parent-pid", type=int,
                       help="shut down when this process ends (the add-on's Blender)")
    serve.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    serve.set_defaults(func=_cmd_serve)
