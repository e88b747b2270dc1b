"""The backend process behind `kirin serve` (FastAPI + uvicorn, torch): the HTTP app, the job queue, and one
module per feature with its checked requests and the work on them. Never imported inside Blender."""
