"""Every package's pyproject.toml: license, readme, urls, classifiers and authors, Ember's own
packages pinned to a compatible range, and every third-party module the code imports declared."""
import ast
import pathlib
import shutil
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = pathlib.Path(__file__).resolve().parent.parent
# folder -> the import package it ships
PACKAGES = {"core-py": "ember", "vision": "embervision", "audio": "emberaudio", "text": "embertext",
            "rec": "emberrec", "arrow": "emberarrow", "data": "emberdata"}
REPOSITORY = "https://github.com/ember-ml/ember"
CLASSIFIERS = [
    "Development Status :: 3 - Alpha",
    "Operating System :: POSIX :: Linux",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
]
# Import names whose distribution is named otherwise.
DISTRIBUTIONS = {"yaml": "PyYAML", "PIL": "Pillow", "cv2": "opencv-python", "sklearn": "scikit-learn", "torchx": "torchx-nightly"}
# Imports left undeclared on purpose: (package, module) -> why.
UNDECLARED = {}


def project(folder):
    return tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]


def requirements(meta):
    extras = meta.get("optional-dependencies", {}).values()
    return [Requirement(r) for r in meta.get("dependencies", []) + [r for extra in extras for r in extra]]


def source_dir(folder):
    return ROOT / folder / ("python" if folder == "core-py" else "") / PACKAGES[folder]


def imported_modules(folder):
    """Top-level module -> the files that import it, over the package's code (tests excluded)."""
    found = {}
    for path in source_dir(folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.partition(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


@pytest.mark.parametrize("folder", PACKAGES)
def test_license_readme_urls_classifiers_authors(folder):
    meta = project(folder)
    assert meta["license"] == tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["license"]
    assert meta["license-files"] == ["LICENSE"]
    assert (ROOT / folder / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert (ROOT / folder / meta["readme"]).read_text().startswith(f"# {meta['name']}\n")
    assert meta["urls"] == {"Homepage": REPOSITORY, "Repository": REPOSITORY, "Issues": f"{REPOSITORY}/issues"}
    # PEP 639: the SPDX `license` replaces License :: classifiers (setuptools refuses both)
    assert meta["classifiers"] == CLASSIFIERS
    assert meta["authors"] == [{"name": "The Ember authors"}]
    assert meta["requires-python"] == ">=3.11"


def test_license_file_names_the_authors():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License\n") and "The Ember authors" in text


@pytest.mark.parametrize("folder", [folder for folder in PACKAGES if folder != "core-py"])
def test_domain_packages_pin_ember_packages_to_this_minor_version(folder):
    """They reach into each other's private parts: a compatible range, bounded above."""
    meta = project(folder)
    ours = {canonicalize_name(project(f)["name"]): project(f)["version"] for f in PACKAGES}
    pinned = [r for r in requirements(meta) if canonicalize_name(r.name) in ours]
    assert "ember" in [r.name for r in pinned]
    for requirement in pinned:
        major, minor, _ = ours[canonicalize_name(requirement.name)].split(".")
        assert requirement.specifier.contains(f"{major}.{minor}.0"), requirement
        assert not requirement.specifier.contains(f"{major}.{int(minor) + 1}.0"), requirement


@pytest.mark.parametrize("folder", PACKAGES)
def test_every_imported_distribution_is_declared(folder):
    meta = project(folder)
    declared = {canonicalize_name(r.name) for r in requirements(meta)}
    own = PACKAGES[folder]
    missing = {name: sorted(files) for name, files in imported_modules(folder).items()
               if name != own and name not in sys.stdlib_module_names and (own, name) not in UNDECLARED
               and canonicalize_name(DISTRIBUTIONS.get(name, name)) not in declared}
    assert not missing, f"{meta['name']} imports these without declaring them in pyproject.toml: {missing}"


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout")
def test_gitignore_covers_build_outputs():
    paths = [f"{folder}/{output}/x" for folder, package in PACKAGES.items()
             for output in ("build", "dist", f"{package}.egg-info")]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=ROOT, capture_output=True, text=True)
    assert ignored.stdout.split() == paths


CRATES = ["ember-core", "ember-text", "ember-audio", "ember-arrow", "ember-rec"]


def test_workspace_rust_version_is_the_avx512_one():
    # `target_feature(enable = "avx512f")` and the AVX-512 intrinsics are stable since Rust 1.89.
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]
    assert workspace["rust-version"] == "1.89" and workspace["repository"] == REPOSITORY


@pytest.mark.parametrize("crate", CRATES)
def test_each_crate_is_publishable(crate):
    folder = ROOT / "crates" / crate
    package = tomllib.loads((folder / "Cargo.toml").read_text())["package"]
    for field in ("version", "edition", "license", "rust-version", "authors", "repository", "homepage"):
        assert package[field] == {"workspace": True}, f"{crate}: {field} is not the workspace's"
    assert package["description"] and package["keywords"] and package["categories"]
    assert package["documentation"] == f"https://docs.rs/{crate}" and package["readme"] == "README.md"
    assert (folder / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    readme = (folder / "README.md").read_text()
    assert "```rust\n" in readme, f"{crate}'s README has no example"
    # The README's examples run as doc tests: included as the crate's docs or as a doctest item.
    assert 'include_str!("../README.md")' in (folder / "src" / "lib.rs").read_text()
