"""What every table-shaped dataset shares: the split argument, the cache folder, the download and
extraction of its files (done once, on first iteration) and the DataPipe that parses its rows.

A dataset is data: a `DatasetSpec` naming, per split, the downloaded file, the table inside it and
the function that turns a row's fields into the tuple the dataset yields.
"""
import contextlib
import csv
import os
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Optional

from emberdata.datapipes.iter import FileOpener, IterableWrapper, TarArchiveLoader, ZipArchiveLoader

from ember._download import copy_stream, download
from embertext._download import cache_dir

try:
    import fcntl
except ImportError:  # Windows: no lock; concurrent first downloads are then the caller's affair
    fcntl = None


@dataclass(frozen=True)
class Resource:
    """A file to download: its URL and MD5 checksum."""

    url: str
    md5: str


@dataclass(frozen=True)
class SplitSource:
    """Where a split's rows come from and what each row becomes.

    `file` names the downloaded file (a key of the resource table, and its name in the cache);
    `member` is the table's path inside that archive, or None when the file is the table itself.
    """

    file: str
    member: Optional[str]
    row: Callable


@dataclass(frozen=True)
class DatasetSpec:
    """A tab-separated dataset: its splits and how its tables are parsed."""

    name: str
    splits: dict = field(default_factory=dict)
    skip_lines: int = 1
    quoting: int = csv.QUOTE_NONE
    keep: Optional[Callable] = None  # rows for which it is False are dropped before `row`


def load(spec, root, split, resources, num_lines):
    """The DataPipe of `split` (a str), or a tuple of them (a tuple of split names)."""
    directory = os.path.join(_root_dir(root, spec.name), "datasets", spec.name)
    names = _split_names(split, tuple(spec.splits), spec.name)
    pipes = tuple(_split_datapipe(spec, directory, s, resources, num_lines[spec.name][s]) for s in names)
    return pipes[0] if isinstance(split, str) else pipes


def _root_dir(root, name):
    if root is None:
        return cache_dir()
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"{name}: root must be a str or os.PathLike folder, got {type(root).__name__}")
    return os.fspath(root)


def _split_names(split, valid, name):
    if isinstance(split, str):
        names = (split,)
    elif isinstance(split, (tuple, list)) and all(isinstance(s, str) for s in split):
        names = tuple(split)
    else:
        raise TypeError(f"{name}: split must be a str or a tuple of str, got {split!r}")
    for s in names:
        if s not in valid:
            raise ValueError(f"{name}: split must be one of {', '.join(map(repr, valid))}; got {s!r}")
    return names


def _split_datapipe(spec, directory, split, resources, rows):
    source = spec.splits[split]
    # The Resource is bound now, not looked up at iteration time: worker processes that unpickle
    # the pipe see the table as it was when the dataset was made.
    fetch = partial(_local_table, directory, source.file, source.member)
    table = IterableWrapper([resources[source.file]], deepcopy=False).map(fetch)
    parsed = FileOpener(table, encoding="utf-8").parse_csv(skip_lines=spec.skip_lines, delimiter="\t", quoting=spec.quoting)
    if spec.keep is not None:
        parsed = parsed.filter(spec.keep)
    # TorchText's ending: a shuffle that is off until a DataLoader turns it on, then a shard point.
    return parsed.map(source.row).set_length(rows).shuffle().set_shuffle(False).sharding_filter()


def _local_table(directory, file_name, member, resource):
    """The split's table on disk, downloaded (and extracted) the first time it is needed."""
    with _locked(directory):
        if member is None:
            return download(resource.url, os.path.join(directory, file_name), resource.md5)
        table = os.path.join(directory, *member.split("/"))
        if not os.path.isfile(table):
            archive = download(resource.url, os.path.join(directory, file_name), resource.md5)
            _extract(archive, member, table)
        return table


@contextlib.contextmanager
def _locked(directory):
    """Serialises preparation across processes: DataLoader workers all start by asking for the file."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _extract(archive, member, target):
    """Writes `member` of the zip or tar(.gz) `archive` to `target` (through a `.part` file)."""
    loader = TarArchiveLoader if ".tar" in os.path.basename(archive) else ZipArchiveLoader
    wanted = os.path.normpath(os.path.join(archive, member))
    for path, stream in loader(FileOpener(IterableWrapper([archive], deepcopy=False), mode="rb")):
        if os.path.normpath(path) == wanted:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with stream, open(target + ".part", "wb") as out:
                copy_stream(stream, out, desc=os.path.basename(target))
            os.replace(target + ".part", target)
            return
    raise RuntimeError(f"{archive} holds no {member}: delete the archive to have it downloaded again")
