"""ember.frombuffer: a tensor over an object's buffer, sharing its memory, with PyTorch's checks."""
import array
import struct

import pytest

import ember


def test_reads_the_buffer_and_shares_it():
    buf = bytearray(struct.pack("<4f", 1.0, 2.0, 3.0, 4.0))
    t = ember.frombuffer(buf, dtype=ember.float32)
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0] and t.dtype == ember.float32
    t[1] = 9.0
    assert struct.unpack("<4f", buf)[1] == 9.0
    buf[0:4] = struct.pack("<f", -1.0)
    assert t[0].item() == -1.0


def test_count_offset_and_other_buffers():
    data = array.array("i", range(10))
    assert ember.frombuffer(data, dtype=ember.int32, count=3, offset=8).tolist() == [2, 3, 4]
    assert ember.frombuffer(memoryview(bytearray(b"\x01\x00\x02\x00")), dtype=ember.int16).tolist() == [1, 2]
    assert ember.frombuffer(bytearray(b"\x00\x80\x3f\x00\x00"), dtype=ember.uint8, offset=1, count=2).tolist() == [128, 63]
    bf = ember.frombuffer(bytearray(struct.pack("<2H", 0x3F80, 0x4000)), dtype=ember.bfloat16)
    assert bf.float().tolist() == [1.0, 2.0]
    assert ember.frombuffer(bytearray(8), dtype=ember.float32, requires_grad=True).requires_grad


def test_read_only_buffers_warn_as_pytorch_does():
    with pytest.warns(UserWarning, match="not writable"):
        assert ember.frombuffer(b"\x05\x06", dtype=ember.uint8).tolist() == [5, 6]


@pytest.mark.parametrize("args, message", [
    ((bytearray(), ), "must not be 0"),
    ((bytearray(4), ), None),
    ((bytearray(6), ), "must be a multiple of element size"),
])
def test_lengths(args, message):
    if message is None:
        assert ember.frombuffer(*args, dtype=ember.float32).shape == (1,)
    else:
        with pytest.raises(ValueError, match=message):
            ember.frombuffer(*args, dtype=ember.float32)


def test_bad_arguments():
    with pytest.raises(ValueError, match="must be non-negative"):
        ember.frombuffer(bytearray(8), dtype=ember.uint8, offset=8)
    with pytest.raises(ValueError, match="must be non-negative"):
        ember.frombuffer(bytearray(8), dtype=ember.uint8, offset=-1)
    with pytest.raises(ValueError, match="must not be greater than actual buffer length"):
        ember.frombuffer(bytearray(8), dtype=ember.float32, count=3)
    with pytest.raises(ValueError, match="must not be 0"):
        ember.frombuffer(bytearray(8), dtype=ember.float32, count=0)
    with pytest.raises(ValueError, match="buffer protocol"):
        ember.frombuffer([1, 2, 3], dtype=ember.uint8)
    with pytest.raises(ValueError, match="not aligned"):
        ember.frombuffer(bytearray(12), dtype=ember.float32, offset=2, count=2)
    with pytest.raises(TypeError, match="dtype"):
        ember.frombuffer(bytearray(8), dtype="float32")
