"""Training data shared by the networks: the feature cache, batches, rest-pose augmentation."""
