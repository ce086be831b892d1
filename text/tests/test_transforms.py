"""embertext.transforms and embertext.functional: TorchText's semantics on single inputs and
batches, returning ember tensors."""
import pytest

import ember
from embertext import functional as F
from embertext import transforms as T
from embertext.vocab import Vocab


def test_to_tensor_single_batch_and_padding():
    t = F.to_tensor([1, 2, 3])
    assert t.dtype == ember.int64 and t.tolist() == [1, 2, 3]
    assert F.to_tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    padded = F.to_tensor([[1, 2, 3], [4]], padding_value=0)
    assert padded.shape == (2, 3) and padded.tolist() == [[1, 2, 3], [4, 0, 0]]
    assert F.to_tensor([[1], [2, 3]], padding_value=-1, dtype=ember.int32).dtype == ember.int32
    with pytest.raises(ValueError, match="padding_value"):
        F.to_tensor([[1], [2, 3]])
    with pytest.raises(TypeError, match="list"):
        F.to_tensor("abc")
    with pytest.raises(TypeError, match="int ids"):
        F.to_tensor([1.5])
    assert T.ToTensor(padding_value=9)([[1], [2, 3]]).tolist() == [[1, 9], [2, 3]]
    assert T.ToTensor(dtype=ember.float32)([1, 2]).dtype == ember.float32


def test_truncate_add_token_str_to_int():
    assert F.truncate([1, 2, 3], 2) == [1, 2]
    assert F.truncate([["a", "b", "c"], ["d"]], 2) == [["a", "b"], ["d"]]
    assert F.add_token([1, 2], 0) == [0, 1, 2]
    assert F.add_token([[1], [2, 3]], 9, begin=False) == [[1, 9], [2, 3, 9]]
    assert F.add_token(["a"], "<bos>") == ["<bos>", "a"]
    assert F.str_to_int(["1", "22"]) == [1, 22]
    assert F.str_to_int([["1"], ["2", "3"]]) == [[1], [2, 3]]
    assert T.Truncate(1)([[1, 2], [3]]) == [[1], [3]]
    assert T.AddToken(token=0, begin=True)([5]) == [0, 5]
    assert T.StrToIntTransform()(["7"]) == [7]
    with pytest.raises(TypeError, match="max_seq_len"):
        T.Truncate("3")
    with pytest.raises(TypeError, match="token_id"):
        F.add_token([1], 1.5)
    with pytest.raises(TypeError, match="mixes"):
        F.truncate([[1], 2], 1)


def test_vocab_transform():
    v = Vocab(["<unk>", "a", "b"])
    v.set_default_index(0)
    vt = T.VocabTransform(v)
    assert vt(["a", "b", "zz"]) == [1, 2, 0]
    assert vt([["a"], ["b", "a"]]) == [[1], [2, 1]]
    with pytest.raises(TypeError, match="Vocab"):
        T.VocabTransform({"a": 1})
    with pytest.raises(TypeError):
        vt("a")


def test_label_to_index(tmp_path):
    lt = T.LabelToIndex(label_names=["neg", "pos"])
    assert lt("pos") == 1 and lt(["pos", "neg"]) == [1, 0]
    assert T.LabelToIndex(label_names=["b", "a"], sort_names=True).label_names == ["a", "b"]
    path = tmp_path / "labels.txt"
    path.write_text("x\ny\n")
    assert T.LabelToIndex(label_path=str(path))("y") == 1
    with pytest.raises(ValueError, match="required"):
        T.LabelToIndex()
    with pytest.raises(ValueError, match="mutually exclusive"):
        T.LabelToIndex(label_names=["a"], label_path=str(path))
    with pytest.raises(RuntimeError, match="not found"):
        lt("maybe")


def test_pad_transform():
    x = ember.tensor([[1, 2], [3, 4]])
    out = T.PadTransform(max_length=4, pad_value=0)(x)
    assert out.tolist() == [[1, 2, 0, 0], [3, 4, 0, 0]] and out.dtype == x.dtype
    assert T.PadTransform(3, -1)(ember.tensor([5])).tolist() == [5, -1, -1]
    assert T.PadTransform(1, 0)(x) is x
    with pytest.raises(TypeError, match="ember.Tensor"):
        T.PadTransform(3, 0)([1])


def test_sequential_pipeline(vocab_path):
    pipeline = T.Sequential(
        T.BERTTokenizer(vocab_path),
        T.Truncate(4),
        T.AddToken(2, begin=True),
        T.AddToken(3, begin=False),
        T.ToTensor(padding_value=0),
    )
    out = pipeline(["hello world", "the quick brown fox jumps over"])
    assert out.shape == (2, 6)
    rows = out.tolist()
    assert rows[0][0] == 2 and rows[0][3] == 3 and rows[0][4:] == [0, 0]
    assert len(pipeline) == 5 and isinstance(pipeline[1], T.Truncate)
    assert len(pipeline[1:3]) == 2
    with pytest.raises(TypeError, match="not callable"):
        T.Sequential(3)


def test_model_tensors(vocab_path):
    import embertext

    tok = embertext.BertWordPieceTokenizer(vocab_path)
    batch = tok.encode_batch_tensors(["hello world", ("how are you", "fine")])
    pair = tok.encode("how are you", "fine")
    width = len(pair)
    assert batch["input_ids"].dtype == ember.int64
    assert batch["input_ids"].shape == (2, width)
    assert batch["input_ids"].tolist() == [tok.encode("hello world").ids + [0] * (width - 4), pair.ids]
    assert batch["attention_mask"].tolist()[0] == [1] * 4 + [0] * (width - 4)
    assert batch["token_type_ids"].tolist()[1] == pair.type_ids
    assert batch["offset_mapping"].shape == (2, width, 2)
    assert batch["offset_mapping"].tolist()[0][1] == [0, 5]
    tok.enable_padding(length=10)
    assert tok.encode_batch_tensors(["hello"])["input_ids"].shape == (1, 10)
