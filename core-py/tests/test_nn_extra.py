"""nn.Transformer, lazy modules, Dropout3d/FeatureAlphaDropout, Unflatten, nn.utils.parametrize
and parametrizations, nn.utils.prune, the older weight_norm/spectral_norm hooks and nn.init,
against PyTorch's results stored in fixtures/torch_nn_extra.npz (written by
fixtures/make_nn_extra_fixtures.py, whose cases these tests run on Ember), plus the
properties that random draws can only be checked by."""
import copy
import importlib.util
import json
import math
import os
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import parametrize, parametrizations, prune

_spec = importlib.util.spec_from_file_location(
    "make_nn_extra_fixtures", os.path.join(os.path.dirname(__file__), "fixtures", "make_nn_extra_fixtures.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
ARRAYS, META = cases.load_fixture()
TOL = dict(rtol=1e-9, atol=1e-11)  # float64 throughout: only rounding order differs


def as_ember(value):
    """PyTorch's recorded meta with its type names in Ember's spelling."""
    return json.loads(json.dumps(value).replace("torch.", "ember."))


def check_case(case, arrays, meta=None):
    expected_names = sorted(k[len(case) + 1:] for k in ARRAYS.files if k.startswith(case + "/"))
    assert sorted(arrays) == expected_names
    for name, value in arrays.items():
        np.testing.assert_allclose(value, ARRAYS[f"{case}/{name}"], err_msg=name, **TOL)
    if meta is not None:
        assert as_ember(meta) == as_ember(META[case])


def torch_state(key):
    prefix = f"torch_state/{key}/"
    return {k[len(prefix):]: ARRAYS[k] for k in ARRAYS.files if k.startswith(prefix)}


def check_errors(name, actual):
    expected = as_ember(META[name])
    assert sorted(actual) == sorted(expected)
    for key, value in actual.items():
        assert as_ember(value) == expected[key], key


# ---- nn.Transformer ----

@pytest.mark.parametrize("config", cases.TRANSFORMER_CASES, ids=json.dumps)
def test_transformer_matches_torch(config):
    check_case(f"transformer/{json.dumps(config)}", *cases.transformer_case(ember, config))


def test_transformer_errors_match_torch():
    check_errors("transformer_errors", cases.transformer_errors(ember))


def test_transformer_defaults_and_custom_parts():
    model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=3, dim_feedforward=8)
    assert (model.d_model, model.nhead, model.batch_first) == (16, 4, False)
    assert len(model.encoder.layers) == 1 and len(model.decoder.layers) == 3
    assert isinstance(model.encoder.norm, nn.LayerNorm) and isinstance(model.decoder.norm, nn.LayerNorm)
    w = model.encoder.layers[0].linear1.weight
    bound = math.sqrt(6.0 / (w.shape[0] + w.shape[1]))  # Xavier-uniform on every matrix
    assert float(w.abs().max()) <= bound
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 8), 1)
    custom = nn.Transformer(d_model=16, nhead=4, custom_encoder=encoder, num_decoder_layers=1, dim_feedforward=8)
    assert custom.encoder is encoder
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64)
    assert mask.dtype == ember.float64 and np.isneginf(np.asarray(mask)[0, 1]) and float(mask[1, 0]) == 0


# ---- lazy modules ----

@pytest.mark.parametrize("case", cases.LAZY_CASES, ids=lambda c: f"{c[0]}{c[2]}")
def test_lazy_module_matches_torch(case):
    check_case(cases.lazy_key(*case), *cases.lazy_case(ember, *case))


def test_lazy_load_state_dict_matches_torch():
    check_case("lazy_load", *cases.lazy_load_case(ember))


def test_lazy_errors_match_torch():
    check_errors("lazy_errors", cases.lazy_errors(ember))


def test_lazy_module_copies_pickles_and_initializes_explicitly():
    module = nn.LazyBatchNorm1d()
    clone = pickle.loads(pickle.dumps(copy.deepcopy(module)))
    assert isinstance(clone.weight, nn.UninitializedParameter) and isinstance(clone.running_mean, nn.UninitializedBuffer)
    clone.initialize_parameters(ember.ones(2, 5))
    assert type(clone).__name__ == "LazyBatchNorm1d"  # the class changes on the first call
    assert tuple(clone.running_var.shape) == (5,) and type(clone.running_var) is ember.Tensor
    clone(ember.randn(2, 5))
    assert type(clone) is nn.BatchNorm1d and not clone._forward_pre_hooks
    assert nn.parameter.is_lazy(module.weight) and not nn.parameter.is_lazy(clone.weight)


def test_lazy_parameters_keep_dtype_changes_and_feed_optimizers_after_init():
    module = nn.LazyLinear(2).double()
    assert module.weight.dtype == ember.float64
    module(ember.ones(3, 4, dtype=ember.float64))
    opt = ember.optim.SGD(module.parameters(), lr=0.1)
    module(ember.ones(3, 4, dtype=ember.float64)).sum().backward()
    opt.step()
    assert type(module.weight) is nn.Parameter and module.weight.grad is not None


def test_lazy_module_refuses_data_parallel_and_requires_initialize():
    with pytest.raises(RuntimeError, match="DataParallel"):
        nn.LazyLinear(2)._replicate_for_data_parallel()

    class Half(nn.modules.lazy.LazyModuleMixin, nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.UninitializedParameter()

    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented for Half"):
        Half()(ember.ones(1, 2))


# ---- dropout ----

def test_dropout3d_zeroes_whole_channels_and_rescales():
    ember.manual_seed(0)
    out = np.asarray(nn.Dropout3d(0.4)(ember.ones(20, 30, 2, 3, 2)))
    per_channel = out.reshape(20, 30, -1)
    assert np.all((per_channel == 0).all(-1) | np.isclose(per_channel, 1 / 0.6).all(-1))
    assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.5
    unbatched = np.asarray(nn.Dropout3d(0.5)(ember.ones(8, 2, 2, 2))).reshape(8, -1)
    assert np.all((unbatched == 0).all(-1) | (unbatched == 2).all(-1))
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input"):
        nn.functional.dropout3d(ember.ones(2, 3, 4))
    x = ember.ones(2, 3, 2, 2, 2)
    assert nn.Dropout3d(0.5, inplace=True)(x) is x


def test_feature_alpha_dropout_keeps_selu_moments_per_channel():
    ember.manual_seed(0)
    x = ember.randn(400, 50, 4)
    out = np.asarray(nn.FeatureAlphaDropout(0.3)(x))
    source = np.asarray(x)
    a = 1 / math.sqrt((1.7580993408473766 ** 2 * 0.3 + 1) * 0.7)
    dropped = np.isclose(out, -1.7580993408473766 * a + 1.7580993408473766 * a * 0.3).all(-1)
    kept = np.isclose(out, source * a + 1.7580993408473766 * a * 0.3, atol=1e-5).all(-1)
    assert np.all(dropped | kept) and 0.25 < dropped.mean() < 0.35
    assert abs(out.mean()) < 0.05 and abs(out.std() - 1) < 0.05


def test_shapes_unflatten_flatten_and_dropout_meta_match_torch():
    assert as_ember(cases.shape_and_dropout_meta(ember)) == as_ember(META["shapes_and_dropout"])


# ---- parametrize ----

def test_parametrize_matches_torch():
    check_case("parametrize", *cases.parametrize_case(ember))


def test_parametrize_errors_match_torch():
    check_errors("parametrize_errors", cases.parametrize_errors(ember))


def test_parametrized_module_deepcopies_but_does_not_pickle():
    model = nn.Linear(3, 3)
    parametrize.register_parametrization(model, "weight", cases.symmetric_parametrization(ember)())
    clone = copy.deepcopy(model)
    assert type(clone).__name__ == "ParametrizedLinear"
    np.testing.assert_array_equal(np.asarray(clone.weight.detach()), np.asarray(model.weight.detach()))
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through state_dict"):
        pickle.dumps(model)
    assert type(nn.Linear(2, 2)) is nn.Linear  # other modules keep their class


def test_assigning_a_parametrized_tensor_keeps_the_original_parameter_object():
    model = nn.Linear(3, 3)
    parametrize.register_parametrization(model, "weight", cases.symmetric_parametrization(ember)())
    original = model.parametrizations.weight.original
    model.weight = ember.eye(3) * 2
    assert model.parametrizations.weight.original is original
    np.testing.assert_allclose(np.asarray(model.weight.detach()), 2 * np.eye(3))


def test_transfer_parametrizations_shares_originals():
    source = nn.Linear(3, 3)
    parametrize.register_parametrization(source, "weight", cases.symmetric_parametrization(ember)())
    target = parametrize.transfer_parametrizations_and_params(source, nn.Linear(3, 3))
    assert target.parametrizations.weight.original is source.parametrizations.weight.original
    np.testing.assert_array_equal(np.asarray(target.weight.detach()), np.asarray(source.weight.detach()))


# ---- parametrizations and the older hooks ----

@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("case", cases.WEIGHT_NORM_CASES, ids=str)
def test_weight_norm_matches_torch(case, legacy):
    name, args, dim = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        check_case(f"weight_norm/{legacy}/{name}/{args}/{dim}", *cases.weight_norm_case(ember, name, args, dim, legacy))


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("case", cases.SPECTRAL_CASES, ids=str)
def test_spectral_norm_matches_torch(case, legacy):
    name, args, kwargs = case
    key = f"spectral_norm/{legacy}/{name}/{args}/{json.dumps(kwargs)}"
    arrays, meta, _ = cases.spectral_norm_case(ember, name, args, kwargs, legacy, torch_state(key))
    check_case(key, arrays, meta)


@pytest.mark.parametrize("case", cases.ORTHOGONAL_CASES, ids=str)
def test_orthogonal_matches_torch(case):
    shape, kwargs = case
    key = f"orthogonal/{shape}/{json.dumps(kwargs)}"
    arrays, meta, _ = cases.orthogonal_case(ember, shape, kwargs, torch_state(key))
    if shape[0] != shape[1] and kwargs.get("use_trivialization", True):
        # A non-square base is completed with random columns: only its orthogonality can match.
        base = arrays.pop("registered/parametrizations.weight.0.base")
        np.testing.assert_allclose(base.T @ base, np.eye(base.shape[0]), atol=1e-12)
        arrays["registered/parametrizations.weight.0.base"] = ARRAYS[f"{key}/registered/parametrizations.weight.0.base"]
    check_case(key, arrays, meta)


def test_parametrizations_errors_match_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        check_errors("parametrizations_errors", cases.parametrizations_errors(ember))


def test_spectral_norm_starts_near_the_largest_singular_value():
    """Registration runs 15 power steps from Ember's own random u and v, so even in eval mode
    (no further steps) the weight's spectral norm is about 1."""
    ember.manual_seed(0)
    model = parametrizations.spectral_norm(nn.Linear(6, 5).double()).eval()
    assert abs(np.linalg.norm(np.asarray(model.weight.detach()), 2) - 1) < 1e-3


def test_weight_norm_loads_the_older_hooks_state_dict():
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        old = nn.utils.weight_norm(nn.Linear(4, 3))
    new = parametrizations.weight_norm(nn.Linear(4, 3))
    new.load_state_dict(old.state_dict())
    np.testing.assert_allclose(np.asarray(new.weight.detach()), np.asarray(old.weight.detach()), rtol=1e-6)


def test_removing_the_older_hooks_restores_plain_parameters():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        model = nn.utils.weight_norm(nn.Linear(4, 3), dim=None)
    weight = np.asarray(model.weight.detach())
    nn.utils.remove_weight_norm(model)
    assert list(model.state_dict()) == ["bias", "weight"] and isinstance(model.weight, nn.Parameter)
    np.testing.assert_allclose(np.asarray(model.weight.detach()), weight, rtol=1e-6)
    model = nn.utils.spectral_norm(nn.Conv2d(2, 3, 2))
    assert model.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
    nn.utils.remove_spectral_norm(model)
    assert list(model.state_dict()) == ["bias", "weight"] and not model._state_dict_hooks
    assert not model._load_state_dict_pre_hooks


# ---- prune ----

@pytest.mark.parametrize("case", cases.PRUNE_CASES, ids=str)
def test_prune_matches_torch(case):
    method, kwargs = case
    check_case(f"prune/{method}/{json.dumps(kwargs)}", *cases.prune_case(ember, method, kwargs))


def test_combined_and_global_pruning_match_torch():
    check_case("prune_combined", *cases.prune_combined_case(ember))


def test_prune_errors_match_torch():
    check_errors("prune_errors", cases.prune_errors(ember))


def test_random_pruning_counts_and_structure():
    ember.manual_seed(0)
    module = prune.random_unstructured(nn.Linear(10, 10), "weight", amount=0.37)
    assert int((module.weight_mask == 0).sum()) == 37
    module = prune.random_structured(nn.Linear(10, 8), "weight", amount=3, dim=0)
    mask = np.asarray(module.weight_mask)
    assert (mask.sum(1) == 0).sum() == 3 and set(mask.sum(1)) == {0.0, 10.0}
    method = prune.L1Unstructured(amount=2)
    pruned = method.prune(ember.tensor([3.0, -1.0, 0.5, 2.0]))
    np.testing.assert_array_equal(np.asarray(pruned), [3.0, 0.0, 0.0, 2.0])


def test_pruning_hook_recomputes_the_weight_after_updates():
    module = prune.l1_unstructured(nn.Linear(3, 2), "weight", amount=2)
    with ember.no_grad():
        module.weight_orig.fill_(1.0)
    module(ember.ones(1, 3))
    np.testing.assert_array_equal(np.asarray(module.weight), np.asarray(module.weight_mask))


# ---- nn.init ----

def test_init_deterministic_matches_torch():
    check_case("init", *cases.init_deterministic(ember))


@pytest.mark.parametrize("case", cases.RANDOM_INITS, ids=lambda c: c[0])
def test_init_statistics_match_torch(case):
    """Different generators, same distribution: moments within sampling error, hard bounds
    within a sliver of PyTorch's extremes, exact zero counts (sparse_) and orthogonality."""
    name, shape, kwargs = case
    mean, std, low, high, zeros, gram = cases.init_statistics(ember, name, shape, kwargs)
    t_mean, t_std, t_low, t_high, t_zeros, t_gram = ARRAYS[f"init_stats/{name}"]
    n = math.prod(shape)
    assert abs(mean - t_mean) < 6 * t_std / math.sqrt(n) + 1e-12
    assert abs(std - t_std) < 0.03 * t_std
    if name in ("uniform_", "trunc_normal_", "xavier_uniform_", "kaiming_uniform_"):
        spread = t_high - t_low
        assert t_low - 0.01 * spread < low and high < t_high + 0.01 * spread
    assert zeros == t_zeros and gram < 1e-10 and t_gram < 1e-5


def test_init_errors_match_torch():
    check_errors("init_errors", cases.init_errors(ember))


@pytest.mark.parametrize("name", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
                                  "kaiming_uniform_", "kaiming_normal_", "orthogonal_"])
def test_init_generator_argument_reproduces_draws(name):
    fn = getattr(nn.init, name)
    first = fn(ember.empty(4, 5), generator=ember.Generator().manual_seed(3))
    second = fn(ember.empty(4, 5), generator=ember.Generator().manual_seed(3))
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))


def test_init_has_the_deprecated_aliases():
    for old in ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                "kaiming_normal", "orthogonal", "sparse"]:
        assert getattr(nn.init, old).__name__ == old
    with pytest.warns(FutureWarning, match="`nn.init.constant` is now deprecated in favor of `nn.init.constant_`."):
        out = nn.init.constant(ember.empty(2), 3.0)
    np.testing.assert_array_equal(np.asarray(out), [3.0, 3.0])


def test_parametrizing_a_buffer_keeps_it_a_buffer():
    module = nn.Module()
    module.register_buffer("scale", ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
    parametrize.register_parametrization(module, "scale", cases.symmetric_parametrization(ember)())
    assert list(module.state_dict()) == ["parametrizations.scale.original"] and not list(module.parameters())
    np.testing.assert_array_equal(np.asarray(module.scale), [[1.0, 2.0], [2.0, 4.0]])
    parametrize.remove_parametrizations(module, "scale")
    assert list(module.state_dict()) == ["scale"] and type(module) is nn.Module
