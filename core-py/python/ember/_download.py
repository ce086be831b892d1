"""Downloads into a cache, shared by the domain packages (vocabularies, datasets, decoder assets).

A download goes to `<target>.part` and is renamed only once complete (and, when an MD5 is known,
verified), so a half-written file is never mistaken for a finished one. An interrupted download
keeps its `.part`: the next attempt asks the server for the rest (an HTTP Range request) and
starts over when the server cannot resume.
"""
import hashlib
import http.client
import os
import urllib.error
import urllib.request
import warnings

from tqdm.auto import tqdm

_CHUNK = 1 << 16
_TIMEOUT_S = 60


def ember_home():
    """Ember's cache root (the role `$TORCH_HOME` plays for PyTorch): `$EMBER_HOME`, else
    `$XDG_CACHE_HOME/ember`, else `~/.cache/ember`."""
    if home := os.environ.get("EMBER_HOME"):
        return home
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ember")


def file_md5(path):
    digest = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def download(url, target, md5=None, progress=True, hint=None):
    """Makes `target` a complete copy of `url` and returns it; nothing is fetched when it already is.

    With `md5`, a present file is trusted only if its MD5 matches (otherwise it is downloaded
    again, with a warning), and a fresh download must match too. `hint` ends the error message
    raised when the download fails (the message already names the URL and `target`).
    """
    if os.path.isfile(target):
        if md5 is None:
            return target
        found = file_md5(target)
        if found == md5:
            return target
        warnings.warn(f"{target} has MD5 {found}, expected {md5}: downloading {url} again", stacklevel=2)
        os.remove(target)
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    part = target + ".part"
    resumed = _fetch_part(url, part, target, progress, hint)
    if md5 is not None and (found := file_md5(part)) != md5:
        os.remove(part)
        if resumed:  # the kept bytes may come from another version of the file: one clean retry
            return download(url, target, md5, progress, hint)
        raise RuntimeError(
            f"the download of {url} has MD5 {found}, expected {md5}; it was deleted. "
            f"Place a correct copy at {target} by hand, or try again later"
        )
    os.replace(part, target)
    return target


def _fetch_part(url, part, target, progress, hint):
    """Completes `part` from `url`; returns whether it continued bytes kept from an earlier attempt."""
    offset = os.path.getsize(part) if os.path.isfile(part) else 0
    try:
        return _transfer(url, part, offset, progress)
    except urllib.error.HTTPError as e:
        if e.code == 416 and offset:  # the kept bytes do not fit the file the server has now
            os.remove(part)
            return _fetch_part(url, part, target, progress, hint)
        raise _download_error(url, target, f"HTTP {e.code} {e.reason}", hint) from e
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
        if os.path.isfile(part) and os.path.getsize(part) == 0:
            os.remove(part)
        raise _download_error(url, target, getattr(e, "reason", None) or e, hint) from e


def _transfer(url, part, offset, progress):
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=_TIMEOUT_S) as response:
        resumed = offset > 0 and _continues_at(response, offset)
        start = offset if resumed else 0
        length = int(response.headers.get("Content-Length") or 0)
        total = start + length if length else None
        with open(part, "ab" if resumed else "wb") as out:
            copy_stream(response, out, desc=os.path.basename(part[: -len(".part")]), total=total, initial=start, progress=progress)
        if total is not None and os.path.getsize(part) < total:
            # urllib does not notice a connection closed early when it reads in chunks.
            raise http.client.IncompleteRead(b"", total - os.path.getsize(part))
    return resumed


def _continues_at(response, offset):
    """Whether the server answered the Range request with the bytes from `offset` on."""
    content_range = response.headers.get("Content-Range") or ""
    return getattr(response, "status", None) == 206 and content_range.startswith(f"bytes {offset}-")


def copy_stream(source, out, desc, total=None, initial=0, progress=True):
    """Copies `source` into `out` in chunks, with a tqdm bar (`TQDM_DISABLE=1` silences it)."""
    # tqdm reads TQDM_DISABLE once, when it is imported; reading it here honours a later change.
    # (`disable` is passed only to turn the bar off: passed as False it would override tqdm's own.)
    off = not progress or os.environ.get("TQDM_DISABLE", "").lower() in ("1", "true", "yes")
    silence = {"disable": True} if off else {}
    with tqdm(total=total, initial=initial, unit="B", unit_scale=True, desc=desc, **silence) as bar:
        while chunk := source.read(_CHUNK):
            out.write(chunk)
            bar.update(len(chunk))


def _download_error(url, target, reason, hint):
    message = f"could not download {url} ({reason}); download it by hand and place it at {target}"
    return OSError(message + (f", {hint}" if hint else ""))
