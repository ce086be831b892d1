"""`ember.compat`: torch names import Ember's modules while installed, missing ones say so,
`uninstall` restores what was there (a real PyTorch, here a stand-in package), and
`python -m ember.compat` runs scripts as Python would. The README's table of example scripts
matches examples/compat/, and each script it lists runs through `python -m ember.compat`."""
import importlib
import os
import re
import subprocess
import sys

import pytest

import ember
import ember.compat
import emberdata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples", "compat")
TABLE_ROW = re.compile(r"^\| \[`(examples/compat/[^`]+)`\]\([^)]*\) \| [^|]+ \| ([^|]+?) \|$")


@pytest.fixture
def shim():
    ember.compat.install()
    yield
    ember.compat.uninstall()


@pytest.fixture
def real_torch_on_path(tmp_path, monkeypatch):
    """A package named torch on the path, standing for an installed PyTorch; the test's imports
    of it are forgotten afterwards, so later tests do not meet it."""
    package = tmp_path / "torch"
    (package / "nn").mkdir(parents=True)
    (package / "__init__.py").write_text("REAL = True\n")
    (package / "nn" / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = forget_torch()
    yield
    ember.compat.uninstall()
    forget_torch()
    sys.modules.update(before)


def forget_torch():
    """Takes the loaded torch modules out of sys.modules, and returns them."""
    return {name: sys.modules.pop(name) for name in list(sys.modules) if name.partition(".")[0] == "torch"}


@pytest.mark.parametrize("torch_name, ember_module", [
    ("torch", "ember"),
    ("torch.nn", "ember.nn"),
    ("torch.nn.functional", "ember.nn.functional"),
    ("torch.optim.lr_scheduler", "ember.optim.lr_scheduler"),
    ("torch.autograd.functional", "ember.autograd.functional"),
    ("torch.backends.cudnn", "ember.backends.cudnn"),
    ("torch.serialization", "ember.serialization"),
    ("torch.func", "ember.func"),
    ("torch.utils.data", "emberdata"),
    ("torch.utils.data.sampler", "emberdata.sampler"),
    ("torch.utils.data.distributed", "emberdata.sampler"),
    ("torch.utils.data.datapipes.iter", "emberdata.datapipes.iter"),
    ("torchdata.datapipes.iter", "emberdata.datapipes.iter"),
    ("torchdata.dataloader2", "emberdata.dataloader2"),
    ("torchtext.vocab", "embertext.vocab"),
    ("torchvision", "embervision"),
    ("functorch", "ember.func"),
])
def test_torch_names_import_embers_modules(shim, torch_name, ember_module):
    assert importlib.import_module(torch_name) is importlib.import_module(ember_module)
    assert ember.compat.ember_name(torch_name) == ember_module


def test_the_modules_are_embers_own(shim):
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader

    assert torch.Tensor is ember.Tensor and F.relu is ember.nn.functional.relu and DataLoader is emberdata.DataLoader
    assert torch.__name__ == "ember" and torch.__spec__.name == "ember"  # not re-initialised as torch
    assert torch.utils.data is emberdata  # PyTorch imports it with torch; so does the shim, on first use


def test_missing_module_names_the_torch_name(shim):
    with pytest.raises(ModuleNotFoundError, match=r"^torch\.distributions is not in Ember yet \(ember\.compat maps torch to ember") as e:
        import torch.distributions  # noqa: F401
    assert e.value.name == "torch.distributions"
    with pytest.raises(ModuleNotFoundError, match=r"^torchvision\.prototype is not in Ember yet"):
        import torchvision.prototype  # noqa: F401


def test_missing_attribute_names_the_torch_name(shim):
    import torch

    with pytest.raises(AttributeError, match=r"^torch\.distributions is not in Ember yet"):
        torch.distributions
    with pytest.raises(AttributeError, match=r"^torch\.nn\.NoSuchLayer is not in Ember yet"):
        torch.nn.NoSuchLayer
    assert not hasattr(torch, "distributions") and getattr(torch.nn.functional, "no_such_op", None) is None
    # `from x import name` would otherwise turn the AttributeError into "cannot import name ... from 'ember.nn'".
    with pytest.raises(ImportError, match=r"^torch\.nn\.NoSuchLayer is not in Ember yet"):
        from torch.nn import NoSuchLayer  # noqa: F401


def test_uninstall_restores_a_real_torch(real_torch_on_path):
    import torch as real
    import torch.nn  # noqa: F401

    ember.compat.install()
    try:
        import torch
        import torch.nn  # noqa: F811
        assert torch is ember and sys.modules["torch.nn"] is ember.nn
        assert torch.utils.data is emberdata
    finally:
        ember.compat.uninstall()
    import torch
    assert torch is real and sys.modules["torch.nn"].REAL
    # Nothing the shim set on Ember's modules outlives it.
    assert "data" not in vars(ember.utils) and "__getattr__" not in vars(ember) and "__getattr__" not in vars(ember.nn)


def test_install_takes_precedence_over_a_real_torch_on_the_path(real_torch_on_path):
    ember.compat.install()
    ember.compat.install()  # idempotent
    try:
        assert importlib.import_module("torch") is ember
    finally:
        ember.compat.uninstall()
    assert importlib.import_module("torch").REAL
    assert not ember.compat.is_installed()


def run_compat(*args, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-m", "ember.compat", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_runner_sets_argv_main_and_path_as_python_does(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 42\n")
    script = tmp_path / "script.py"
    script.write_text(
        "import sys, torch, helper\n"
        "print(__name__, sys.argv, sys.path[0] == sys.argv[0].rpartition('/')[0], torch.__name__, helper.VALUE)\n"
        "sys.exit(3)\n")
    done = run_compat(str(script), "--lr", "0.1", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stdout.split() == ["__main__", f"['{script}',", "'--lr',", "'0.1']", "True", "ember", "42"]


def test_runner_runs_a_module(tmp_path):
    (tmp_path / "trainer.py").write_text("import sys, torch\nprint(__name__, sys.argv[1:], torch.__name__)\n")
    done = run_compat("-m", "trainer", "x", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["__main__", "['x']", "ember"]


def test_runner_without_a_script_prints_usage():
    done = run_compat()
    assert done.returncode == 2 and "usage: python -m ember.compat" in done.stderr


def readme_table():
    with open(os.path.join(ROOT, "README.md")) as f:
        return dict(m.groups() for m in map(TABLE_ROW.match, f.read().splitlines()) if m)


def test_readme_table_lists_every_example_script():
    listed = set(readme_table())
    present = {f"examples/compat/{name}" for name in os.listdir(EXAMPLES) if name.endswith(".py")}
    assert listed == present, f"not in the README table: {sorted(present - listed)}; not in examples/compat: {sorted(listed - present)}"


@pytest.mark.parametrize("script, status", sorted(readme_table().items()))
def test_example_script_runs_as_the_table_says(script, status):
    assert status == "runs", f"{script}: unknown status {status!r}"
    done = run_compat(script)
    assert done.returncode == 0, f"{script} failed under python -m ember.compat:\n{done.stderr[-3000:]}"
