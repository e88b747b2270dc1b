"""Frozen condition encoders of the motion model (MDM style): `text` (all-MiniLM-L6-v2 token features
and sentence vectors), `image` (EfficientNet-Lite0 or a local ONNX encoder), `image_files` (reading
pictures), and `cache` (one encoder of each kind per process).

Nothing heavy is imported at module import: torch, tokenizers, safetensors, onnxruntime and Pillow are
imported where they are first needed.
"""
