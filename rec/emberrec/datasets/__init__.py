"""TorchRec's dataset helpers (`Batch`)."""
