"""The local inference backend of Generate Motion and its client (docs/ARCHITECTURE.md).

- `protocol` — the wire format shared by both sides: arrays as base64 little-endian + shape +
  dtype, rigs, meshes and motions; numpy and the standard library only.
- `jobs` — the job queue: one worker thread, progress, cancellation, results kept until fetched.
- `server` — the HTTP app (FastAPI + uvicorn) behind `kirin serve`; runs in the project's
  environment (torch, onnxruntime), never in Blender's Python.
- `client` — what the add-on uses: standard library (+ numpy, which Blender bundles) only; one HTTP
  call per feature. `results` — the answers it decodes and the errors it raises; `process` — starts,
  reuses and stops the backend process.

Nothing is imported here so that the client can be imported inside Blender without the server's
dependencies.
"""
