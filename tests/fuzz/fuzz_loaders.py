"""Fuzz targets for the loaders: `ember.load` (zip .pth checkpoints), `ember.safetensors.load`,
ARPA language models (emberaudio's ctc_decoder) and vocab files (embertext's BERTTokenizer).

Each target takes bytes; anything other than returning or raising an Exception (a crash, a
BaseException such as pyo3's PanicException, a hang) is a finding. Seeds are small valid files
built here; inputs are mutations of them.

Two drivers:
  python fuzz_loaders.py mutate TARGET --iterations N --seed S --out DIR
      a plain mutator with a fixed seed (used by `make test`, through a crash-isolated worker:
      DIR/current.bin holds the input being run)
  python fuzz_loaders.py atheris TARGET [libFuzzer flags...]
      coverage-guided with atheris (`make fuzz`), seeded with the valid files
"""
from __future__ import annotations

import io
import json
import os
import random
import sys
import tempfile

_TMP = tempfile.mkdtemp(prefix="ember-fuzz-loaders-")


def _as_file(data, name):
    path = os.path.join(_TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


# ---- targets -----------------------------------------------------------------------------------

def target_load(data):
    import ember
    obj = ember.load(io.BytesIO(data))
    _touch(obj)


def target_safetensors(data):
    import ember.safetensors
    _touch(ember.safetensors.load(data))


def target_arpa(data):
    import ember
    from emberaudio.models.decoder import ctc_decoder
    decoder = ctc_decoder(None, ["-", "|", "a", "b", "c"], lm=_as_file(data, "lm.arpa"), beam_size=4)
    decoder(ember.zeros(1, 3, 5).log_softmax(-1))


def target_vocab(data):
    from embertext.transforms import BERTTokenizer
    tok = BERTTokenizer(_as_file(data, "vocab.txt"))
    tok("Hello, world! unaffable [UNK] caf\u00e9")
    tok(["a b", ""])


def _touch(obj):
    """Reads every tensor in a loaded object (a lazily broken storage must fail here, cleanly)."""
    if isinstance(obj, dict):
        for v in obj.values():
            _touch(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _touch(v)
    elif hasattr(obj, "contiguous") and hasattr(obj, "sum"):
        if obj.numel() <= 1 << 20:
            obj.contiguous().sum()


TARGETS = {"load": target_load, "safetensors": target_safetensors, "arpa": target_arpa, "vocab": target_vocab}


# ---- seeds -------------------------------------------------------------------------------------

_ARPA = b"""\\data\\
ngram 1=6
ngram 2=3

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.3
-0.7\t</s>\t0
-0.5\ta\t-0.2
-0.6\tb\t-0.1
-0.9\tc\t0

\\2-grams:
-0.2\t<s> a
-0.3\ta b
-0.4\tb </s>

\\end\\
"""

_VOCAB = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "un", "##aff", "##able",
                    ",", "!", "a", "b", "caf", "##e"]).encode() + b"\n"


def seeds(target):
    import ember
    if target == "load":
        out = []
        for obj in ({"w": ember.arange(6.0).view(2, 3), "b": ember.tensor([1, 2], dtype=ember.int32)},
                    [ember.ones(3, dtype=ember.float16), {"x": ember.zeros(2, 2).t()}],
                    ember.arange(4)):
            buf = io.BytesIO()
            ember.save(obj, buf)
            out.append(buf.getvalue())
        return out
    if target == "safetensors":
        import ember.safetensors
        return [ember.safetensors.save({"w": ember.arange(6.0).view(2, 3), "i": ember.tensor([1, 2, 3]),
                                        "h": ember.ones(2, dtype=ember.bfloat16)}, metadata={"k": "v"})]
    if target == "arpa":
        return [_ARPA]
    return [_VOCAB]


# ---- the plain mutator -------------------------------------------------------------------------

_INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff", b"\x00\x00\x00\x80",
                b"\xff\xff\xff\xff\xff\xff\xff\x7f", b"-1", b"999999999999", b"1e308", b"nan", b"\n",
                b"\t", b"\\", b"{", b"}", b"[", b"]", b"\"", b"\xc3", b"\xe2\x80\xa8"]


def mutate(rng, data, corpus):
    data = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 3, 8])):
        op = rng.randrange(7)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:                                   # flip a bit
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1 and data:                                 # random byte
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 2:                                          # interesting bytes
            tok = rng.choice(_INTERESTING)
            data[pos:pos + (len(tok) if rng.random() < 0.7 else 0)] = tok
        elif op == 3 and data:                                 # truncate
            del data[pos:]
        elif op == 4 and data:                                 # delete a span
            del data[pos:pos + rng.randrange(1, 32)]
        elif op == 5 and data:                                 # duplicate a span
            span = data[pos:pos + rng.randrange(1, 64)]
            data[pos:pos] = span * rng.randrange(1, 4)
        elif op == 6:                                          # splice another seed
            other = rng.choice(corpus)
            j = rng.randrange(len(other) + 1)
            data[pos:] = other[j:]
    return bytes(data)


def run_mutations(target, iterations, seed, out):
    fn = TARGETS[target]
    corpus = seeds(target)
    rng = random.Random(seed)
    current = os.open(os.path.join(out, "current.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    findings, clean_errors = [], 0
    for i in range(iterations):
        data = mutate(rng, rng.choice(corpus), corpus) if i >= len(corpus) else corpus[i]
        os.ftruncate(current, 0)
        os.pwrite(current, data, 0)
        try:
            fn(data)
        except Exception:  # noqa: BLE001 - a clean refusal
            clean_errors += 1
        except BaseException as e:  # noqa: BLE001 - a panic or other non-Exception escaping
            if isinstance(e, KeyboardInterrupt):
                raise
            findings.append({"data": data.hex(), "error": f"{type(e).__module__}.{type(e).__name__}: {str(e)[:300]}"})
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump({"iterations": iterations, "clean_errors": clean_errors, "findings": findings[:20],
                   "finding_count": len(findings)}, f)


# ---- atheris -----------------------------------------------------------------------------------

def run_atheris(target, argv):
    import atheris
    with atheris.instrument_imports():
        import ember  # noqa: F401
        import ember.serialization  # noqa: F401
        import ember.safetensors  # noqa: F401
        if target == "arpa":
            import emberaudio  # noqa: F401
        if target == "vocab":
            import embertext  # noqa: F401
    fn = TARGETS[target]
    corpus_dir = tempfile.mkdtemp(prefix=f"ember-fuzz-corpus-{target}-")
    for i, s in enumerate(seeds(target)):
        with open(os.path.join(corpus_dir, f"seed{i}"), "wb") as f:
            f.write(s)

    def one_input(data):
        try:
            fn(bytes(data))
        except Exception:  # noqa: BLE001 - a clean refusal is fine; anything else reaches libFuzzer
            pass

    corpus = seeds(target)
    rng = random.Random(0)

    def custom_mutator(data, max_size, seed):
        # libFuzzer's byte mutations half the time; the structure-aware ones (interesting
        # values, spans, splices of valid seeds) the other half. The Rust parsers give atheris
        # no coverage feedback, so this is what reaches past the first header checks.
        rng.seed(seed)
        if rng.random() < 0.5:
            return atheris.Mutate(data, max_size)
        return mutate(rng, bytes(data) or rng.choice(corpus), corpus)[:max_size]

    atheris.Setup([sys.argv[0]] + argv + [corpus_dir], one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()


def main():
    mode, target = sys.argv[1], sys.argv[2]
    if mode == "atheris":
        run_atheris(target, sys.argv[3:])
        return
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--iterations", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args(sys.argv[3:])
    run_mutations(target, args.iterations, args.seed, args.out)


if __name__ == "__main__":
    main()
