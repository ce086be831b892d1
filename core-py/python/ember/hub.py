"""Downloading checkpoints, as `torch.hub` does: `load_state_dict_from_url`,
`download_url_to_file`, `get_dir` and `set_dir`.

Where files go (`get_dir()`), first match wins:

1. the directory given to `set_dir`;
2. `$EMBER_HOME/hub` (Ember's own setting, so it wins over PyTorch's);
3. `$TORCH_HOME/hub` (so a machine set up for PyTorch shares the weights it already downloaded);
4. `$XDG_CACHE_HOME/ember/hub`, else `~/.cache/ember/hub`.

Checkpoints live in `<get_dir()>/checkpoints`.

Hash checks. A file name like `resnet50-11ad3fa6.pth` carries the first hex digits (8 or more) of
its SHA-256 (torch.hub's convention). With `check_hash=True` (Ember's default; PyTorch's is
False) the digits are checked when the file is downloaded *and* every time a cached copy is
loaded: a cached file that does not match (a truncated copy, a disk error) is downloaded again,
with a warning. `check_hash=False` checks nothing, as in PyTorch. A name without the digits is
never checked.

Files are read with `ember.load`, weights-only by default (PyTorch's `load_state_dict_from_url`
defaults to `weights_only=False`): the `.pth` files TorchVision publishes load unchanged, and a
checkpoint that needs arbitrary pickled objects needs `weights_only=False` (trusted files only).

Offline, or when a download fails, the error names the URL and the path where a copy placed by
hand is picked up.
"""
import hashlib
import os
import re
import warnings
from urllib.parse import urlparse

from ember import _download

__all__ = ["download_url_to_file", "get_dir", "load_state_dict_from_url", "set_dir"]

# torch.hub's convention: `-<hex digits>` right before the extension.
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")

_hub_dir = None


def get_dir():
    """The hub directory (see the module docstring for the order of the settings)."""
    if _hub_dir is not None:
        return _hub_dir
    if home := os.environ.get("EMBER_HOME"):
        return os.path.join(os.path.expanduser(home), "hub")
    if home := os.environ.get("TORCH_HOME"):
        return os.path.join(os.path.expanduser(home), "hub")
    return os.path.join(_download.ember_home(), "hub")


def set_dir(d):
    """Makes `d` the hub directory for this process (over `$EMBER_HOME` and `$TORCH_HOME`)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _hash_prefix(filename):
    match = HASH_REGEX.search(filename)
    prefix = match.group(1) if match else None
    return prefix if prefix and len(prefix) >= 8 else None


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Downloads `url` to `dst` (through `dst + '.part'`, renamed once complete and verified).

    With `hash_prefix`, the file's SHA-256 must start with it, otherwise the download is deleted
    and a RuntimeError raised. A download interrupted earlier resumes where the server allows it.
    """
    dst = os.path.expanduser(os.fspath(dst))
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    part = dst + ".part"
    resumed = _download._fetch_part(url, part, dst, progress, None)
    if hash_prefix is not None:
        digest = _sha256(part)
        if digest[: len(hash_prefix)] != hash_prefix:
            os.remove(part)
            if resumed:  # the kept bytes may belong to another version of the file: one clean retry
                return download_url_to_file(url, dst, hash_prefix, progress)
            raise RuntimeError(
                f'invalid hash value (expected "{hash_prefix}", got "{digest}") for the download of {url}; '
                f"it was deleted. Try again later, or place a correct copy at {dst} by hand"
            )
    os.replace(part, dst)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=True,
                             file_name=None, weights_only=True):
    """Loads the checkpoint at `url`, downloading it into `model_dir` (default
    `<get_dir()>/checkpoints`) first unless a copy is there already.

    `file_name` names the cached copy (default: the last part of the URL's path). See the module
    docstring for `check_hash` and `weights_only` (both default to the safe choice, unlike PyTorch).
    """
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    model_dir = os.path.expanduser(os.fspath(model_dir))
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    hash_prefix = _hash_prefix(filename) if check_hash else None
    if os.path.exists(cached_file) and hash_prefix is not None:
        digest = _sha256(cached_file)
        if digest[: len(hash_prefix)] != hash_prefix:
            warnings.warn(
                f"{cached_file} has SHA-256 {digest}, which does not start with {hash_prefix} as its name says "
                f"(a truncated or damaged copy): downloading {url} again",
                stacklevel=2,
            )
            os.remove(cached_file)
    if not os.path.exists(cached_file):
        if progress:
            import sys

            sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    import ember

    return ember.load(cached_file, map_location=map_location, weights_only=weights_only)
