"""nn.Module semantics: registration rules, traversal, state_dict, modes, conversion, hooks,
repr, Parameter and the containers."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from nn_helpers import to_np


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.fc2 = nn.Linear(4, 2)
        self.register_buffer("scale", ember.ones(1))
        self.register_buffer("cache", ember.zeros(1), persistent=False)

    def forward(self, x):
        return self.fc2(self.bn(self.fc1(x))) * self.scale


def test_parameter_is_a_tensor_alias():
    data = ember.ones(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    with ember.no_grad():
        p.mul_(2)
    assert float(data.sum()) == 12.0  # same memory
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(ember.ones(1), requires_grad=False).requires_grad
    assert not isinstance(p * 2, nn.Parameter)
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q.data_ptr() != p.data_ptr()
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and np.array_equal(to_np(r), to_np(p))
    with pytest.raises(TypeError, match="must be Tensor"):
        nn.Parameter([1.0])


def test_traversal_names_and_prefixes():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in net.named_buffers()] == ["scale", "cache", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert [n for n, _ in net.named_parameters(prefix="m", recurse=False)] == []
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "bn", "fc2"]
    assert [n for n, _ in net.named_children()] == ["fc1", "bn", "fc2"]
    assert len(list(net.modules())) == 4 and len(list(net.parameters())) == 6
    assert net.get_submodule("bn") is net.bn and net.get_parameter("fc2.bias") is net.fc2.bias
    assert net.get_buffer("bn.running_mean") is net.bn.running_mean
    with pytest.raises(AttributeError, match="Net has no attribute `nope`"):
        net.get_submodule("nope")
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        net.get_parameter("bn.running_mean")


def test_shared_modules_and_tied_parameters_are_deduplicated():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_parameters(remove_duplicate=False)] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(list(seq.named_modules(remove_duplicate=False))) == 4
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_setattr_rules_and_errors():
    m = nn.Module()
    m.w = nn.Parameter(ember.ones(1))
    m.sub = nn.Linear(1, 1)
    m.register_buffer("b", ember.zeros(1))
    assert list(m._parameters) == ["w"] and list(m._modules) == ["sub"] and list(m._buffers) == ["b"]
    with pytest.raises(TypeError, match="cannot assign 'ember.float32' as parameter 'w'"):
        m.w = ember.ones(1)
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'sub'"):
        m.sub = 3
    with pytest.raises(TypeError, match="cannot assign 'str' as buffer 'b'"):
        m.b = "x"
    m.b = ember.ones(2)
    assert m._buffers["b"].shape == (2,)
    m.w = None
    assert m.w is None and list(m.parameters()) == list(m.sub.parameters())
    with pytest.raises(KeyError, match="attribute 'training' already exists"):
        m.register_buffer("training", ember.ones(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="be empty string"):
        m.add_module("", nn.ReLU())
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(TypeError, match="to parameter 'p'"):
        m.register_parameter("p", ember.ones(1))
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope
    del m.sub, m.b
    assert not m._modules and not m._buffers

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_state_dict_round_trip_and_strict_errors():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                        "bn.num_batches_tracked", "fc2.weight", "fc2.bias"]
    assert not sd["fc1.weight"].requires_grad and sd["fc1.weight"].data_ptr() == a.fc1.weight.data_ptr()
    assert sd._metadata["bn"] == {"version": 2}
    assert a.state_dict(keep_vars=True)["fc1.weight"] is a.fc1.weight
    result = b.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    assert np.array_equal(to_np(b.fc1.weight), to_np(a.fc1.weight))
    bad = dict(sd)
    del bad["fc2.bias"]
    bad["extra.key"] = ember.ones(1)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "fc2.bias". \n\tUnexpected key\\(s\\) in state_dict: "extra.key"'):
        b.load_state_dict(bad)
    missing, unexpected = b.load_state_dict(bad, strict=False)
    assert missing == ["fc2.bias"] and unexpected == ["extra.key"]
    wrong = dict(sd)
    wrong["fc1.weight"] = ember.ones(5, 5)
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight: copying a param with shape"):
        b.load_state_dict(wrong)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        b.load_state_dict([1])
    old = dict(sd)
    del old["bn.num_batches_tracked"]  # a checkpoint from before BatchNorm's version 2
    b.load_state_dict(old)
    assert int(b.bn.num_batches_tracked) == 0


def test_load_state_dict_assign_replaces_parameters():
    m = nn.Linear(2, 2)
    new = {"weight": ember.ones(2, 2), "bias": ember.zeros(2)}
    m.load_state_dict(new, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.data_ptr() == new["weight"].data_ptr()


def test_modes_grads_conversion_and_apply():
    net = Net()
    assert net.eval() is net and not net.bn.training
    net.train()
    assert net.fc1.training
    with pytest.raises(ValueError, match="boolean"):
        net.train(1)
    net(ember.randn(5, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert float(net.fc1.weight.grad.abs().sum()) == 0.0
    net.zero_grad()
    assert net.fc1.weight.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    weight = net.fc1.weight
    assert net.double() is net and net.fc1.weight is weight and weight.dtype == ember.float64
    assert net.bn.num_batches_tracked.dtype == ember.int64
    net.to(ember.float16)
    assert net.bn.running_mean.dtype == ember.float16
    net.to(dtype=ember.float32)
    with pytest.raises(TypeError, match="floating point"):
        net.to(ember.int32)
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "BatchNorm1d", "Linear", "Net"]


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = lin(ember.ones(1, 2))
    np.testing.assert_allclose(to_np(out), to_np(lin.bias.reshape(1, 2) + 1), rtol=1e-6)
    assert calls == [(1, 2)]
    h1.remove()
    h2.remove()
    assert not lin._forward_hooks and not lin._forward_pre_hooks
    with lin.register_forward_pre_hook(lambda m, a, k: (a, {}), with_kwargs=True):
        lin(ember.ones(1, 2))
    assert not lin._forward_pre_hooks
    order = []
    lin.register_forward_hook(lambda *a: order.append("b"))
    lin.register_forward_hook(lambda *a: order.append("a"), prepend=True)
    lin(ember.ones(1, 2))
    assert order == ["a", "b"]

    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    boom = Boom()
    always = []
    boom.register_forward_hook(lambda m, a, out: always.append(out), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        boom(1)
    assert always == [None]


def test_repr_matches_pytorch_layout():
    net = Net()
    assert repr(net) == (
        "Net(\n"
        "  (fc1): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (bn): BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
        "  (fc2): Linear(in_features=4, out_features=2, bias=True)\n"
        ")"
    )
    nested = nn.Sequential(nn.Sequential(nn.ReLU()), nn.Identity())
    assert repr(nested) == "Sequential(\n  (0): Sequential(\n    (0): ReLU()\n  )\n  (1): Identity()\n)"
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


def test_sequential_indexing_and_editing():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 2
    assert list(seq[1:]._modules) == ["1", "2"]
    seq.append(nn.Sigmoid())
    assert list(seq._modules) == ["0", "1", "2", "3"]
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"] and isinstance(seq[1], nn.Linear)
    seq.insert(1, nn.Tanh())
    assert isinstance(seq[1], nn.Tanh)
    assert seq(ember.ones(4, 2)).shape == (4, 1)
    with pytest.raises(IndexError, match="index 9 is out of range"):
        seq[9]
    named = nn.Sequential(OrderedDict([("a", nn.ReLU()), ("b", nn.Tanh())]))
    assert list(named._modules) == ["a", "b"]


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(1, 1), nn.ReLU()])
    ml.append(nn.Tanh())
    ml.extend([nn.Sigmoid()])
    ml.insert(0, nn.Identity())
    assert [type(m).__name__ for m in ml] == ["Identity", "Linear", "ReLU", "Tanh", "Sigmoid"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3"]
    with pytest.raises(TypeError, match="should be called with an iterable"):
        ml.extend(3)
    md = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Linear(1, 2)})
    md["c"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert [n for n, _ in md.named_parameters()] == ["b.weight", "b.bias"]
    assert isinstance(md.pop("a"), nn.ReLU)
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        md.update([("x", nn.ReLU(), 1)])


def test_parameter_list_and_dict():
    pl = nn.ParameterList([ember.ones(2), nn.Parameter(ember.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl)
    pl.append(ember.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"] and len(pl) == 3
    assert repr(pl).splitlines()[1] == "    (0): Parameter containing: [ember.float32 of size 2]"
    pd = nn.ParameterDict({"w": ember.ones(2, 2)})
    pd["b"] = nn.Parameter(ember.zeros(2))
    assert list(pd.keys()) == ["w", "b"] and isinstance(pd["w"], nn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    del pd["w"]
    assert list(pd) == ["b"]
    with pytest.raises(RuntimeError, match="should not be called"):
        pl(1)


def test_init_functions_are_seeded_and_have_the_right_moments():
    ember.manual_seed(3)
    a = nn.init.kaiming_uniform_(ember.empty(256, 128), a=5 ** 0.5)
    ember.manual_seed(3)
    b = nn.init.kaiming_uniform_(ember.empty(256, 128), a=5 ** 0.5)
    assert np.array_equal(to_np(a), to_np(b))
    bound = 1 / 128 ** 0.5
    assert float(a.abs().max()) <= bound and float(a.abs().max()) > 0.95 * bound
    x = nn.init.xavier_normal_(ember.empty(300, 200))
    assert abs(float(x.std()) - (2 / 500) ** 0.5) < 0.002
    t = nn.init.trunc_normal_(ember.empty(20000), std=1.0, a=-1.0, b=0.5)
    assert float(t.min()) >= -1.0 and float(t.max()) <= 0.5
    assert abs(float(t.mean()) - (-0.2040)) < 0.02  # mean of N(0,1) truncated to [-1, 0.5]
    q = nn.init.orthogonal_(ember.empty(4, 6), gain=2.0)
    np.testing.assert_allclose(to_np(q) @ to_np(q).T, 4 * np.eye(4), atol=1e-5)
    np.testing.assert_array_equal(to_np(nn.init.eye_(ember.empty(2, 3))), np.eye(2, 3))
    assert float(nn.init.constant_(ember.empty(3), 0.5).sum()) == 1.5
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx((2 / 1.04) ** 0.5)
    assert nn.init.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        nn.init.calculate_gain("foo")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(ember.empty(3))
    with pytest.raises(ValueError, match="Mode fan_x not supported"):
        nn.init.kaiming_normal_(ember.empty(3, 3), mode="fan_x")
    p = nn.Parameter(ember.empty(3, 3))
    nn.init.normal_(p)
    assert p.is_leaf and p.grad_fn is None
