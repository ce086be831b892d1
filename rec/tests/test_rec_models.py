"""MLP, cross networks, DeepFM and DLRM against NumPy versions of TorchRec's formulas; a small
DLRM trains."""
import numpy as np
import pytest

import ember
from emberrec.datasets.utils import Batch
from emberrec.models.dlrm import DLRM, DLRMTrain, InteractionArch, OverArch, SparseArch, choose
from emberrec.modules.crossnet import CrossNet, LowRankCrossNet, LowRankMixtureCrossNet, VectorCrossNet
from emberrec.modules.deepfm import DeepFM, FactorizationMachine
from emberrec.modules.embedding_configs import EmbeddingBagConfig
from emberrec.modules.embedding_modules import EmbeddingBagCollection
from emberrec.modules.mlp import MLP, Perceptron
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor


def params(module):
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def relu(x):
    return np.maximum(x, 0)


@pytest.fixture
def x():
    return np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)


def test_mlp_keys_and_output(x):
    mlp = MLP(6, [5, 3])
    assert list(mlp.state_dict()) == ["_mlp.0._linear.weight", "_mlp.0._linear.bias",
                                      "_mlp.1._linear.weight", "_mlp.1._linear.bias"]
    p = params(mlp)
    h = relu(x @ p["_mlp.0._linear.weight"].T + p["_mlp.0._linear.bias"])
    want = relu(h @ p["_mlp.1._linear.weight"].T + p["_mlp.1._linear.bias"])
    np.testing.assert_allclose(mlp(ember.from_numpy(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    swish = MLP(6, [4], activation="swish_layernorm")
    assert "_mlp.0._activation_fn.norm.0.weight" in swish.state_dict()
    assert Perceptron(6, 2, activation=ember.sigmoid)(ember.from_numpy(x)).min().item() > 0
    with pytest.raises(ValueError, match="activation"):
        MLP(6, [4], activation="gelu_typo")
    with pytest.raises(ValueError, match="layer_sizes"):
        MLP(6, [])


def test_cross_nets_match_numpy(x):
    x0 = x[:, :, None]
    net = CrossNet(6, 2)
    p, xl = params(net), x0
    for i in range(2):
        xl = x0 * (p[f"kernels.{i}"] @ xl + p[f"bias.{i}"]) + xl
    np.testing.assert_allclose(net(ember.from_numpy(x)).detach().numpy(), xl[:, :, 0], rtol=1e-5, atol=1e-5)

    net = LowRankCrossNet(6, 2, low_rank=3)
    p, xl = params(net), x0
    for i in range(2):
        xl = x0 * (p[f"W_kernels.{i}"] @ (p[f"V_kernels.{i}"] @ xl) + p[f"bias.{i}"][:, None]) + xl
    np.testing.assert_allclose(net(ember.from_numpy(x)).detach().numpy(), xl[:, :, 0], rtol=1e-5, atol=1e-5)

    net = VectorCrossNet(6, 3)
    p, xl = params(net), x0
    for i in range(3):
        dot = np.einsum("bni,nj->bij", xl, p[f"kernels.{i}"])
        xl = x0 @ dot + p[f"bias.{i}"] + xl
    np.testing.assert_allclose(net(ember.from_numpy(x)).detach().numpy(), xl[:, :, 0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("num_experts", [1, 3])
def test_low_rank_mixture_cross_net_matches_numpy(x, num_experts):
    net = LowRankMixtureCrossNet(6, 2, num_experts=num_experts, low_rank=2)
    with ember.no_grad():
        for b in net.bias:  # TorchRec starts biases at zero; make them count
            b.copy_(ember.randn(6, 1))
    p, x0 = params(net), x[:, :, None]
    xl = x0
    for layer in range(2):
        experts = []
        for k in range(num_experts):
            e = p[f"V_kernels.{layer}"][k] @ xl
            e = p[f"C_kernels.{layer}"][k] @ relu(e)
            e = p[f"U_kernels.{layer}"][k] @ relu(e)
            experts.append((x0 * (e + p[f"bias.{layer}"]))[:, :, 0])
        experts = np.stack(experts, 2)
        if num_experts > 1:
            gating = np.stack([xl[:, :, 0] @ p[f"gates.{k}.weight"].T for k in range(num_experts)], 1)  # (B, K, 1)
            gating = np.exp(gating) / np.exp(gating).sum(1, keepdims=True)
            xl = experts @ gating + xl
        else:
            xl = experts + xl
    np.testing.assert_allclose(net(ember.from_numpy(x)).detach().numpy(), xl[:, :, 0], rtol=1e-4, atol=1e-5)


def test_cross_net_errors(x):
    with pytest.raises(ValueError, match=r"\(batch, 5\)"):
        CrossNet(5, 1)(ember.from_numpy(x))
    with pytest.raises(ValueError, match="low_rank"):
        LowRankCrossNet(6, 1, low_rank=0)


def test_factorization_machine_and_deepfm():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 2, 4)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    flat = np.concatenate([a.reshape(3, -1), b], 1)
    want = 0.5 * (flat.sum(1, keepdims=True) ** 2 - (flat ** 2).sum(1, keepdims=True))
    got = FactorizationMachine()([ember.from_numpy(a), ember.from_numpy(b)])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    dense = ember.nn.Linear(13, 2)
    deepfm = DeepFM(dense)
    assert list(deepfm.state_dict()) == ["dense_module.weight", "dense_module.bias"]
    p = params(dense)
    np.testing.assert_allclose(deepfm([ember.from_numpy(a), ember.from_numpy(b)]).detach().numpy(),
                               flat @ p["weight"].T + p["bias"], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="same batch size"):
        FactorizationMachine()([ember.zeros(2, 3), ember.zeros(3, 3)])


def test_interaction_arch_matches_numpy():
    rng = np.random.default_rng(2)
    dense, sparse = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 5, 3)).astype(np.float32)
    arch = InteractionArch(5)
    assert list(arch.state_dict()) == []  # triu_indices is not persistent
    out = arch(ember.from_numpy(dense), ember.from_numpy(sparse)).numpy()
    assert out.shape == (4, 3 + choose(6, 2))
    combined = np.concatenate([dense[:, None], sparse], 1)
    gram = combined @ combined.transpose(0, 2, 1)
    rows, cols = np.triu_indices(6, 1)
    np.testing.assert_allclose(out, np.concatenate([dense, gram[:, rows, cols]], 1), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="sparse_features must be"):
        arch(ember.from_numpy(dense), ember.from_numpy(sparse[:, :4]))


def tables(dim=4):
    return [EmbeddingBagConfig(name="t1", embedding_dim=dim, num_embeddings=20, feature_names=["f1", "f2"]),
            EmbeddingBagConfig(name="t2", embedding_dim=dim, num_embeddings=10, feature_names=["f3"])]


def test_dlrm_state_dict_keys_and_shapes():
    model = DLRM(EmbeddingBagCollection(tables()), dense_in_features=7, dense_arch_layer_sizes=[6, 4],
                 over_arch_layer_sizes=[5, 1])
    assert list(model.state_dict()) == [
        "sparse_arch.embedding_bag_collection.embedding_bags.t1.weight",
        "sparse_arch.embedding_bag_collection.embedding_bags.t2.weight",
        "dense_arch.model._mlp.0._linear.weight", "dense_arch.model._mlp.0._linear.bias",
        "dense_arch.model._mlp.1._linear.weight", "dense_arch.model._mlp.1._linear.bias",
        "over_arch.model.0._mlp.0._linear.weight", "over_arch.model.0._mlp.0._linear.bias",
        "over_arch.model.1.weight", "over_arch.model.1.bias"]
    assert model.over_arch.model[0]._mlp[0]._linear.weight.shape == (5, 4 + 3 + 3)
    kjt = KeyedJaggedTensor(["f3", "f1", "f2"], ember.tensor([1, 2, 3, 4]), lengths=ember.tensor([1, 0, 2, 0, 0, 1]))
    assert SparseArch(model.sparse_arch.embedding_bag_collection)(kjt).shape == (2, 3, 4)
    assert model(ember.randn(2, 7), kjt).shape == (2, 1)
    with pytest.raises(ValueError, match="must match"):
        DLRM(EmbeddingBagCollection(tables()), 7, [6, 5], [5, 1])
    with pytest.raises(ValueError, match="same embedding_dim"):
        DLRM(EmbeddingBagCollection([tables(4)[0], tables(3)[1]]), 7, [4], [5, 1])
    with pytest.raises(ValueError, match="multiple layers"):
        OverArch(3, [1])
    with pytest.raises(ValueError, match="batch"):
        model(ember.randn(3, 7), kjt)


def test_dlrm_training_decreases_the_loss():
    """Labels depend on f1's id and a dense feature; 30 SGD steps on one batch must cut the loss."""
    ember.manual_seed(0)
    rng = np.random.default_rng(3)
    batch_size = 32
    lengths = np.ones(3 * batch_size, np.int64)
    ids = np.concatenate([rng.integers(0, 20, batch_size), rng.integers(0, 20, batch_size), rng.integers(0, 10, batch_size)])
    dense = rng.standard_normal((batch_size, 7)).astype(np.float32)
    labels = ((ids[:batch_size] % 2 == 0) ^ (dense[:, 0] > 0)).astype(np.float32)
    batch = Batch(ember.from_numpy(dense), KeyedJaggedTensor(["f1", "f2", "f3"], ember.from_numpy(ids),
                                                             lengths=ember.from_numpy(lengths)), ember.from_numpy(labels))
    train = DLRMTrain(DLRM(EmbeddingBagCollection(tables(8)), 7, [16, 8], [16, 1]))
    optimizer = ember.optim.Adam(train.parameters(), lr=0.03)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss, (detached, logits, got_labels) = train(batch)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert logits.shape == (batch_size,) and not detached.requires_grad
    assert losses[-1] < 0.5 * losses[0]
    assert train.model.sparse_arch.embedding_bag_collection.embedding_bags["t1"].weight.grad is not None
