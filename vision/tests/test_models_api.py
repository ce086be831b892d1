"""The multi-weight API and the model registry."""
import copy
import pickle
import warnings

import pytest

import ember
import embervision.models as M
from embervision.models import ResNet50_Weights, get_model, get_model_builder, get_model_weights, get_weight, list_models


def test_verify():
    assert ResNet50_Weights.verify(None) is None
    assert ResNet50_Weights.verify(ResNet50_Weights.IMAGENET1K_V2) is ResNet50_Weights.IMAGENET1K_V2
    assert ResNet50_Weights.verify("IMAGENET1K_V2") is ResNet50_Weights.IMAGENET1K_V2
    assert ResNet50_Weights.verify("ResNet50_Weights.IMAGENET1K_V1") is ResNet50_Weights.IMAGENET1K_V1
    assert ResNet50_Weights.verify("DEFAULT") is ResNet50_Weights.IMAGENET1K_V2
    with pytest.raises(TypeError, match="expected ResNet50_Weights but received ResNet18_Weights"):
        ResNet50_Weights.verify(M.ResNet18_Weights.IMAGENET1K_V1)
    with pytest.raises(ValueError, match="IMAGENET1K_V9"):
        ResNet50_Weights.verify("IMAGENET1K_V9")


def test_default_repr_meta():
    assert ResNet50_Weights.DEFAULT is ResNet50_Weights.IMAGENET1K_V2
    assert repr(ResNet50_Weights.DEFAULT) == "ResNet50_Weights.IMAGENET1K_V2"
    assert [m.name for m in ResNet50_Weights] == ["IMAGENET1K_V1", "IMAGENET1K_V2"]
    meta = ResNet50_Weights.IMAGENET1K_V2.meta
    assert len(meta["categories"]) == 1000 and meta["categories"][0] == "tench"
    assert meta["_metrics"]["ImageNet-1K"]["acc@1"] == 80.858
    assert meta["num_params"] == 25557032
    assert ResNet50_Weights.IMAGENET1K_V1.url == "https://download.pytorch.org/models/resnet50-0676ba61.pth"
    assert ResNet50_Weights.IMAGENET1K_V2.transforms.keywords == {"crop_size": 224, "resize_size": 232}


def test_pickle_and_deepcopy():
    w = ResNet50_Weights.IMAGENET1K_V2
    assert pickle.loads(pickle.dumps(w)) is w
    assert copy.deepcopy(w) is w and copy.copy(w) is w
    assert copy.deepcopy({"w": w})["w"] is w


def test_transforms_preset():
    from embervision.transforms import InterpolationMode
    from embervision.transforms._presets import ImageClassification

    t = ResNet50_Weights.IMAGENET1K_V2.transforms()
    assert isinstance(t, ImageClassification)
    assert (t.crop_size, t.resize_size, t.interpolation) == ([224], [232], InterpolationMode.BILINEAR)
    assert list(t.mean) == [0.485, 0.456, 0.406] and list(t.std) == [0.229, 0.224, 0.225]
    assert M.Inception_V3_Weights.DEFAULT.transforms().resize_size == [342]
    assert ResNet50_Weights.IMAGENET1K_V2.transforms(crop_size=160).crop_size == [160]  # keywords override
    with ember.no_grad():
        assert tuple(t(ember.zeros(3, 300, 400, dtype=ember.uint8)).shape) == (3, 224, 224)


def test_registry():
    assert "resnet50" in list_models()
    assert list_models(include="resnet1*") == ["resnet101", "resnet152", "resnet18"]
    assert list_models(include=["resnet1*", "wide*"], exclude="*101*") == ["resnet152", "resnet18", "wide_resnet50_2"]
    assert list_models(module=M) == list_models()
    assert get_model_builder("ResNet18") is M.resnet18
    with pytest.raises(ValueError, match="Unknown model nope"):
        get_model_builder("nope")
    assert get_model_weights("resnet50") is ResNet50_Weights
    assert get_model_weights(M.resnet50) is ResNet50_Weights
    assert get_weight("ResNet50_Weights.IMAGENET1K_V1") is ResNet50_Weights.IMAGENET1K_V1
    with pytest.raises(ValueError):
        get_weight("nodot")
    with pytest.raises(ValueError, match="Nope_Weights"):
        get_weight("Nope_Weights.X")
    with pytest.raises(ValueError, match="already registered"):
        M.register_model("resnet18")(lambda: None)
    model = get_model("squeezenet1_1", num_classes=3)
    assert model.classifier[1].out_channels == 3


def test_num_classes_checked_against_weights():
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 1000 but got 10 instead."):
        M.resnet18(weights="DEFAULT", num_classes=10)


class _Loaded(Exception):
    """Raised by the stubbed loader to show it was reached."""


def test_pretrained_legacy_interface(monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = M.squeezenet1_1(pretrained=False, num_classes=4)
    texts = [str(w.message) for w in caught]
    assert any("'pretrained' is deprecated since 0.13" in t for t in texts)
    assert any("equivalent to passing `weights=None`" in t for t in texts)
    assert model.classifier[1].out_channels == 4

    def fake(self, *args, **kwargs):
        raise _Loaded(self)

    monkeypatch.setattr(M.WeightsEnum, "get_state_dict", fake)
    with pytest.warns(UserWarning, match="ResNet50_Weights.IMAGENET1K_V1"):
        with pytest.raises(_Loaded) as info:
            M.resnet50(pretrained=True)
    assert info.value.args[0] is ResNet50_Weights.IMAGENET1K_V1
    with pytest.raises(_Loaded) as info:
        M.resnet50(weights="DEFAULT")
    assert info.value.args[0] is ResNet50_Weights.IMAGENET1K_V2
    with pytest.warns(UserWarning, match="positional"):
        M.squeezenet1_1(None, True)


def test_weights_load_from_local_file(tmp_path, monkeypatch):
    """get_state_dict goes through ember.hub: a checkpoint placed by hand in the hub directory is used
    (check_hash=False: this stand-in file does not have the published file's hash)."""
    ember.manual_seed(0)
    src = M.squeezenet1_1()
    w = M.SqueezeNet1_1_Weights.IMAGENET1K_V1
    name = w.url.rsplit("/", 1)[1]
    (tmp_path / "checkpoints").mkdir()
    ember.save(src.state_dict(), tmp_path / "checkpoints" / name)
    from ember import hub

    monkeypatch.setattr(hub, "_hub_dir", str(tmp_path))
    sd = w.get_state_dict(progress=False, check_hash=False)
    model = M.squeezenet1_1()
    model.load_state_dict(sd)
    assert ember.equal(model.features[0].weight, src.features[0].weight)


def test_all_torchvision_classification_builders_registered():
    assert len(list_models()) == 80


def test_pretrained_without_legacy_weights():
    with pytest.raises(ValueError, match="No weights available for model vit_h_14"):
        M.vit_h_14(pretrained=True)
    assert M.ViT_H_14_Weights.DEFAULT is M.ViT_H_14_Weights.IMAGENET1K_SWAG_E2E_V1


def test_efficientnet_current_urls():
    # TorchVision renamed the B0-B4 files whose hash prefix did not match their SHA-256.
    assert M.EfficientNet_B0_Weights.IMAGENET1K_V1.url.endswith("efficientnet_b0_rwightman-7f5810bc.pth")


def test_old_checkpoint_key_names():
    # DenseNet ("norm.1") and ViT ("mlp.linear_1") checkpoints as TorchVision published them.
    ember.manual_seed(0)
    vit = M.vit_b_32(image_size=32, num_classes=2)
    sd = vit.state_dict()
    old = type(sd)()
    for k, v in sd.items():
        old[k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2.")] = v
    assert any("linear_1" in k for k in old)
    fresh = M.vit_b_32(image_size=32, num_classes=2)
    fresh.load_state_dict(old)
    assert ember.equal(fresh.encoder.layers[0].mlp[0].weight, vit.encoder.layers[0].mlp[0].weight)

    dn = M.densenet121(num_classes=2)
    sd = {k if k.endswith("num_batches_tracked") else k.replace("norm1.", "norm.1.").replace("conv2.", "conv.2."): v
          for k, v in dn.state_dict().items()}

    class _W:
        def get_state_dict(self, progress):
            return dict(sd)

    from embervision.models.densenet import _load_state_dict

    fresh = M.densenet121(num_classes=2)
    _load_state_dict(fresh, _W(), False)
    assert ember.equal(fresh.features.denseblock1.denselayer1.norm1.weight,
                       dn.features.denseblock1.denselayer1.norm1.weight)


def test_readme_model_table_is_generated_from_meta():
    """vision/README.md's weights table is what scripts/gen_model_table.py makes from the meta now."""
    import importlib.util
    import os

    script = os.path.join(os.path.dirname(__file__), "..", "scripts", "gen_model_table.py")
    spec = importlib.util.spec_from_file_location("gen_model_table", script)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    readme = open(gen.README).read()
    assert f"{gen.START}\n{gen.table()}\n{gen.END}" in readme, "run vision/scripts/gen_model_table.py"
    assert "`ResNet50_Weights.IMAGENET1K_V2` | 80.858 | 95.434 | 25.6M | 4.09 | 97.8 |" in readme
