"""Retargeting: automatic joint mapping between rigs and moving a motion between them."""
