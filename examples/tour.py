"""A short tour of Ember: run by `make demo`."""
import time

import numpy as np

import ember
import ember.nn.functional as F

print(f"ember {ember.__version__} on {ember.get_num_threads()} threads\n")

ember.manual_seed(0)
x = ember.randn(3, 4)
print("x =", x)
print("x.T is a view:", x.T._same_storage(x), "| strides", x.T.stride())
print("x[1:, ::2] =", x[1:, ::2])
print("softplus(x).sum(dim=1) =", F.softplus(x).sum(dim=1))
print("max over dim 1:", x.max(dim=1))
print("int32 + 1.5 ->", (ember.arange(3, dtype=ember.int32) + 1.5).dtype)

a = np.arange(6.0).reshape(2, 3)
t = ember.from_numpy(a)
a[0, 0] = 42.0
print("from_numpy shares memory:", t[0, 0].item() == 42.0)

n = 1024
m = ember.randn(n, n)
start = time.perf_counter()
p = m @ m
elapsed = time.perf_counter() - start
print(f"\n{n}x{n} float32 matmul: {2 * n**3 / elapsed / 1e9:.1f} GFLOP/s")
np.testing.assert_allclose(p.numpy(), m.numpy() @ m.numpy(), rtol=1e-3, atol=1e-3)
print("matches NumPy: yes")

# embertext: BERT WordPiece tokenizer (Rust) and TorchText transforms, on a generated vocab.
import os
import tempfile

import embertext
from embertext import transforms as T

vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
with open(vocab_file, "w") as f:
    f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", ",", "how", "are",
                       "you", "?", "un", "##aff", "##able", "caf", "##e"]))
bert = T.BERTTokenizer(vocab_file)
print("\nBERTTokenizer('Hello World!, how are you?') ->", bert("Hello World!, how are you?"))
print("tokens of 'Unaffable café' ->", T.BERTTokenizer(vocab_file, return_tokens=True)("Unaffable café"))
tok = embertext.BertWordPieceTokenizer(vocab_file)
batch = tok.encode_batch_tensors(["Hello world!", ("how are you?", "unaffable")])
print("padded batch for a model:\n", batch["input_ids"], "\n", batch["attention_mask"])
print("decode ->", repr(tok.decode(tok.encode("Hello, unaffable world!").ids)))
