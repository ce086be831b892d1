"""Every domain package installs beside `ember` and shares its one Tensor type."""
import importlib

import pytest

import ember


@pytest.mark.parametrize("name", ["embervision", "emberaudio", "embertext", "emberrec", "emberarrow", "emberdata"])
def test_domain_packages_import_and_share_ember(name):
    module = importlib.import_module(name)
    assert module.__version__ == ember.__version__
    assert ember.Tensor is ember._C.Tensor
