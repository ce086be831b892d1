"""TorchRec's models: DLRM."""
