"""Local paths for assets given as a path or a URL: URLs are downloaded once into a cache."""
import errno
import hashlib
import os
import urllib.error
import urllib.parse
import urllib.request

from tqdm.auto import tqdm

_CHUNK = 1 << 16


def cache_dir():
    """`$EMBERTEXT_CACHE`, else `~/.cache/embertext`."""
    return os.environ.get("EMBERTEXT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "embertext")


def _is_url(path):
    return urllib.parse.urlparse(path).scheme in ("http", "https", "ftp", "file")


def cached_path(path_or_url, name="vocab_path", progress=True):
    """Returns a local file for `path_or_url`, downloading URLs into `cache_dir()` once.

    The cached name carries a hash of the URL, so two URLs ending in `vocab.txt` do not collide.
    A download goes to a `.part` file first and is renamed only when complete, so an interrupted
    download is never mistaken for a finished one.
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
    if not os.path.isfile(target):
        _download(path, target, progress)
    return target


def _download(url, target, progress):
    os.makedirs(os.path.dirname(target), exist_ok=True)
    part = target + ".part"
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(part, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=os.path.basename(target), disable=not progress) as bar:
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, OSError) as e:
        if os.path.exists(part):
            os.remove(part)
        reason = getattr(e, "reason", e)
        raise OSError(
            f"could not download {url} ({reason}); download it by hand and place it at {target}, "
            "or pass the local file's path instead"
        ) from e
    os.replace(part, target)
