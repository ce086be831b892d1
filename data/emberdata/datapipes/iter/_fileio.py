"""File-reading IterDataPipes: list, open, read lines/CSV/JSON, decompress, archives, save, HTTP, fsspec."""
import base64
import bz2
import csv
import enum
import fnmatch
import gzip
import io
import json
import lzma
import os
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile

from emberdata.datapipes._base import IterDataPipe, check_callable, check_datapipe, check_int, functional_datapipe
from emberdata.datapipes.utils import StreamWrapper


def _match_masks(name, masks):
    if not masks:
        return True
    masks = [masks] if isinstance(masks, str) else masks
    return any(fnmatch.fnmatch(name, m) for m in masks)


def _roots(root):
    if isinstance(root, str):
        return _PathList([root])
    if isinstance(root, IterDataPipe):
        return root
    if isinstance(root, (list, tuple)):
        return _PathList(list(root))
    raise TypeError(f"FileLister: root must be a str, a sequence of str or an IterDataPipe, got {type(root).__name__}")


class _PathList(IterDataPipe):
    """A plain list as a DataPipe, without IterableWrapper's deep copies."""

    def __init__(self, items):
        self.items = items

    def __iter__(self):
        yield from self.items


def _walk(root, masks, recursive, abspath, non_deterministic):
    if os.path.isfile(root):
        yield os.path.abspath(root) if abspath else root
        return
    if not os.path.isdir(root):
        raise FileNotFoundError(f"FileLister: root {root!r} is neither a file nor a directory")
    for dirpath, dirnames, filenames in os.walk(root):
        if not non_deterministic:
            dirnames.sort()
            filenames = sorted(filenames)
        for f in filenames:
            if _match_masks(f, masks):
                path = os.path.join(dirpath, f)
                yield os.path.abspath(path) if abspath else path
        if not recursive:
            break


@functional_datapipe("list_files")
class FileLister(IterDataPipe):
    """Paths of the files under `root` (a path, paths, or a DataPipe of them) whose names match `masks`."""

    def __init__(self, root=".", masks="", *, recursive=False, abspath=False, non_deterministic=False, length=-1):
        self.datapipe = _roots(root)
        self.masks = masks
        self.recursive = recursive
        self.abspath = abspath
        self.non_deterministic = non_deterministic
        self.length = length

    def __iter__(self):
        for root in self.datapipe:
            yield from _walk(root, self.masks, self.recursive, self.abspath, self.non_deterministic)

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length


_OPEN_MODES = ("r", "rb", "rt", "b", "t")  # 'b' and 't' mean 'rb' and 'rt', as PyTorch accepts


def _open_mode(mode, owner):
    if mode not in _OPEN_MODES:
        raise ValueError(f"{owner}: mode must be one of {_OPEN_MODES}, got {mode!r}")
    return mode if mode.startswith("r") else "r" + mode


@functional_datapipe("open_files")
class FileOpener(IterDataPipe):
    """`(path, stream)` for each path; mode 'r'/'rt'/'t' gives text, 'rb'/'b' bytes."""

    def __init__(self, datapipe, mode="r", encoding=None, length=-1):
        self.datapipe = check_datapipe(datapipe, "FileOpener: datapipe")
        mode = _open_mode(mode, "FileOpener")
        if mode == "rb" and encoding is not None:
            raise ValueError("FileOpener: binary mode doesn't take an encoding argument")
        self.mode, self.encoding, self.length = mode, encoding, length

    def __iter__(self):
        for path in self.datapipe:
            yield path, StreamWrapper(open(path, self.mode, encoding=self.encoding))

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length


def _decode(line, decode, encoding, errors):
    return line.decode(encoding, errors) if decode and isinstance(line, bytes) else line


@functional_datapipe("readlines")
class LineReader(IterDataPipe):
    """Lines of each `(path, stream)`, as `(path, line)` (or `line` with return_path=False)."""

    def __init__(self, source_datapipe, *, skip_lines=0, strip_newline=True, decode=False, encoding="utf-8", errors="ignore", return_path=True):
        self.source_datapipe = check_datapipe(source_datapipe, "LineReader: source_datapipe")
        self.skip_lines, self.strip_newline, self.decode = skip_lines, strip_newline, decode
        self.encoding, self.errors, self.return_path = encoding, errors, return_path

    def __iter__(self):
        for path, stream in self.source_datapipe:
            for i, line in enumerate(stream):
                if i < self.skip_lines:
                    continue
                line = _decode(line, self.decode, self.encoding, self.errors)
                if self.strip_newline:
                    line = line.rstrip(b"\r\n" if isinstance(line, bytes) else "\r\n")
                yield (path, line) if self.return_path else line


def _text_lines(stream, decode, encoding, errors):
    for line in stream:
        yield _decode(line, decode, encoding, errors)


class _CSVBase(IterDataPipe):
    def __init__(self, source_datapipe, skip_lines, decode, encoding, errors, return_path, fmtparams):
        self.source_datapipe = check_datapipe(source_datapipe, f"{type(self).__name__}: source_datapipe")
        self.skip_lines, self.decode, self.encoding, self.errors = skip_lines, decode, encoding, errors
        self.return_path, self.fmtparams = return_path, fmtparams

    def __iter__(self):
        for path, stream in self.source_datapipe:
            lines = _text_lines(stream, self.decode, self.encoding, self.errors)
            for _ in range(self.skip_lines):
                next(lines, None)
            for row in self._reader(lines):
                yield (path, row) if self.return_path else row


@functional_datapipe("parse_csv")
class CSVParser(_CSVBase):
    """Rows of CSV streams as lists of strings; `fmtparams` go to `csv.reader`."""

    def __init__(self, source_datapipe, *, skip_lines=0, decode=True, encoding="utf-8", errors="ignore", return_path=False, **fmtparams):
        super().__init__(source_datapipe, skip_lines, decode, encoding, errors, return_path, fmtparams)

    def _reader(self, lines):
        return csv.reader(lines, **self.fmtparams)


@functional_datapipe("parse_csv_as_dict")
class CSVDictParser(_CSVBase):
    """Rows of CSV streams as dicts keyed by the header row."""

    def __init__(self, source_datapipe, *, skip_lines=0, decode=True, encoding="utf-8", errors="ignore", return_path=False, **fmtparams):
        super().__init__(source_datapipe, skip_lines, decode, encoding, errors, return_path, fmtparams)

    def _reader(self, lines):
        return csv.DictReader(lines, **self.fmtparams)


@functional_datapipe("read_from_stream")
class StreamReader(IterDataPipe):
    """`(path, chunk)` for each `(path, stream)`: reads of `chunk` bytes (None: the whole stream at once)."""

    def __init__(self, datapipe, chunk=None):
        self.datapipe = check_datapipe(datapipe, "StreamReader: datapipe")
        self.chunk = check_int(chunk, "StreamReader: chunk", minimum=1, allow_none=True)

    def __iter__(self):
        size = -1 if self.chunk is None else self.chunk
        for path, stream in self.datapipe:
            while data := stream.read(size):
                yield path, data
            stream.close()


@functional_datapipe("parse_json_files")
class JsonParser(IterDataPipe):
    """`(path, object)` for each JSON stream; `kwargs` go to `json.loads`."""

    def __init__(self, source_datapipe, **kwargs):
        self.source_datapipe = check_datapipe(source_datapipe, "JsonParser: source_datapipe")
        self.kwargs = kwargs

    def __iter__(self):
        for path, stream in self.source_datapipe:
            yield path, json.loads(stream.read(), **self.kwargs)


class CompressionType(enum.Enum):
    GZIP = "gzip"
    LZMA = "lzma"
    TAR = "tar"
    ZIP = "zip"
    BZIP2 = "bz2"


_SUFFIXES = {
    ".gz": CompressionType.GZIP, ".gzip": CompressionType.GZIP, ".xz": CompressionType.LZMA,
    ".lzma": CompressionType.LZMA, ".tar": CompressionType.TAR, ".zip": CompressionType.ZIP,
    ".bz2": CompressionType.BZIP2,
}
_OPENERS = {
    CompressionType.GZIP: lambda f: gzip.GzipFile(fileobj=f),
    CompressionType.LZMA: lambda f: lzma.LZMAFile(f),
    CompressionType.TAR: lambda f: tarfile.open(fileobj=f, mode="r:*"),
    CompressionType.ZIP: lambda f: zipfile.ZipFile(f),
    CompressionType.BZIP2: lambda f: bz2.BZ2File(f),
}


@functional_datapipe("decompress")
class Decompressor(IterDataPipe):
    """`(path, decompressed stream)`; `file_type` ('gzip', 'lzma', 'tar', 'zip', 'bz2') or from the suffix."""

    types = CompressionType

    def __init__(self, source_datapipe, file_type=None):
        self.source_datapipe = check_datapipe(source_datapipe, "Decompressor: source_datapipe")
        if isinstance(file_type, str):
            file_type = _SUFFIXES.get("." + file_type.lower().lstrip("."), file_type.lower())
        if file_type is not None and file_type not in _OPENERS:
            names = sorted(t.value for t in CompressionType)
            raise ValueError(f"Decompressor: file_type must be a CompressionType, one of {names}, or None; got {file_type!r}")
        self.file_type = file_type

    def _type_of(self, path):
        if self.file_type is not None:
            return self.file_type
        suffix = os.path.splitext(path)[1].lower()
        if suffix not in _SUFFIXES:
            raise RuntimeError(f"Decompressor: cannot tell the compression of {path!r} from its suffix; pass file_type")
        return _SUFFIXES[suffix]

    def __iter__(self):
        for path, stream in self.source_datapipe:
            yield path, StreamWrapper(_OPENERS[self._type_of(path)](stream))


@functional_datapipe("load_from_zip")
class ZipArchiveLoader(IterDataPipe):
    """`(archive_path/member, stream)` for each file of each zip `(path, stream)`."""

    def __init__(self, datapipe, length=-1):
        self.datapipe = check_datapipe(datapipe, "ZipArchiveLoader: datapipe")
        self.length = length

    def __iter__(self):
        for path, stream in self.datapipe:
            try:
                archive = zipfile.ZipFile(stream)
            except zipfile.BadZipFile as e:
                raise ValueError(f"ZipArchiveLoader: {path!r} is not a zip archive ({e})") from e
            for info in archive.infolist():
                if not info.is_dir():
                    yield os.path.join(path, info.filename), StreamWrapper(archive.open(info))

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length


@functional_datapipe("load_from_tar")
class TarArchiveLoader(IterDataPipe):
    """`(archive_path/member, stream)` for each regular file of each tar `(path, stream)`."""

    def __init__(self, datapipe, mode="r:*", length=-1):
        self.datapipe = check_datapipe(datapipe, "TarArchiveLoader: datapipe")
        self.mode, self.length = mode, length

    def __iter__(self):
        for path, stream in self.datapipe:
            try:
                archive = tarfile.open(fileobj=stream, mode=self.mode)
            except tarfile.TarError as e:
                raise ValueError(f"TarArchiveLoader: {path!r} is not a tar archive ({e})") from e
            for member in archive:
                if member.isfile():
                    yield os.path.join(path, member.name), StreamWrapper(archive.extractfile(member))

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length


@functional_datapipe("save_to_disk")
class Saver(IterDataPipe):
    """Writes each `(meta, data)` to `filepath_fn(meta)` (or `meta`), yielding the path written."""

    def __init__(self, source_datapipe, mode="w", filepath_fn=None):
        self.source_datapipe = check_datapipe(source_datapipe, "Saver: source_datapipe")
        if mode not in ("w", "wb", "a", "ab"):
            raise ValueError(f"Saver: mode must be 'w', 'wb', 'a' or 'ab', got {mode!r}")
        self.mode = mode
        self.filepath_fn = check_callable(filepath_fn, "Saver: filepath_fn", allow_none=True)

    def __iter__(self):
        for meta, data in self.source_datapipe:
            path = self.filepath_fn(meta) if self.filepath_fn else meta
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, self.mode) as f:
                f.write(data)
            yield path


_HTTP_OPTIONS = ("auth", "headers", "params")  # the `requests` options HttpReader understands


def _http_request(url, options):
    """A GET request for `url` with `requests`-style `headers`, `params` and `auth=(user, password)`."""
    if options.get("params"):
        url += ("&" if urllib.parse.urlsplit(url).query else "?") + urllib.parse.urlencode(options["params"])
    request = urllib.request.Request(url, headers=dict(options.get("headers") or {}))
    if options.get("auth"):
        user, password = options["auth"]
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    return request


@functional_datapipe("read_from_http")
class HttpReader(IterDataPipe):
    """`(url, stream)` for each URL; `timeout` in seconds (None: the socket default).

    Of the `requests` options TorchData passes through `**kwargs`, `headers`, `params` and
    `auth=(user, password)` are understood (the standard library makes the request).
    """

    def __init__(self, source_datapipe, timeout=None, **kwargs):
        self.source_datapipe = check_datapipe(source_datapipe, "HttpReader: source_datapipe")
        unknown = sorted(set(kwargs) - set(_HTTP_OPTIONS))
        if unknown:
            raise TypeError(f"HttpReader: unsupported request options {unknown}; expected some of {list(_HTTP_OPTIONS)}")
        self.timeout = timeout
        self.query_params = kwargs

    def __iter__(self):
        for url in self.source_datapipe:
            try:
                response = urllib.request.urlopen(_http_request(url, self.query_params), timeout=self.timeout)
            except urllib.error.HTTPError as e:
                raise RuntimeError(f"HttpReader: GET {url} failed with HTTP {e.code} {e.reason}") from e
            except (urllib.error.URLError, TimeoutError, OSError) as e:
                raise RuntimeError(f"HttpReader: could not read {url}: {getattr(e, 'reason', e)}") from e
            yield url, StreamWrapper(response)


def _fsspec():
    try:
        import fsspec
    except ImportError as e:
        raise ImportError("the FSSpec DataPipes need `fsspec`: pip install 'emberdata[fsspec]'") from e
    return fsspec


@functional_datapipe("list_files_by_fsspec")
class FSSpecFileLister(IterDataPipe):
    """Files under `root` on any fsspec filesystem ('memory://', 's3://', local paths ...), sorted."""

    def __init__(self, root, masks="", **kwargs):
        _fsspec()
        self.datapipe = _roots(root)
        self.masks, self.kwargs = masks, kwargs

    def __iter__(self):
        fsspec = _fsspec()
        for root in self.datapipe:
            fs, path = fsspec.core.url_to_fs(root, **self.kwargs)
            entries = [path] if fs.isfile(path) else sorted(fs.ls(path, detail=False))
            for entry in entries:
                if fs.isfile(entry) and _match_masks(os.path.basename(entry), self.masks):
                    yield fs.unstrip_protocol(entry) if "://" in root else entry


@functional_datapipe("open_files_by_fsspec")
class FSSpecFileOpener(IterDataPipe):
    """`(path, stream)` through fsspec for each path or URL."""

    def __init__(self, source_datapipe, mode="r", **kwargs):
        _fsspec()
        self.source_datapipe = check_datapipe(source_datapipe, "FSSpecFileOpener: source_datapipe")
        self.mode, self.kwargs = _open_mode(mode, "FSSpecFileOpener"), kwargs

    def __iter__(self):
        fsspec = _fsspec()
        for path in self.source_datapipe:
            yield path, StreamWrapper(fsspec.open(path, self.mode, **self.kwargs).open())


# TorchData 0.4's older spelling of the functional name.
IterDataPipe.register_datapipe_as_function("open_file_by_fsspec", FSSpecFileOpener)


@functional_datapipe("save_by_fsspec")
class FSSpecSaver(IterDataPipe):
    """Writes `(meta, data)` pairs through fsspec, yielding the paths written."""

    def __init__(self, source_datapipe, mode="w", filepath_fn=None, **kwargs):
        _fsspec()
        self.source_datapipe = check_datapipe(source_datapipe, "FSSpecSaver: source_datapipe")
        self.mode, self.kwargs = mode, kwargs
        self.filepath_fn = check_callable(filepath_fn, "FSSpecSaver: filepath_fn", allow_none=True)

    def __iter__(self):
        fsspec = _fsspec()
        for meta, data in self.source_datapipe:
            path = self.filepath_fn(meta) if self.filepath_fn else meta
            with fsspec.open(path, self.mode, **self.kwargs) as f:
                f.write(data)
            yield path


_PARQUET_LOADER = None


def register_parquet_loader(loader):
    """Replace the Parquet reader: `loader(path, dtype, columns, device, use_threads)` -> an iterable
    of DataFrames (one per row group). Without one, emberarrow's reader is used."""
    global _PARQUET_LOADER
    _PARQUET_LOADER = check_callable(loader, "register_parquet_loader: loader")


@functional_datapipe("load_parquet_as_df")
class ParquetDataFrameLoader(IterDataPipe):
    """An emberarrow DataFrame per row group of each Parquet path (TorchData's ParquetDFLoader)."""

    def __init__(self, source_dp, dtype=None, columns=None, device="", use_threads=False):
        self.source_dp = check_datapipe(source_dp, "ParquetDataFrameLoader: source_dp")
        self.dtype, self.columns, self.device, self.use_threads = dtype, columns, device, use_threads

    def __iter__(self):
        loader = _parquet_loader()
        for path in self.source_dp:
            yield from loader(path, self.dtype, self.columns, self.device, self.use_threads)


def _parquet_loader():
    if _PARQUET_LOADER is not None:
        return _PARQUET_LOADER
    try:
        # Imported here, not at module import: emberdata must not pull in pyarrow until a frame is read.
        from emberarrow.interop import iter_parquet_row_groups
    except ImportError:
        raise RuntimeError(
            "ParquetDataFrameLoader: reading Parquet needs emberarrow (pip install emberarrow), or a "
            "reader given to emberdata.datapipes.iter.register_parquet_loader"
        ) from None
    return iter_parquet_row_groups


@functional_datapipe("dataframe")
class DataFrameMaker(IterDataPipe):
    """Rows batched into emberarrow DataFrames of `dataframe_size` rows (the last may be shorter);
    `dtype` (or `dtype_generator()`, which wins) and `columns` go to `emberarrow.dataframe`."""

    def __init__(self, source_dp, dataframe_size=1000, dtype=None, dtype_generator=None, columns=None, device=""):
        self.source_dp = check_datapipe(source_dp, "DataFrameMaker: source_dp")
        self.dataframe_size = check_int(dataframe_size, "DataFrameMaker: dataframe_size", minimum=1)
        self.dtype_generator = check_callable(dtype_generator, "DataFrameMaker: dtype_generator", allow_none=True)
        self.dtype, self.columns, self.device = dtype, columns, device

    def __iter__(self):
        import emberarrow  # here, not at module import (see _parquet_loader)

        dtype = self.dtype_generator() if self.dtype_generator is not None else self.dtype
        rows = []
        for row in self.source_dp:
            rows.append(row)
            if len(rows) == self.dataframe_size:
                yield emberarrow.dataframe(rows, dtype=dtype, columns=self.columns, device=self.device)
                rows = []
        if rows:
            yield emberarrow.dataframe(rows, dtype=dtype, columns=self.columns, device=self.device)
