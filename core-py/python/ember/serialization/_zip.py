"""The uncompressed zip archive PyTorch checkpoints are stored in.

Written by hand rather than with `zipfile` because every record's data must start on a 64-byte
boundary (PyTorch pads each local header with an "FB" extra field so storages can be mapped and
read aligned) and because the destination may be a stream that cannot seek: all sizes and CRCs
are known before a record is written. Zip64 fields are added only when a size or offset needs
them. Reading goes through `zipfile`, which checks every record's CRC.
"""
import struct
import zlib

ALIGNMENT = 64
_ZIP64_LIMIT = 0xFFFFFFFF  # a module attribute so tests can exercise the zip64 path on small data
_MAX_ENTRIES = 0xFFFF
_DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01, for reproducible files
_PAD_ID = 0x4246  # "FB", the id PyTorch gives its padding field


class ZipWriter:
    """Appends stored records to a binary stream; `close()` writes the central directory."""

    def __init__(self, stream):
        self._out = stream
        self._pos = 0
        self._entries = []  # (name bytes, crc, size, local header offset)

    def _write(self, data):
        self._out.write(data)
        self._pos += len(data)

    def write_record(self, name, data):
        """Writes one record; `data` is any contiguous bytes-like object (written without a copy)."""
        data = memoryview(data).cast("B")
        name = name.encode("utf-8")
        size, crc = data.nbytes, zlib.crc32(data)
        offset = self._pos
        zip64 = size >= _ZIP64_LIMIT
        extra = struct.pack("<HHQQ", 1, 16, size, size) if zip64 else b""
        start = offset + 30 + len(name) + len(extra) + 4
        pad = -start % ALIGNMENT
        extra += struct.pack("<HH", _PAD_ID, pad) + b"Z" * pad
        shown = 0xFFFFFFFF if zip64 else size
        self._write(struct.pack(
            "<IHHHHHIIIHH", 0x04034B50, 45 if zip64 else 20, 0, 0, 0, _DOS_DATE, crc, shown, shown, len(name), len(extra)
        ))
        self._write(name)
        self._write(extra)
        self._write(data)
        self._entries.append((name, crc, size, offset))

    def close(self):
        cd_start = self._pos
        for name, crc, size, offset in self._entries:
            big_size, big_offset = size >= _ZIP64_LIMIT, offset >= _ZIP64_LIMIT
            fields = ([size, size] if big_size else []) + ([offset] if big_offset else [])
            extra = struct.pack(f"<HH{len(fields)}Q", 1, 8 * len(fields), *fields) if fields else b""
            version = 45 if fields else 20
            self._write(struct.pack(
                "<IHHHHHHIIIHHHHHII", 0x02014B50, version, version, 0, 0, 0, _DOS_DATE, crc,
                0xFFFFFFFF if big_size else size, 0xFFFFFFFF if big_size else size,
                len(name), len(extra), 0, 0, 0, 0, 0xFFFFFFFF if big_offset else offset,
            ))
            self._write(name)
            self._write(extra)
        cd_size, count = self._pos - cd_start, len(self._entries)
        if count >= _MAX_ENTRIES or cd_start >= _ZIP64_LIMIT or cd_size >= _ZIP64_LIMIT:
            end64 = self._pos
            self._write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, cd_size, cd_start))
            self._write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
        self._write(struct.pack(
            "<IHHHHIIH", 0x06054B50, 0, 0, min(count, _MAX_ENTRIES), min(count, _MAX_ENTRIES),
            min(cd_size, 0xFFFFFFFF), min(cd_start, 0xFFFFFFFF), 0,
        ))
