"""TorchRec's modules: embedding collections and their configs, MLP, cross networks, DeepFM."""
