"""The wheels in $EMBER_WHEEL_DIR (what `make test` and `make wheels` build into dist/) install
alone into a fresh virtualenv, without the repository, and each package runs a small job there.

Only the wheels come from that folder; their dependencies (NumPy, Pillow, ...) come from the
package index.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

WHEELS = os.environ.get("EMBER_WHEEL_DIR")
pytestmark = pytest.mark.skipif(not WHEELS, reason="set by `make test` and `make wheels`, which build the wheels first")

PACKAGES = ["ember", "embervision", "emberaudio", "embertext", "emberrec", "emberarrow", "emberdata"]

# One small job per package, run from a folder outside the repository.
SMOKE = {
    "ember": "import ember; x = ember.arange(6.0).reshape(2, 3); assert (x @ x.T).tolist() == [[5.0, 14.0], [14.0, 50.0]]",
    "embervision": "import ember, embervision.transforms as T; assert T.Resize(4)(ember.rand(3, 8, 8)).shape == (3, 4, 4)",
    "emberaudio": "import ember, emberaudio.functional as F; assert F.amplitude_to_DB(ember.ones(4), 10.0, 1e-10, 0.0).tolist() == [0.0] * 4",
    "embertext": "import embertext.transforms as T; assert T.ToTensor(padding_value=0)([[1, 2], [3]]).tolist() == [[1, 2], [3, 0]]",
    "emberrec": "import ember, emberrec; kjt = emberrec.KeyedJaggedTensor(['f'], ember.tensor([1, 2]), lengths=ember.tensor([2, 0])); "
                "assert kjt['f'].to_padded_dense().tolist() == [[1, 2], [0, 0]]",
    "emberarrow": "import ember, emberarrow as ta; df = ta.dataframe({'a': [1, 2, 3]}); "
                  "assert (df['a'] * 2).to_pylist() == [2, 4, 6] and ta.__version__ == ember.__version__",
    "emberdata": "import ember, emberdata; assert [b.tolist() for b in emberdata.DataLoader(ember.arange(4), batch_size=2)] == [[0, 1], [2, 3]]",
}


def wheel_of(name):
    found = glob.glob(os.path.join(WHEELS, f"{name}-*.whl"))
    assert len(found) == 1, f"expected one {name} wheel in {WHEELS}, found {found}"
    return found[0]


def runs(interpreter):
    """Whether `interpreter` starts (a pyenv shim of a version not selected does not)."""
    return subprocess.run([interpreter, "-c", "pass"], capture_output=True).returncode == 0


def interpreters():
    """This Python, and the newer CPythons the machine has (on the PATH or installed by pyenv):
    the ember wheel is abi3, one wheel for all of them."""
    found = {sys.version_info[:2]: sys.executable}
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for minor in (12, 13, 14):
        candidates = [shutil.which(f"python3.{minor}"), *sorted(glob.glob(f"{pyenv}/versions/3.{minor}.*/bin/python3.{minor}"))]
        usable = [c for c in candidates if c and runs(c)]
        if usable:
            found[(3, minor)] = usable[0]
    return found


def clean_env():
    """The environment without the repository's import paths: only the virtualenv may serve."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


@pytest.fixture(scope="module", params=sorted(interpreters().items()), ids=lambda kv: "py%d.%d" % kv[0])
def venv(request, tmp_path_factory):
    _, interpreter = request.param
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([interpreter, "-m", "venv", str(root)], check=True, env=clean_env())
    python = str(root / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--find-links", WHEELS, *[wheel_of(p) for p in PACKAGES]],
        check=True,
        cwd=root,
        env=clean_env(),
    )
    return python, root


def test_the_ember_wheel_is_one_abi3_wheel_for_manylinux_2_28():
    name = os.path.basename(wheel_of("ember"))
    tags = re.fullmatch(r"ember-[^-]+-(cp\d+)-(abi3)-(.+)\.whl", name)
    assert tags, f"not an abi3 wheel: {name}"
    assert tags.group(1) == "cp311"
    platforms = tags.group(3).split(".")
    assert all(re.fullmatch(r"manylinux_2_(\d+)_x86_64|manylinux2014_x86_64", p) for p in platforms), platforms
    assert min(int(m) for m in re.findall(r"manylinux_2_(\d+)", tags.group(3))) <= 28


def test_the_extension_needs_only_the_manylinux_2_28_libraries(tmp_path):
    with zipfile.ZipFile(wheel_of("ember")) as whl:
        [so] = [n for n in whl.namelist() if n.endswith(".so")]
        assert so == "ember/_C.abi3.so"
        whl.extract(so, tmp_path)
    needed = subprocess.run(["objdump", "-p", str(tmp_path / so)], capture_output=True, text=True, check=True).stdout
    libraries = set(re.findall(r"NEEDED\s+(\S+)", needed))
    # manylinux_2_28's whitelist, less what an extension never needs.
    assert libraries <= {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libgcc_s.so.1", "ld-linux-x86-64.so.2"}, libraries
    versions = re.findall(r"GLIBC_(\d+)\.(\d+)", subprocess.run(["objdump", "-T", str(tmp_path / so)], capture_output=True, text=True, check=True).stdout)
    assert max((int(a), int(b)) for a, b in versions) <= (2, 28)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_runs_from_its_wheel_outside_the_repository(venv, package):
    python, root = venv
    where = subprocess.run(
        [python, "-c", f"import {package}; print({package}.__file__)"], capture_output=True, text=True, cwd=root, env=clean_env()
    )
    assert where.returncode == 0, where.stderr
    where = where.stdout.strip()
    assert where.startswith(str(root)), f"{package} was imported from {where}, not from the virtualenv"
    run = subprocess.run([python, "-c", SMOKE[package]], capture_output=True, text=True, cwd=root, env=clean_env())
    assert run.returncode == 0, run.stderr
