"""embertext's cache: vocabularies given by URL are fetched once by Ember's downloader."""
import errno
import hashlib
import os
import urllib.parse

from ember._download import download


def cache_dir():
    """`$EMBERTEXT_CACHE`, else `~/.cache/embertext`."""
    return os.environ.get("EMBERTEXT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "embertext")


def _is_url(path):
    return urllib.parse.urlparse(path).scheme in ("http", "https", "ftp", "file")


def cached_path(path_or_url, name="vocab_path", progress=True):
    """Returns a local file for `path_or_url`, downloading URLs into `cache_dir()` once.

    The cached name carries a hash of the URL, so two URLs ending in `vocab.txt` do not collide.
    """
    if not isinstance(path_or_url, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str path or URL, got {type(path_or_url).__name__}")
    path = os.fspath(path_or_url)
    if not _is_url(path):
        if not os.path.isfile(path):
            raise FileNotFoundError(errno.ENOENT, f"{name}: no such file", path)
        return path
    digest = hashlib.sha256(path.encode()).hexdigest()[:16]
    target = os.path.join(cache_dir(), f"{digest}-{os.path.basename(urllib.parse.urlparse(path).path) or 'asset'}")
    return download(path, target, progress=progress, hint="or pass the local file's path instead")
