"""TorchRec's inference helpers (`emberrec.inference.modules.quantize_embeddings`). TorchRec's
model packaging and C++ serving (torch.deploy) are not here."""
