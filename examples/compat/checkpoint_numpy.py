"""A checkpoint holding NumPy values beside the weights (normalisation statistics, the best
score), saved and loaded back as PyTorch 2.6+ scripts must: `weights_only` loading refuses the
NumPy globals until `torch.serialization.safe_globals` allows them."""
import io
import pickle

import numpy as np
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
checkpoint = {
    "model": model.state_dict(),
    "input_mean": np.array([0.5, -1.0, 2.0], dtype=np.float32),
    "best_val_loss": np.float64(0.125),
    "epoch": 12,
}
buffer = io.BytesIO()
torch.save(checkpoint, buffer)

buffer.seek(0)
try:
    torch.load(buffer)
    raise AssertionError("NumPy values loaded without being allowed")
except pickle.UnpicklingError as e:
    print("refused as expected:", str(e).split(": ", 1)[1][:80], "...")

NUMPY_GLOBALS = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, np._core.multiarray.scalar,
                 type(np.dtype(np.float32)), type(np.dtype(np.float64))]
buffer.seek(0)
with torch.serialization.safe_globals(NUMPY_GLOBALS):
    loaded = torch.load(buffer)

restored = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
restored.load_state_dict(loaded["model"])
x = torch.from_numpy(np.ones((2, 3), dtype=np.float32) - loaded["input_mean"])
assert (restored(x) - model(x)).abs().max().item() == 0.0
assert loaded["best_val_loss"] == 0.125 and loaded["epoch"] == 12
print("restored at epoch", loaded["epoch"], "best loss", float(loaded["best_val_loss"]))
