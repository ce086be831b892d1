"""`nn.utils.rnn` packing and recurrent layers over packed batches, against hand-computed
values and PyTorch where installed."""
import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils.rnn import (PackedSequence, invert_permutation, pack_padded_sequence, pack_sequence,
                                pad_packed_sequence, pad_sequence, unpack_sequence, unpad_sequence)
from nn_helpers import copy_weights, to_ember, to_np, to_torch


def _padded():
    """Three sequences of lengths 2, 4, 3 (steps numbered 1.. so packing is easy to read),
    padded with -1 into (T=4, B=3, 1)."""
    x = -np.ones((4, 3, 1), dtype=np.float32)
    for b, n in enumerate([2, 4, 3]):
        x[:n, b, 0] = 10 * (b + 1) + np.arange(1, n + 1)
    return ember.from_numpy(x)


def test_pack_unsorted_batch_by_hand():
    packed = pack_padded_sequence(_padded(), [2, 4, 3], enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1]
    assert packed.batch_sizes.dtype == ember.int64
    assert packed.sorted_indices.tolist() == [1, 2, 0]
    assert packed.unsorted_indices.tolist() == [2, 0, 1]
    assert packed.data[:, 0].tolist() == [21, 31, 11, 22, 32, 12, 23, 33, 24]


def test_pad_packed_round_trip_restores_order_and_lengths():
    x = _padded()
    padded, lengths = pad_packed_sequence(pack_padded_sequence(x, [2, 4, 3], enforce_sorted=False), padding_value=-1.0)
    assert lengths.tolist() == [2, 4, 3] and lengths.dtype == ember.int64
    np.testing.assert_array_equal(to_np(padded), to_np(x))
    padded, _ = pad_packed_sequence(pack_padded_sequence(x.transpose(0, 1), [2, 4, 3], batch_first=True, enforce_sorted=False),
                                    batch_first=True, total_length=6)
    assert tuple(padded.shape) == (3, 6, 1)
    assert padded[0, :, 0].tolist() == [11, 12, 0, 0, 0, 0]


def test_sequence_helpers_round_trip():
    seqs = [ember.arange(3.0), ember.arange(5.0) + 10, ember.arange(1.0) + 20]
    packed = pack_sequence(seqs, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 2, 1, 1]
    assert [s.tolist() for s in unpack_sequence(packed)] == [s.tolist() for s in seqs]
    padded = pad_sequence(seqs, batch_first=True)
    assert [s.tolist() for s in unpad_sequence(padded, ember.tensor([3, 5, 1]), batch_first=True)] == [s.tolist() for s in seqs]
    assert [s.tolist() for s in unpad_sequence(padded.transpose(0, 1), [3, 5, 1])] == [s.tolist() for s in seqs]


def test_packing_is_differentiable():
    x = ember.randn(4, 3, 2, requires_grad=True)
    packed = pack_padded_sequence(x, [4, 2, 1])
    padded, _ = pad_packed_sequence(packed)
    padded.sum().backward()
    # Only the valid steps reach the packed batch: the gradient is the validity mask.
    mask = np.zeros((4, 3, 2), dtype=np.float32)
    for b, n in enumerate([4, 2, 1]):
        mask[:n, b] = 1
    np.testing.assert_array_equal(to_np(x.grad), mask)


def test_packing_errors():
    x = ember.randn(3, 2, 1)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when `enforce_sorted` is True"):
        pack_padded_sequence(x, [2, 3])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [3, 0])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [3, 0], enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 1 \(batch_size=2\)"):
        pack_padded_sequence(x, [2])
    with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 tensor"):
        pack_padded_sequence(x, ember.tensor([[3, 2]]))
    with pytest.raises(RuntimeError, match="Cannot pack empty tensors."):
        pack_padded_sequence(ember.randn(0, 2, 1), [1, 1])
    with pytest.raises(RuntimeError, match="at most the padded sequence length"):
        pack_padded_sequence(x, [4, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest sequence"):
        pad_packed_sequence(pack_padded_sequence(x, [3, 2]), total_length=2)
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        pack_sequence([])


def test_packed_sequence_tuple_and_conversions():
    packed = PackedSequence(ember.ones(3), ember.tensor([2, 1]), ember.tensor([1, 0]))
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert unsorted_indices.tolist() == [1, 0]
    assert packed._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert packed.to(ember.float32) is packed
    assert packed.double().data.dtype == ember.float64 and packed.long().data.dtype == ember.int64
    assert packed.double().batch_sizes.dtype == ember.int64
    assert not packed.is_cuda and not packed.is_pinned()
    assert invert_permutation(ember.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert invert_permutation(None) is None


LENGTHS = [3, 5, 1, 4]


def _packed_run(lib, module, x, lengths, hx=None):
    packed = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=module.batch_first, enforce_sorted=False)
    out, hidden = module(packed, hx)
    assert isinstance(out, lib.nn.utils.rnn.PackedSequence)
    padded, out_lengths = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=module.batch_first)
    assert out_lengths.tolist() == lengths
    return padded, hidden


def _flat(hidden):
    return list(hidden) if isinstance(hidden, tuple) else [hidden]


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
def test_packed_final_state_is_each_sequence_last_step(cls):
    """Running each sequence alone (unpadded) gives the packed run's outputs and finals."""
    module = getattr(nn, cls)(2, 3, num_layers=2, bidirectional=True)
    x = ember.randn(5, 4, 2)
    padded, hidden = _packed_run(ember, module, x, LENGTHS)
    for b, n in enumerate(LENGTHS):
        alone_out, alone_hidden = module(x[:n, b:b + 1])
        np.testing.assert_allclose(to_np(padded[:n, b]), to_np(alone_out[:, 0]), rtol=1e-5, atol=1e-6)
        assert np.all(to_np(padded[n:, b]) == 0)
        for got, want in zip(_flat(hidden), _flat(alone_hidden)):
            np.testing.assert_allclose(to_np(got[:, b]), to_np(want[:, 0]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,kwargs", [("RNN", {"nonlinearity": "relu"}), ("GRU", {"batch_first": True}),
                                        ("LSTM", {"bidirectional": True, "num_layers": 2}), ("LSTM", {"proj_size": 2})])
def test_packed_layers_match_torch(cls, kwargs):
    torch = pytest.importorskip("torch")
    ours = getattr(nn, cls)(2, 3, **kwargs)
    theirs = getattr(torch.nn, cls)(2, 3, **kwargs)
    copy_weights(torch, ours, theirs)
    x = ember.randn(4, 5, 2) if kwargs.get("batch_first") else ember.randn(5, 4, 2)
    x.requires_grad_(True)
    tx = to_torch(torch, x).requires_grad_(True)
    layers = ours.num_layers * (2 if ours.bidirectional else 1)
    h0 = ember.randn(layers, 4, ours.proj_size or 3)
    hx = (h0, ember.randn(layers, 4, 3)) if cls == "LSTM" else h0
    thx = tuple(to_torch(torch, h) for h in hx) if cls == "LSTM" else to_torch(torch, hx)
    out, hidden = _packed_run(ember, ours, x, LENGTHS, hx)
    tout, thidden = _packed_run(torch, theirs, tx, LENGTHS, thx)
    np.testing.assert_allclose(to_np(out), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    for got, want in zip(_flat(hidden), _flat(thidden)):
        np.testing.assert_allclose(to_np(got), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    (out.sum() + sum(h.sum() for h in _flat(hidden))).backward()
    (tout.sum() + sum(h.sum() for h in _flat(thidden))).backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_np(ours.weight_hh_l0.grad), theirs.weight_hh_l0.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_packed_input_errors():
    rnn = nn.GRU(2, 3)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 2, got 4"):
        rnn(pack_sequence([ember.randn(3, 4)]))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 2, 3\\), got \\[1, 1, 3\\]"):
        rnn(pack_sequence([ember.randn(3, 2), ember.randn(2, 2)]), ember.zeros(1, 1, 3))
    with pytest.raises(TypeError, match="expected input to be a Tensor or a PackedSequence, got list"):
        rnn([1, 2])


def test_torch_packed_sequence_converts():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.utils.rnn.pack_sequence([torch.randn(3, 2), torch.randn(1, 2), torch.randn(2, 2)], enforce_sorted=False)
    ours = pack_sequence([to_ember(t) for t in torch.nn.utils.rnn.unpack_sequence(theirs)], enforce_sorted=False)
    np.testing.assert_array_equal(to_np(ours.data), theirs.data.numpy())
    for name in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        assert getattr(ours, name).tolist() == getattr(theirs, name).tolist()
