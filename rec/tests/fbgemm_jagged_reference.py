"""Runs the parity cases of test_ops_native.py in FBGEMM-GPU itself, in an interpreter that has
it: `python fbgemm_jagged_reference.py inputs.npz outputs.npz`. Imports neither ember nor
emberrec."""
import sys

import numpy as np
import torch
import fbgemm_gpu  # noqa: F401  (registers torch.ops.fbgemm)


def main(source, target):
    data = {name: torch.from_numpy(array) for name, array in np.load(source).items()}
    fbgemm = torch.ops.fbgemm
    x, offsets, y, y1 = data["values"], [data["offsets"]], data["y"], data["y1"]
    out = {
        "padded": fbgemm.jagged_to_padded_dense(x, offsets, [4], -2.0),
        "to_jagged": fbgemm.dense_to_jagged(y, offsets)[0],
        "add": fbgemm.jagged_dense_elementwise_add(x, offsets, y),
        "add_jagged": fbgemm.jagged_dense_elementwise_add_jagged_output(x, offsets, y)[0],
        "add2_jagged": fbgemm.jagged_dense_dense_elementwise_add_jagged_output(x, offsets, y, y1)[0],
        "mul": fbgemm.jagged_dense_elementwise_mul(x, offsets, y)[0],
        "bdvj": fbgemm.batched_dense_vec_jagged_2d_mul(data["v"], data["a"], offsets[0]),
    }
    lengths, ids, weights = data["lengths"], data["ids"], data["weights"]
    for k, t in enumerate(fbgemm.permute_2D_sparse_data(data["permute"], lengths, ids, weights)):
        out[f"permute{k}"] = t
    bucketed = fbgemm.block_bucketize_sparse_features(lengths.view(-1), ids, True, True, data["blocks"], 3, weights)
    for k, t in enumerate(bucketed):
        out[f"bucketize{k}"] = t
    out["cumsum"] = fbgemm.asynchronous_complete_cumsum(lengths.view(-1))
    np.savez(target, **{name: t.numpy() for name, t in out.items()})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
