"""Download and archive helpers of `torchvision.datasets.utils`, on `ember._download`."""
import bz2
import gzip
import lzma
import os
import shutil
import tarfile
import zipfile

from ember._download import download as _download, file_md5

__all__ = ["calculate_md5", "check_md5", "check_integrity", "download_url", "extract_archive",
           "download_and_extract_archive", "verify_str_arg"]


def calculate_md5(fpath, chunk_size=1024 * 1024):
    return file_md5(fpath)


def check_md5(fpath, md5, **kwargs):
    return md5 == calculate_md5(fpath)


def check_integrity(fpath, md5=None):
    """Whether `fpath` exists and, when `md5` is given, has that MD5."""
    if not os.path.isfile(fpath):
        return False
    if md5 is None:
        return True
    return check_md5(fpath, md5)


def download_url(url, root, filename=None, md5=None, max_redirect_hops=3):
    """Downloads `url` into `root/filename` (kept if already there with the right MD5)."""
    root = os.path.expanduser(root)
    filename = filename or os.path.basename(url)
    fpath = os.fspath(os.path.join(root, filename))
    os.makedirs(root, exist_ok=True)
    if check_integrity(fpath, md5):
        return fpath
    _download(url, fpath, md5=md5, progress=os.environ.get("TQDM_DISABLE") is None)
    if not check_integrity(fpath, md5):
        raise RuntimeError("File not found or corrupted.")
    return fpath


_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def extract_archive(from_path, to_path=None, remove_finished=False):
    """Extracts a .tar(.gz/.bz2/.xz), .tgz, .zip, or decompresses a .gz/.bz2/.xz file; returns `to_path`."""
    from_path = os.fspath(from_path)
    if to_path is None:
        to_path = os.path.dirname(from_path)
    lower = from_path.lower()
    if lower.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz")):
        with tarfile.open(from_path) as tar:
            tar.extractall(to_path, filter="data")
        out = to_path
    elif lower.endswith(".zip"):
        with zipfile.ZipFile(from_path) as z:
            z.extractall(to_path)
        out = to_path
    else:
        ext = os.path.splitext(lower)[1]
        if ext not in _COMPRESSED:
            raise RuntimeError(f"Archive type of {from_path} is not supported")
        out = os.path.join(to_path, os.path.basename(from_path)[: -len(ext)])
        with _COMPRESSED[ext](from_path, "rb") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    if remove_finished:
        os.remove(from_path)
    return out


def download_and_extract_archive(url, download_root, extract_root=None, filename=None, md5=None,
                                 remove_finished=False):
    download_root = os.path.expanduser(download_root)
    extract_root = extract_root or download_root
    filename = filename or os.path.basename(url)
    download_url(url, download_root, filename, md5)
    archive = os.path.join(download_root, filename)
    return extract_archive(archive, extract_root, remove_finished)


def verify_str_arg(value, arg=None, valid_values=None, custom_msg=None):
    if not isinstance(value, str):
        msg = "Expected type str" + ("" if arg is None else f" for argument {arg}") + f", but got type {type(value)}."
        raise ValueError(msg)
    if valid_values is None:
        return value
    if value not in valid_values:
        msg = custom_msg or (f"Unknown value '{value}' for argument {arg}. "
                             f"Valid values are {{{', '.join(repr(v) for v in valid_values)}}}.")
        raise ValueError(msg)
    return value
