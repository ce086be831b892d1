"""A short tour of Ember: run by `make demo`."""
import math
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

# Training: an MLP on generated 3-class blobs with ember.nn, ember.optim and a scheduler.
from ember import nn  # noqa: E402

rng = np.random.default_rng(0)
centres = rng.standard_normal((3, 8)) * 3
labels = rng.integers(0, 3, 1200)
points = ember.tensor((centres[labels] + rng.standard_normal((1200, 8))).astype(np.float32))
labels = ember.tensor(labels)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = ember.optim.AdamW(model.parameters(), lr=0.01)
scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(10):
    for i in range(0, 1000, 100):
        optimizer.zero_grad()
        loss = loss_fn(model(points[i:i + 100]), labels[i:i + 100])
        loss.backward()
        optimizer.step()
    scheduler.step()
with ember.no_grad():
    accuracy = (model(points[1000:]).argmax(1) == labels[1000:]).float().mean().item()
print(f"\nnn + optim: {model}\ntrained 10 epochs, loss {loss.item():.3f}, held-out accuracy {accuracy:.1%}")
print("state_dict keys:", list(model.state_dict()))
# Complex numbers and ember.fft: a two-tone signal's spectrum, and an STFT round trip.
rate = 8000
tone = ember.arange(rate) / rate
signal = ember.sin(2 * math.pi * 440 * tone) + 0.5 * ember.sin(2 * math.pi * 1000 * tone)
spectrum = ember.fft.rfft(signal)
freqs = ember.fft.rfftfreq(rate, 1 / rate)
print("\nrfft of 440 Hz + 1 kHz: peaks at", sorted(freqs[spectrum.abs().topk(2).indices].tolist()), "Hz |",
      spectrum.dtype, "| view_as_real shares memory:", ember.view_as_real(spectrum)._same_storage(spectrum))
window = ember.hann_window(256)
spec = ember.stft(signal, 256, hop_length=64, window=window, return_complex=True)
back = ember.istft(spec, 256, hop_length=64, window=window, length=rate)
print("stft", tuple(spec.shape), "-> istft round trip max error:", f"{(back - signal).abs().max().item():.1e}")
# Numerics: ember.linalg on faer, and a conv net under bfloat16 autocast in channels-last memory.
a = ember.randn(64, 64, dtype=ember.float64)
a = a @ a.mT + 64 * ember.eye(64, dtype=ember.float64)
b = ember.randn(64, 3, dtype=ember.float64)
solved = ember.linalg.solve(a, b)
print("\nlinalg.solve residual", f"{(a @ solved - b).abs().max().item():.1e}",
      "| eigvalsh of an SPD matrix all positive:", bool((ember.linalg.eigvalsh(a) > 0).all()))
net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 8, 1))
net = net.eval().to(memory_format=ember.channels_last)
images = ember.randn(4, 3, 32, 32).to(memory_format=ember.channels_last)
with ember.no_grad(), ember.autocast("cpu", dtype=ember.bfloat16):
    features = net(images)
print("conv net under bf16 autocast on channels-last input:", features.dtype, tuple(features.shape),
      "| output channels-last:", features.is_contiguous(memory_format=ember.channels_last))

# emberdata: a shuffled DataPipe graph batched into ember tensors, and a mid-epoch resume.
from emberdata import DataLoader  # noqa: E402
from emberdata.dataloader2 import DataLoader2  # noqa: E402
from emberdata.datapipes.iter import IterableWrapper  # noqa: E402


def _sample(i):
    return {"features": np.full(4, i, dtype=np.float32), "label": i % 3}


ember.manual_seed(0)
pipe = IterableWrapper(range(12)).shuffle().sharding_filter().map(_sample)
batch = next(iter(DataLoader(pipe, batch_size=4)))
print("\nemberdata shuffled batch: samples", batch["features"][:, 0].tolist(), "labels", batch["label"].tolist(),
      "features", tuple(batch["features"].shape), batch["features"].dtype)
loader = DataLoader2(pipe.batch(4).collate())
epoch = iter(loader)
next(epoch)
state = loader.state_dict()
rest = [b["label"].tolist() for b in epoch]
resumed = DataLoader2(pipe.batch(4).collate())
resumed.load_state_dict(state)
print("DataLoader2 resumed mid-epoch from", state, "->", [b["label"].tolist() for b in resumed] == rest)
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
encoded = tok.encode_batch_tensors(["Hello world!", ("how are you?", "unaffable")])
print("padded batch for a model:\n", encoded["input_ids"], "\n", encoded["attention_mask"])
print("decode ->", repr(tok.decode(tok.encode("Hello, unaffable world!").ids)))

# embertext.datasets: GLUE's SST-2 through the real download, MD5 check and extraction, from a tiny
# SST-2.zip made here and served as a file:// mirror (RESOURCES maps each file to its URL and MD5).
import hashlib  # noqa: E402
import pathlib  # noqa: E402
import zipfile  # noqa: E402

from embertext import datasets  # noqa: E402

sst2_zip = pathlib.Path(tempfile.mkdtemp()) / "SST-2.zip"
with zipfile.ZipFile(sst2_zip, "w") as archive:
    archive.writestr("SST-2/train.tsv", "sentence\tlabel\nhide new secretions \t0\na charming journey \t1\n")
datasets.RESOURCES["SST-2.zip"] = datasets.Resource(sst2_zip.as_uri(), hashlib.md5(sst2_zip.read_bytes()).hexdigest())
train = datasets.SST2(root=sst2_zip.parent / "cache", split="train")
print("\nSST2 train rows:", list(train), "| len() is the real split's:", len(train))

# emberaudio: stream a generated 440 Hz tone through FFmpeg in 1-second chunks, low-passed.
from emberaudio.io import StreamReader  # noqa: E402

with StreamReader("sine=frequency=440:duration=3", format="lavfi") as reader:
    reader.add_audio_stream(frames_per_chunk=44100, filter_desc="lowpass=f=1000,aformat=sample_fmts=flt")
    peaks = [round(chunk.abs().max().item(), 3) for (chunk,) in reader.stream()]
print(f"\nemberaudio StreamReader: {len(peaks)} chunks of 1 s, low-passed 440 Hz tone, peaks {peaks}")

# emberaudio CTC decoding (Flashlight's beam search, in Rust): made-up emissions spelling
# "cats sat", decoded against a three-word lexicon and a bigram ARPA LM written here.
from emberaudio.models.decoder import ctc_decoder  # noqa: E402

asr_dir = pathlib.Path(tempfile.mkdtemp())
(asr_dir / "lexicon.txt").write_text("cat c a t |\ncats c a t s |\nsat s a t |\n")
(asr_dir / "lm.arpa").write_text(
    "\\data\\\nngram 1=6\nngram 2=3\n\n\\1-grams:\n-99\t<s>\t-0.3\n-1.0\t</s>\n-2.0\t<unk>\n-0.8\tcat\t-0.2\n"
    "-1.2\tcats\t-0.2\n-0.9\tsat\t-0.2\n\n\\2-grams:\n-0.2\t<s> cats\n-0.3\tcats sat\n-0.1\tsat </s>\n\n\\end\\\n")
ctc_tokens = ["-", "|", "c", "a", "t", "s"]
spoken = "c a a t s - | s s a t |".split()
logits = np.full((1, len(spoken), len(ctc_tokens)), -4.0, dtype=np.float32)
logits[0, np.arange(len(spoken)), [ctc_tokens.index(t) for t in spoken]] = 0.0
decoder = ctc_decoder(str(asr_dir / "lexicon.txt"), ctc_tokens, lm=str(asr_dir / "lm.arpa"), beam_size=50)
best = decoder(ember.from_numpy(logits).log_softmax(-1))[0][0]
print(f"emberaudio ctc_decoder: words {best.words}, score {best.score:.3f}")

# emberaudio MVDR beamforming: a harmonic "voice" and white noise reach four microphones with
# different delays; ideal masks at microphone 0 drive TorchAudio's MVDR (Souden's solution).
from emberaudio import functional as AF, transforms as AT  # noqa: E402

t = np.arange(8000) / 16000
voice = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 20)) * (1 + np.sin(2 * np.pi * 3 * t))
babble = np.random.default_rng(0).standard_normal(8000)
to_spec = AT.Spectrogram(n_fft=512, hop_length=128, power=None)
speech, noise = (to_spec(ember.from_numpy(np.stack([np.roll(src, d) for d in delays]).astype(np.float32)))
                 for src, delays in ((voice, [0, 2, 4, 6]), (babble, [7, 4, 1, 0])))
mask_s = speech[0].abs() / (speech[0].abs() + noise[0].abs())
mvdr = AT.MVDR(ref_channel=0, solution="ref_channel")
weights = AF.mvdr_weights_souden(AF.psd(speech + noise, mask_s), AF.psd(speech + noise, 1 - mask_s), 0)
enhanced = mvdr(speech + noise, mask_s, 1 - mask_s)  # (freq, time): the same weights applied


def snr_db(s, n):
    return 10 * np.log10((s.abs() ** 2).sum().item() / (n.abs() ** 2).sum().item())


print(f"emberaudio MVDR: {tuple(enhanced.shape)} enhanced spectrum; SNR at mic 0 {snr_db(speech[0], noise[0]):.1f} dB, "
      f"after MVDR {snr_db(AF.apply_beamforming(weights, speech), AF.apply_beamforming(weights, noise)):.1f} dB")

# embervision: an image classified end to end. A JPEG written and read back with embervision.io,
# prepared by the weights' own preset (resize 256, crop 224, ImageNet normalisation) and classified
# by ResNet-18. The real ImageNet weights are used when they are in the hub cache already;
# otherwise (offline) deterministic random weights stand in (the categories they pick mean nothing),
# saved as a checkpoint named with its SHA-256 prefix and fetched from a file:// URL through the
# same hub download and hash check.
import embervision.io as vio  # noqa: E402
from embervision.models import ResNet18_Weights, Weights, WeightsEnum, resnet18  # noqa: E402

imagenet = ResNet18_Weights.IMAGENET1K_V1
checkpoints = os.path.join(ember.hub.get_dir(), "checkpoints")
if os.path.exists(os.path.join(checkpoints, os.path.basename(imagenet.url))):
    weights = imagenet
else:
    checkpoints = tempfile.mkdtemp()
    ember.manual_seed(0)
    served = pathlib.Path(tempfile.mkdtemp()) / "resnet18.pth"
    ember.save(resnet18().state_dict(), served)
    named = served.with_name(f"resnet18-{hashlib.sha256(served.read_bytes()).hexdigest()[:8]}.pth")
    served.rename(named)
    DemoWeights = WeightsEnum("DemoWeights", {"RANDOM": Weights(named.as_uri(), imagenet.transforms, imagenet.meta)})
    weights = DemoWeights.RANDOM
classifier = resnet18().eval()
classifier.load_state_dict(weights.get_state_dict(progress=False, model_dir=checkpoints))
yy, xx = np.mgrid[0:480, 0:640]
photo = np.stack([xx * 255 // 640, yy * 255 // 480, 128 + 100 * np.sin(xx / 40.0) * np.cos(yy / 30.0)]).astype(np.uint8)
jpeg = vio.encode_jpeg(ember.from_numpy(photo), quality=90)
image = vio.decode_jpeg(jpeg)
preprocess = weights.transforms()
with ember.no_grad():
    probabilities = classifier(preprocess(image).unsqueeze(0)).softmax(1)[0]
top = probabilities.topk(3)
side = preprocess.crop_size[0]
print(f"\nembervision: {tuple(image.shape)} image from a {jpeg.numel()}-byte JPEG -> {side}x{side} crop -> "
      f"resnet18 with {weights!r}; top 3:",
      ", ".join(f"{weights.meta['categories'][i]} {p:.1%}" for p, i in zip(top.values.tolist(), top.indices.tolist())))
