"""Layers against PyTorch: state_dict key names and shapes, outputs and gradients with the same
weights; BatchNorm running statistics; functional_call; and training an MLP and a CNN."""
import numpy as np
import pytest

import ember
from ember import nn
from nn_helpers import assert_close, copy_weights, to_ember, to_np, to_torch

# (constructor arguments, input shape(s)); the same call builds the layer in both libraries.
LAYERS = [
    ("Linear", (5, 3), {}, [(4, 5)]),
    ("Linear", (5, 3), {"bias": False}, [(2, 6, 5)]),
    ("Bilinear", (3, 4, 2), {}, [(5, 3), (5, 4)]),
    ("Identity", (), {}, [(2, 3)]),
    ("Flatten", (), {}, [(2, 3, 4)]),
    ("Unflatten", (1, (2, 3)), {}, [(4, 6)]),
    ("Conv1d", (2, 4, 3), {"stride": 2, "padding": 1}, [(2, 2, 9)]),
    ("Conv2d", (2, 4, 3), {"padding": "same", "dilation": 2}, [(2, 2, 7, 7)]),
    ("Conv2d", (4, 4, (3, 1)), {"groups": 2, "padding_mode": "reflect", "padding": 1}, [(1, 4, 6, 5)]),
    ("Conv3d", (2, 3, 2), {}, [(1, 2, 4, 4, 4)]),
    ("ConvTranspose1d", (3, 2, 3), {"stride": 2, "output_padding": 1}, [(2, 3, 5)]),
    ("ConvTranspose2d", (2, 4, 3), {"stride": 2, "padding": 1, "groups": 2}, [(1, 2, 4, 5)]),
    ("BatchNorm1d", (4,), {}, [(6, 4)]),
    ("BatchNorm2d", (3,), {"momentum": None}, [(4, 3, 2, 2)]),
    ("BatchNorm3d", (2,), {"affine": False}, [(2, 2, 2, 2, 3)]),
    ("LayerNorm", ((3, 4),), {}, [(2, 3, 4)]),
    ("GroupNorm", (2, 4), {}, [(3, 4, 5)]),
    ("InstanceNorm2d", (3,), {"affine": True}, [(2, 3, 4, 4)]),
    ("LocalResponseNorm", (3,), {}, [(2, 5, 4)]),
    ("MaxPool1d", (3,), {"stride": 2}, [(2, 3, 9)]),
    ("MaxPool2d", (2,), {"padding": 1}, [(2, 3, 5, 5)]),
    ("AvgPool1d", (3,), {"stride": 1, "padding": 1}, [(2, 3, 7)]),
    ("AvgPool2d", (2,), {"ceil_mode": True}, [(1, 2, 5, 5)]),
    ("AdaptiveAvgPool1d", (4,), {}, [(2, 3, 10)]),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, [(2, 3, 7, 8)]),
    ("AdaptiveMaxPool2d", (3,), {}, [(1, 2, 7, 7)]),
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}, [(1, 2, 3, 3)]),
    ("ReLU", (), {}, [(3, 4)]), ("ReLU6", (), {}, [(3, 4)]), ("LeakyReLU", (0.2,), {}, [(3, 4)]),
    ("ELU", (), {"alpha": 0.5}, [(3, 4)]), ("SELU", (), {}, [(3, 4)]), ("CELU", (), {}, [(3, 4)]),
    ("GELU", (), {"approximate": "tanh"}, [(3, 4)]), ("GELU", (), {}, [(3, 4)]), ("SiLU", (), {}, [(3, 4)]),
    ("Mish", (), {}, [(3, 4)]), ("Hardswish", (), {}, [(3, 4)]), ("Hardsigmoid", (), {}, [(3, 4)]),
    ("Hardtanh", (-0.5, 0.5), {}, [(3, 4)]), ("Softplus", (), {"beta": 2.0}, [(3, 4)]), ("Sigmoid", (), {}, [(3, 4)]),
    ("Tanh", (), {}, [(3, 4)]), ("LogSigmoid", (), {}, [(3, 4)]), ("Softsign", (), {}, [(3, 4)]),
    ("Tanhshrink", (), {}, [(3, 4)]), ("Threshold", (0.1, -1.0), {}, [(3, 4)]), ("Hardshrink", (), {}, [(3, 4)]),
    ("Softshrink", (0.3,), {}, [(3, 4)]), ("PReLU", (3,), {}, [(2, 3, 4)]), ("GLU", (), {}, [(3, 4)]),
    ("Softmax", (1,), {}, [(3, 4)]), ("LogSoftmax", (-1,), {}, [(3, 4)]), ("Softmin", (0,), {}, [(3, 4)]),
    ("Softmax2d", (), {}, [(2, 3, 2, 2)]),
    ("CosineSimilarity", (), {}, [(3, 4), (3, 4)]), ("PairwiseDistance", (), {}, [(3, 4), (3, 4)]),
    ("RNN", (3, 4, 2), {"nonlinearity": "relu"}, [(5, 2, 3)]),
    ("LSTM", (3, 4, 2), {"bidirectional": True, "batch_first": True}, [(2, 5, 3)]),
    ("LSTM", (3, 4), {"proj_size": 2}, [(5, 3)]),
    ("GRU", (3, 4, 2), {"bidirectional": True}, [(5, 2, 3)]),
    ("RNNCell", (3, 4), {}, [(2, 3)]), ("LSTMCell", (3, 4), {}, [(2, 3)]), ("GRUCell", (3, 4), {}, [(2, 3)]),
    ("TransformerEncoderLayer", (8, 2, 16), {"dropout": 0.0}, [(5, 2, 8)]),
    ("TransformerEncoderLayer", (8, 2, 16), {"dropout": 0.0, "norm_first": True, "batch_first": True, "activation": "gelu"}, [(2, 5, 8)]),
]


def _build(lib, name, args, kwargs):
    return getattr(lib.nn, name)(*args, **kwargs)


def _outputs(out):
    if isinstance(out, tuple):
        return [t for o in out for t in _outputs(o)]
    return [out]


@pytest.mark.parametrize("name,args,kwargs,shapes", LAYERS, ids=lambda v: v if isinstance(v, str) else None)
def test_layer_matches_torch(name, args, kwargs, shapes):
    torch = pytest.importorskip("torch")
    ember.manual_seed(1)
    ours, theirs = _build(ember, name, args, kwargs), _build(torch, name, args, kwargs)
    ours_sd, theirs_sd = ours.state_dict(), theirs.state_dict()
    assert list(ours_sd) == list(theirs_sd)
    assert [tuple(v.shape) for v in ours_sd.values()] == [tuple(v.shape) for v in theirs_sd.values()]
    assert repr(ours) == repr(theirs)
    copy_weights(torch, ours, theirs)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    xs = [ember.tensor(a, requires_grad=True) for a in arrays]
    txs = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs, touts = _outputs(ours(*xs)), _outputs(theirs(*txs))
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts):
        assert_close(o, t, rtol=1e-4, atol=1e-5)
    grads = [rng.standard_normal(tuple(t.shape)).astype(np.float32) for t in touts]
    sum(ember.sum(o * ember.tensor(g)) for o, g in zip(outs, grads)).backward()
    sum((t * torch.tensor(g)).sum() for t, g in zip(touts, grads)).backward()
    for x, tx in zip(xs, txs):
        assert_close(x.grad, tx.grad, rtol=1e-4, atol=1e-5)
    tparams = dict(theirs.named_parameters())
    for pname, p in ours.named_parameters():
        assert_close(p.grad, tparams[pname].grad, rtol=1e-4, atol=1e-5)
    for bname, b in ours.named_buffers():  # running statistics after one training step
        assert_close(b.double(), dict(theirs.named_buffers())[bname].double(), rtol=1e-5, atol=1e-6)


def test_default_init_distributions():
    lin = nn.Linear(100, 50)
    bound = 1 / 10
    assert float(lin.weight.abs().max()) <= bound and float(lin.bias.abs().max()) <= bound
    emb = nn.Embedding(1000, 8, padding_idx=-1)
    assert emb.padding_idx == 999 and float(emb.weight[999].abs().sum()) == 0.0
    assert abs(float(emb.weight[:999].std()) - 1.0) < 0.05
    mha = nn.MultiheadAttention(8, 2)
    assert float(mha.in_proj_bias.abs().sum()) == 0.0 and float(mha.out_proj.bias.abs().sum()) == 0.0
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]


def test_state_dict_keys_of_composite_layers_match_torch():
    torch = pytest.importorskip("torch")
    for lib_args in [("MultiheadAttention", (8, 2), {"kdim": 4, "vdim": 6, "add_bias_kv": True}),
                     ("TransformerDecoderLayer", (8, 2, 16), {}),
                     ("Embedding", (10, 3), {"padding_idx": 0}),
                     ("EmbeddingBag", (10, 3), {"mode": "max"}),
                     ("CrossEntropyLoss", (), {"weight": None}),
                     ("RNN", (3, 4, 3), {"bias": False, "bidirectional": True})]:
        name, args, kwargs = lib_args
        ours, theirs = _build(ember, name, args, kwargs), _build(torch, name, args, kwargs)
        assert list(ours.state_dict()) == list(theirs.state_dict()), name
        assert repr(ours) == repr(theirs), name
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2, norm=nn.LayerNorm(8))
    tenc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16), 2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
    assert list(enc.state_dict()) == list(tenc.state_dict())
    assert enc.layers[0].linear1.weight.data_ptr() != enc.layers[1].linear1.weight.data_ptr()


def test_multihead_attention_masks_match_torch():
    torch = pytest.importorskip("torch")
    for kwargs in [{}, {"batch_first": True, "add_zero_attn": True}, {"kdim": 3, "vdim": 5, "add_bias_kv": True}]:
        ours, theirs = nn.MultiheadAttention(8, 2, **kwargs), torch.nn.MultiheadAttention(8, 2, **kwargs)
        copy_weights(torch, ours, theirs)
        rng = np.random.default_rng(0)
        q = rng.standard_normal((4, 3, 8) if not kwargs.get("batch_first") else (3, 4, 8)).astype(np.float32)
        k = rng.standard_normal((3, 6, kwargs.get("kdim", 8)) if kwargs.get("batch_first") else (6, 3, kwargs.get("kdim", 8))).astype(np.float32)
        v = rng.standard_normal(k.shape[:2] + (kwargs.get("vdim", 8),)).astype(np.float32)
        kpm = np.zeros((3, 6), dtype=bool)
        kpm[1, 4:] = True
        causal = np.triu(np.ones((4, 6), dtype=bool), 1)
        for extra in [{}, {"key_padding_mask": kpm}, {"attn_mask": causal, "average_attn_weights": False},
                      {"attn_mask": np.where(causal, -1.0, 0.0).astype(np.float32), "key_padding_mask": kpm}, {"need_weights": False}]:
            e_kw = {key: (ember.tensor(val) if isinstance(val, np.ndarray) else val) for key, val in extra.items()}
            t_kw = {key: (torch.tensor(val) if isinstance(val, np.ndarray) else val) for key, val in extra.items()}
            out, w = ours(ember.tensor(q), ember.tensor(k), ember.tensor(v), **e_kw)
            tout, tw = theirs(torch.tensor(q), torch.tensor(k), torch.tensor(v), **t_kw)
            assert_close(out, tout, rtol=1e-4, atol=1e-5)
            assert (w is None) == (tw is None)
            if w is not None:
                assert_close(w, tw, rtol=1e-4, atol=1e-5)


def test_embeddings_match_torch():
    torch = pytest.importorskip("torch")
    emb, temb = nn.Embedding(10, 4, padding_idx=2), torch.nn.Embedding(10, 4, padding_idx=2)
    copy_weights(torch, emb, temb)
    idx = np.array([[1, 2, 3], [2, 9, 1]])
    out, tout = emb(ember.tensor(idx)), temb(torch.tensor(idx))
    assert_close(out, tout)
    out.sum().backward()
    tout.sum().backward()
    assert_close(emb.weight.grad, temb.weight.grad)
    for mode in ["sum", "mean", "max"]:
        bag, tbag = nn.EmbeddingBag(10, 3, mode=mode), torch.nn.EmbeddingBag(10, 3, mode=mode)
        copy_weights(torch, bag, tbag)
        flat, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 2, 2, 5])
        with ember.no_grad():
            assert_close(bag(ember.tensor(flat), ember.tensor(offsets)), tbag(torch.tensor(flat), torch.tensor(offsets)))
    bag, tbag = nn.EmbeddingBag(10, 3, mode="sum"), torch.nn.EmbeddingBag(10, 3, mode="sum")
    copy_weights(torch, bag, tbag)
    weights = np.linspace(0.5, 2.0, 8).astype(np.float32)
    with ember.no_grad():
        assert_close(bag(ember.tensor(flat), ember.tensor(offsets), ember.tensor(weights)),
                     tbag(torch.tensor(flat), torch.tensor(offsets), torch.tensor(weights)))


def test_batchnorm_running_statistics_and_eval():
    torch = pytest.importorskip("torch")
    for momentum in [0.1, None]:
        bn, tbn = nn.BatchNorm1d(3, momentum=momentum), torch.nn.BatchNorm1d(3, momentum=momentum)
        rng = np.random.default_rng(0)
        for _ in range(3):
            x = rng.standard_normal((8, 3)).astype(np.float32) * 2 + 1
            bn(ember.tensor(x))
            tbn(torch.tensor(x))
        assert int(bn.num_batches_tracked) == 3
        assert_close(bn.running_mean, tbn.running_mean)
        assert_close(bn.running_var, tbn.running_var)
        bn.eval()
        tbn.eval()
        x = rng.standard_normal((4, 3)).astype(np.float32)
        assert_close(bn(ember.tensor(x)), tbn(torch.tensor(x)))
    no_stats = nn.BatchNorm2d(2, track_running_stats=False).eval()
    assert no_stats.running_mean is None and list(no_stats.state_dict()) == ["weight", "bias"]
    assert float(no_stats(ember.randn(4, 2, 3, 3)).mean().abs()) < 1e-5  # batch statistics even in eval
    with pytest.raises(ValueError, match="expected 4D input \\(got 3D input\\)"):
        nn.BatchNorm2d(2)(ember.randn(2, 2, 2))


def test_dropout_modes():
    drop = nn.Dropout(0.5)
    x = ember.ones(1000)
    y = drop(x)
    kept = to_np(y) != 0
    assert 400 < kept.sum() < 600 and np.allclose(to_np(y)[kept], 2.0)
    drop.eval()
    assert drop(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_losses_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    target = rng.standard_normal((4, 5)).astype(np.float32)
    prob = 1 / (1 + np.exp(-x))
    labels = np.array([0, 4, 2, 1])
    weight = np.linspace(0.5, 1.5, 5).astype(np.float32)
    cases = [
        ("L1Loss", {}, x, target), ("MSELoss", {"reduction": "sum"}, x, target), ("SmoothL1Loss", {"beta": 0.5}, x, target),
        ("HuberLoss", {"delta": 0.7}, x, target), ("BCELoss", {}, prob, (target > 0).astype(np.float32)),
        ("BCEWithLogitsLoss", {"pos_weight": weight}, x, (target > 0).astype(np.float32)),
        ("KLDivLoss", {"reduction": "batchmean"}, np.log(prob), prob[::-1].copy()),
        ("NLLLoss", {"weight": weight}, x, labels), ("CrossEntropyLoss", {"label_smoothing": 0.1, "reduction": "none"}, x, labels),
        ("CrossEntropyLoss", {"weight": weight, "ignore_index": 4}, x, labels),
    ]
    for name, kwargs, inp, tgt in cases:
        e_kw = {k: ember.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        t_kw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        ours, theirs = getattr(nn, name)(**e_kw), getattr(torch.nn, name)(**t_kw)
        assert list(ours.state_dict()) == list(theirs.state_dict()), name
        assert_close(ours(ember.tensor(inp), ember.tensor(tgt)), theirs(torch.tensor(inp), torch.tensor(tgt)), rtol=1e-5)


def test_utils_clip_and_vectors():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,)]]
    for norm_type in [2.0, 1.0, float("inf")]:
        ps = [nn.Parameter(ember.zeros(g.shape)) for g in grads]
        tps = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
        for p, tp, g in zip(ps, tps, grads):
            p.grad, tp.grad = ember.tensor(g), torch.tensor(g)
        total = nn.utils.clip_grad_norm_(ps, 1.5, norm_type)
        ttotal = torch.nn.utils.clip_grad_norm_(tps, 1.5, norm_type)
        assert_close(total, ttotal)
        for p, tp in zip(ps, tps):
            assert_close(p.grad, tp.grad)
    nn.utils.clip_grad_value_(ps, 0.01)
    assert float(ps[0].grad.abs().max()) <= 0.01
    bad = nn.Parameter(ember.zeros(2))
    bad.grad = ember.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([bad], 1.0, error_if_nonfinite=True)
    vec = nn.utils.parameters_to_vector(ps)
    assert vec.shape == (17,)
    nn.utils.vector_to_parameters(ember.arange(17.0), ps)
    assert float(ps[1][0]) == 12.0
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0], ps)
    seqs = [ember.ones(2, 3), ember.ones(4, 3) * 2]
    padded = nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=-1.0)
    tpadded = torch.nn.utils.rnn.pad_sequence([to_torch(torch, s) for s in seqs], batch_first=True, padding_value=-1.0)
    assert_close(padded, tpadded)
    assert nn.utils.rnn.pad_sequence(seqs).shape == (4, 2, 3)


def test_functional_call_seed_example_runs_verbatim():
    # The PyTorch 1.12 release-notes example, with torch replaced by ember.
    import ember as torch  # noqa: F401
    from ember import nn as tnn
    from ember.nn.utils.stateless import functional_call

    class MyModule(tnn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = tnn.Linear(3, 3)
            self.bn = tnn.BatchNorm1d(3)
            self.fc2 = tnn.Linear(3, 3)

        def forward(self, x):
            return self.fc2(self.bn(self.fc1(x)))

    m = MyModule()

    # Define parameter / buffer values to use during module computation.
    my_weight = torch.randn(3, 3, requires_grad=True)
    my_bias = torch.tensor([1., 2., 3.], requires_grad=True)  # noqa: F841
    params_and_buffers = {
        'fc1.weight': my_weight,
        'bn.running_mean': torch.zeros(3),
    }

    # Calls MyModule.forward using the parameter / buffer values.
    x = torch.randn(5, 3)
    result = functional_call(m, params_and_buffers, x)

    assert result.shape == (5, 3)
    assert m.fc1.weight is not my_weight and isinstance(m.fc1.weight, tnn.Parameter)
    assert float(params_and_buffers["bn.running_mean"].abs().sum()) > 0  # the swapped-in buffer was updated
    result.sum().backward()
    assert my_weight.grad is not None and m.fc1.weight.grad is None


def test_functional_call_tied_weights_strict_and_restore():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    x = ember.ones(1, 2)
    zero = {"a.weight": ember.zeros(2, 2)}
    assert float(nn.utils.stateless.functional_call(m, zero, x).abs().sum()) == 0.0
    untied = nn.utils.stateless.functional_call(m, zero, (x,), tie_weights=False)
    assert float(untied.abs().sum()) == 0.0
    with pytest.raises(ValueError, match="which are tied"):
        nn.utils.stateless.functional_call(m, {"a.weight": ember.zeros(2, 2), "b.weight": ember.ones(2, 2)}, x)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'c.weight'.\n\tMissing key\\(s\\): 'a.weight', 'b.weight'"):
        nn.utils.stateless.functional_call(m, {"c.weight": ember.ones(2, 2)}, x, strict=True)
    with pytest.raises(AttributeError, match="Tied has no attribute `c`"):
        nn.utils.stateless.functional_call(m, {"c.weight": ember.ones(2, 2)}, x)
    assert m.b.weight is m.a.weight and isinstance(m.a.weight, nn.Parameter)

    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(1))

        def forward(self, x):
            raise ValueError("boom")

    boom = Boom()
    original = boom.w
    with pytest.raises(ValueError):
        nn.utils.stateless.functional_call(boom, {"w": ember.zeros(1)}, 1)
    assert boom.w is original


def _blobs(n, classes, dim, seed):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((classes, dim)) * 3
    labels = rng.integers(0, classes, n)
    points = centres[labels] + rng.standard_normal((n, dim))
    return ember.tensor(points.astype(np.float32)), ember.tensor(labels)


def test_train_mlp_to_high_accuracy():
    x, y = _blobs(1200, 4, 10, seed=0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4))
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(20):
        for i in range(0, 1000, 100):
            opt.zero_grad()
            loss = loss_fn(model(x[i:i + 100]), y[i:i + 100])
            loss.backward()
            opt.step()
        sched.step()
    model.eval()
    with ember.no_grad():
        accuracy = float((model(x[1000:]).argmax(1) == y[1000:]).float().mean())
    assert accuracy >= 0.95


def test_train_cnn_to_high_accuracy():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 400)
    images = rng.standard_normal((400, 1, 8, 8)).astype(np.float32) * 0.5
    images[labels == 0, 0, 2:6, 3:5] += 2.0  # class 0: a vertical bar; class 1: a horizontal one
    images[labels == 1, 0, 3:5, 2:6] += 2.0
    x, y = ember.tensor(images), ember.tensor(labels)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(8):
        for i in range(0, 300, 50):
            opt.zero_grad()
            loss_fn(model(x[i:i + 50]), y[i:i + 50]).backward()
            opt.step()
    model.eval()
    with ember.no_grad():
        accuracy = float((model(x[300:]).argmax(1) == y[300:]).float().mean())
    assert accuracy >= 0.95


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradients_match_torch(mode):
    torch = pytest.importorskip("torch")
    bag, tbag = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=3), torch.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=3)
    copy_weights(torch, bag, tbag)
    flat, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 2, 2, 5])
    psw = np.linspace(0.5, 2.0, 8).astype(np.float32) if mode == "sum" else None
    w = None if psw is None else ember.tensor(psw, requires_grad=True)
    tw = None if psw is None else torch.tensor(psw, requires_grad=True)
    out = bag(ember.tensor(flat), ember.tensor(offsets), w)
    tout = tbag(torch.tensor(flat), torch.tensor(offsets), tw)
    assert_close(out, tout)
    g = np.random.default_rng(0).standard_normal(tuple(tout.shape)).astype(np.float32)
    (out * ember.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    assert_close(bag.weight.grad, tbag.weight.grad)
    if w is not None:
        assert_close(w.grad, tw.grad)
