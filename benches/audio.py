"""emberaudio benchmark: StreamReader decoding throughput and memory; the CTC decoder's speed and
memory against flashlight-text and pyctcdecode; the front end (MelSpectrogram, Resample) against
the same computation in torch ops.

    python benches/audio.py [streamreader] [decoder] [frontend] [mvdr]      (all when none is named)

Throughput: a generated 10-minute stereo 44.1 kHz file (FLAC, then MP3) decoded to float32 chunks
of 1 s by `emberaudio.io.StreamReader`, against the limit: the FFmpeg CLI (the same binary)
decoding the same file to raw float32 into /dev/null. Best of STREAM_REPEATS runs each, the two
alternating (ember, CLI, ember, ...) so that both see the same state of a shared machine.
Memory: peak RSS of a fresh child process (and, separately, of its FFmpeg) streaming a 1-minute
and a 60-minute FLAC file through StreamReader; streaming memory must not grow with the length.

CTC decoder: LibriSpeech-shaped assets made here (29 tokens, a 5000-word lexicon, a trigram ARPA
LM over it) and UTTERANCES utterances of FRAMES frames whose emissions spell lexicon words under
Gaussian noise. Time per utterance for `ctc_decoder` (Ember on one thread, and the batch on all
cores), flashlight-text's decoder built as TorchAudio builds it (one thread; it has no batching),
and pyctcdecode (its own prefix beam search, default pruning; same beam width, the same ARPA file
through the `kenlm` module, alpha = lm_weight): beam 50 and 500, with and without the LM. Ember's
and Flashlight's best hypotheses are compared (words, tokens, score to 1e-4). Memory: peak RSS of
a child process while it decodes the utterances one by one with a decoder built beforehand, and
how much of it the decoding added over the built decoder.

Front end: `emberaudio.transforms.MelSpectrogram` (TorchAudio's defaults: n_fft 400, hop 200,
128 mels at 16 kHz) and `Resample` (44.1 → 16 kHz, and 16 → 44.1 kHz) on a float32 batch of
FRONTEND_BATCH clips of FRONTEND_SECONDS s, forward only, best of REPEATS. torchaudio is not
installed, so the reference is the same computation written in torch ops (torch.stft, matmul
with Ember's own filter bank; conv1d with Ember's own kernel), which is what torchaudio runs.

MVDR: `emberaudio.transforms.MVDR` (each solution) on a complex64 batch of MVDR_BATCH utterances,
MVDR_CHANNELS microphones, 257 frequencies and MVDR_FRAMES frames (4 s at 16 kHz, hop 256) with
speech and noise masks, forward only, best of REPEATS; against TorchAudio's MVDR formulas written
in torch ops (torchaudio is not installed: mask-weighted PSDs as one matmul, `torch.linalg.solve` /
`eigh`, complex128 inside as TorchAudio's module computes) and in NumPy, after checking all three
agree.
"""
import os
import pathlib
from importlib import metadata
import resource
import string
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "audio"))
sys.path.insert(0, str(ROOT / "audio" / "tests"))  # emberaudio_test_decoder: assets and the Flashlight reference

from emberaudio import _ffmpeg  # noqa: E402
from emberaudio.io import StreamReader  # noqa: E402

REPEATS = 3
STREAM_REPEATS = 7
SAMPLE_RATE = 44100


def make_file(folder, minutes, ext):
    path = folder / f"sine_{minutes}min.{ext}"
    source = f"sine=frequency=440:duration={minutes * 60}:sample_rate={SAMPLE_RATE},pan=stereo|c0=c0|c1=0.5*c0"
    codec = {"flac": "flac", "mp3": "libmp3lame"}[ext]
    subprocess.run(_ffmpeg.base_command() + ["-f", "lavfi", "-i", source, "-c:a", codec, "-y", str(path)], check=True)
    return path


def stream_all(path):
    """Frames decoded by StreamReader, in 1-second float32 chunks."""
    with StreamReader(path) as reader:
        reader.add_basic_audio_stream(frames_per_chunk=SAMPLE_RATE)
        return sum(chunk.shape[0] for (chunk,) in reader.stream())


def ffmpeg_cli(path):
    subprocess.run(_ffmpeg.base_command() + ["-i", str(path), "-map", "0:a:0", "-f", "f32le", "-y", "/dev/null"],
                   check=True)


def best_seconds_interleaved(runs, path):
    """Best time of each of `runs` over STREAM_REPEATS rounds, each round running all of them once."""
    times = [[] for _ in runs]
    for _ in range(STREAM_REPEATS):
        for run, taken in zip(runs, times):
            start = time.perf_counter()
            run(path)
            taken.append(time.perf_counter() - start)
    return [min(taken) for taken in times]


def peak_rss_in_child(path):
    """(peak RSS of a fresh Python streaming `path`, peak RSS of its FFmpeg), in MB."""
    out = subprocess.run([sys.executable, __file__, "--rss", str(path)], capture_output=True, text=True, check=True)
    own, ffmpeg = out.stdout.split()
    return float(own), float(ffmpeg)


def rss_child_main(path):
    stream_all(path)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{own:.1f} {children:.1f}")


def stream_reader_section():
    folder = pathlib.Path(tempfile.mkdtemp(prefix="emberaudio-bench-"))
    print(f"FFmpeg {_ffmpeg.executable()}, {os.cpu_count()} cores; best of {STREAM_REPEATS} runs each, alternating\n")
    print("| workload | emberaudio StreamReader | FFmpeg CLI to /dev/null | ratio (CLI time / ember time) |")
    print("|---|---|---|---|")
    for ext in ("flac", "mp3"):
        path = make_file(folder, 10, ext)
        ember_s, cli_s = best_seconds_interleaved((stream_all, ffmpeg_cli), path)
        audio_s = 600
        print(f"| 10 min stereo 44.1 kHz {ext} -> float32 chunks of 1 s | {ember_s:.2f} s ({audio_s / ember_s:.0f}x real time) "
              f"| {cli_s:.2f} s ({audio_s / cli_s:.0f}x) | {cli_s / ember_s:.2f}x |")
    print("\n| file streamed (FLAC, 1 s chunks) | peak RSS, Python process | peak RSS, its FFmpeg |")
    print("|---|---|---|")
    for minutes in (1, 60):
        own, ffmpeg = peak_rss_in_child(make_file(folder, minutes, "flac"))
        print(f"| {minutes} min | {own:.0f} MB | {ffmpeg:.0f} MB |")
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


# CTC decoder

UTTERANCES = 10
FRAMES = 300  # 6 s of speech at wav2vec 2.0's 50 frames per second
LETTERS = [*string.ascii_lowercase, "'"]
TOKENS = ["-", "|", *LETTERS]


def decoder_assets(folder):
    """(tokens, lexicon, ARPA LM) files, and the emissions (saved as emissions.npy)."""
    import emberaudio_test_decoder as assets

    rng = np.random.default_rng(0)
    words = assets.make_words(rng, 5000, max_len=9, letters=LETTERS)
    files = (assets.write_tokens(folder / "tokens.txt", TOKENS), assets.write_lexicon(folder / "lexicon.txt", words),
             assets.write_arpa(folder / "lm.arpa", words, rng, successors=10))
    emissions = np.stack([assets.spoken_emissions(rng, words, FRAMES, TOKENS)[0] for _ in range(UTTERANCES)])
    np.save(folder / "emissions.npy", emissions)
    return files, emissions


def quiet_stderr(build):
    """KenLM prints a progress bar on stderr (fd 2) while it reads an ARPA file."""
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        return build()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def build_decoder(library, files, beam, with_lm):
    """A function decoding a (batch, frames, tokens) array with `library`'s decoder."""
    tokens, lexicon, lm = files
    lm = lm if with_lm else None
    if library == "ember":
        import ember
        from emberaudio.models.decoder import ctc_decoder

        decoder = ctc_decoder(lexicon, tokens, lm=lm, beam_size=beam)
        return lambda emissions: decoder(ember.from_numpy(emissions))
    if library == "flashlight":
        from emberaudio_test_decoder import FlashlightReference

        return quiet_stderr(lambda: FlashlightReference(lexicon, tokens, lm=lm, beam_size=beam))
    from pyctcdecode import build_ctcdecoder

    words = [line.split()[0] for line in open(lexicon)]
    labels = ["", " ", *LETTERS]  # pyctcdecode's blank and word delimiter
    decoder = quiet_stderr(lambda: build_ctcdecoder(labels, kenlm_model_path=lm, unigrams=words if lm else None,
                                                    alpha=2.0, beta=0.0))
    return lambda emissions: [decoder.decode(e, beam_width=beam) for e in emissions]


def per_utterance_ms(run, emissions, repeats):
    best = min(timed(run, emissions) for _ in range(repeats))
    return best / len(emissions) * 1000


def timed(run, emissions):
    start = time.perf_counter()
    run(emissions)
    return time.perf_counter() - start


def same_output(ember_hyps, flashlight_hyps):
    for got, want in zip(ember_hyps, flashlight_hyps):
        g, w = got[0], want[0]
        if (g.tokens.tolist(), g.words, g.timesteps.tolist()) != (w[0], w[1], w[3]) or abs(g.score - w[2]) > 1e-4:
            return False
    return True


def ember_on_threads(threads, run):
    import ember

    def go(emissions):
        default = ember.get_num_threads()
        ember.set_num_threads(threads)
        try:
            return run(emissions)
        finally:
            ember.set_num_threads(default)

    return go


def decoder_speed_row(files, emissions, beam, with_lm):
    ember_run = build_decoder("ember", files, beam, with_lm)
    flashlight_run = build_decoder("flashlight", files, beam, with_lm)
    identical = same_output(ember_run(emissions), flashlight_run(emissions))
    one = per_utterance_ms(ember_on_threads(1, ember_run), emissions, REPEATS)
    cores = per_utterance_ms(ember_run, emissions, REPEATS)
    fl = per_utterance_ms(flashlight_run, emissions, REPEATS)
    pyctc = per_utterance_ms(build_decoder("pyctcdecode", files, beam, with_lm), emissions, 1)
    lm = "trigram ARPA" if with_lm else "none"
    print(f"| {beam} | {lm} | {one:.1f} ms | {cores:.1f} ms | {fl:.1f} ms | {pyctc:.0f} ms | {fl / one:.2f}x "
          f"| {'yes' if identical else 'NO'} |")


def decoder_rss_in_child(library, folder, beam, with_lm):
    out = subprocess.run([sys.executable, __file__, "--decoder-rss", library, str(folder), str(beam), str(int(with_lm))],
                         capture_output=True, text=True, check=True)
    built, peak = out.stdout.split()
    return float(built), float(peak)


def status_mb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def decoder_rss_child_main(library, folder, beam, with_lm):
    """Builds one decoder, then decodes the utterances one by one (Ember on one thread, as the
    others); prints, in MB, the RSS once built and the peak RSS while decoding (the peak is
    reset after building: reading an ARPA file peaks higher than the model it leaves)."""
    folder = pathlib.Path(folder)
    files = tuple(str(folder / name) for name in ("tokens.txt", "lexicon.txt", "lm.arpa"))
    emissions = np.load(folder / "emissions.npy")
    if library == "ember":
        import ember

        ember.set_num_threads(1)
    run = build_decoder(library, files, int(beam), with_lm == "1")
    built = status_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM, the peak RSS, to the current RSS
    for u in range(len(emissions)):
        run(emissions[u : u + 1])
    print(f"{built:.1f} {status_mb('VmHWM'):.1f}")


def decoder_section():
    folder = pathlib.Path(tempfile.mkdtemp(prefix="emberaudio-decoder-bench-"))
    files, emissions = decoder_assets(folder)
    anchors = ", ".join(f"{name} {metadata.version(name)}" for name in ("flashlight-text", "pyctcdecode", "kenlm"))
    print(f"\nCTC beam search ({anchors}), lexicon of 5000 words, {len(TOKENS)} tokens, {UTTERANCES} utterances of "
          f"{FRAMES} frames; time per utterance, best of {REPEATS} runs (pyctcdecode: 1 run)\n")
    print("| beam | LM | Ember, 1 thread | Ember, batch on all cores | flashlight-text (1 thread) | pyctcdecode "
          "| ratio (Flashlight / Ember 1 thread) | same output as Flashlight |")
    print("|---|---|---|---|---|---|---|---|")
    for beam in (50, 500):
        for with_lm in (False, True):
            decoder_speed_row(files, emissions, beam, with_lm)
    print("\n| decoder (beam 500, trigram LM) | RSS once built | peak RSS while decoding | added by decoding |")
    print("|---|---|---|---|")
    for library in ("ember", "flashlight"):
        built, peak = decoder_rss_in_child(library, folder, 500, True)
        print(f"| {library} | {built:.0f} MB | {peak:.0f} MB | {peak - built:.1f} MB |")
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


FRONTEND_BATCH = 16
FRONTEND_SECONDS = 10


def best_of(run):
    run()  # warm-up
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def frontend_section():
    import math

    import ember
    import torch
    from emberaudio import transforms

    rng = np.random.default_rng(0)
    rows = []
    clips = rng.standard_normal((FRONTEND_BATCH, 16000 * FRONTEND_SECONDS)).astype(np.float32)
    x_ember, x_torch = ember.from_numpy(clips), torch.from_numpy(clips)
    mel = transforms.MelSpectrogram()
    fb = torch.from_numpy(mel.mel_scale.fb.numpy().copy())
    window = torch.hann_window(400)

    def torch_mel():
        spec = torch.stft(x_torch, 400, 200, 400, window, center=True, pad_mode="reflect",
                          return_complex=True).abs().pow(2.0)
        return torch.matmul(spec.transpose(-1, -2), fb).transpose(-1, -2)

    got, want = mel(x_ember).numpy(), torch_mel().numpy()
    assert np.allclose(got, want, rtol=1e-3, atol=1e-3 * want.max()), "MelSpectrogram differs from torch"
    rows.append(("MelSpectrogram (16 kHz, n_fft 400, hop 200, 128 mels)", 16000,
                 best_of(lambda: mel(x_ember)), best_of(torch_mel)))
    for orig, new in ((44100, 16000), (16000, 44100)):
        clips = rng.standard_normal((FRONTEND_BATCH, orig * FRONTEND_SECONDS)).astype(np.float32)
        x_ember, x_torch = ember.from_numpy(clips), torch.from_numpy(clips)
        res = transforms.Resample(orig, new)
        kernel, width, g = torch.from_numpy(res.kernel.numpy().copy()), res.width, res.gcd

        def torch_resample(x=x_torch, kernel=kernel, width=width, o=orig // g, n=new // g):
            out = torch.nn.functional.conv1d(torch.nn.functional.pad(x, (width, width + o))[:, None], kernel, stride=o)
            return out.transpose(1, 2).reshape(x.shape[0], -1)[..., :math.ceil(n * x.shape[-1] / o)]

        got, want = res(x_ember).numpy(), torch_resample().numpy()
        assert np.allclose(got, want, atol=1e-4), "Resample differs from torch"
        rows.append((f"Resample {orig} → {new} Hz (sinc, width 6)", orig,
                     best_of(lambda: res(x_ember)), best_of(torch_resample)))
    print(f"\nFront end, float32 batch of {FRONTEND_BATCH} clips of {FRONTEND_SECONDS} s, forward only, best of "
          f"{REPEATS} (torch {torch.__version__}, {torch.get_num_threads()} threads; torchaudio absent: the torch "
          "column is the same computation in torch ops)\n")
    print("| transform | emberaudio | torch ops | audio seconds per second, ember | ratio (torch time / ember time) |")
    print("|---|---|---|---|---|")
    for name, _, ember_s, torch_s in rows:
        audio = FRONTEND_BATCH * FRONTEND_SECONDS
        print(f"| {name} | {ember_s * 1e3:.1f} ms | {torch_s * 1e3:.1f} ms | {audio / ember_s:.0f} | "
              f"{torch_s / ember_s:.2f}x |")


MVDR_BATCH, MVDR_CHANNELS, MVDR_FREQS, MVDR_FRAMES = 8, 6, 257, 250


def mvdr_reference(xp, solve, eigh, spec, mask_s, mask_n, solution, ref=0, diag_eps=1e-7, eps=1e-8):
    """TorchAudio's MVDR forward written against an array library `xp` (numpy or torch), its PSDs as
    one matmul over contiguous frames (TorchAudio's per-frame outer products are 4x slower in torch)."""
    frames = spec.swapaxes(-3, -2)  # (batch, freq, channel, time)
    frames = frames.contiguous() if hasattr(frames, "contiguous") else np.ascontiguousarray(frames)

    def psd(mask):
        mask = mask / (mask.sum(-1, keepdims=True) + 1e-15)
        return (frames * mask[..., None, :]) @ frames.conj().swapaxes(-1, -2)

    def loaded(mat):
        trace = xp.diagonal(mat, 0, -2, -1).sum(-1).real
        return mat + (trace * diag_eps + 1e-8)[..., None, None] * xp.eye(mat.shape[-1], dtype=mat.dtype)

    psd_s, psd_n = psd(mask_s), loaded(psd(mask_n))
    if solution == "ref_channel":
        numerator = solve(psd_n, psd_s)
        weights = (numerator / (xp.diagonal(numerator, 0, -2, -1).sum(-1)[..., None, None] + eps))[..., ref]
    else:
        if solution == "stv_evd":
            stv = eigh(psd_s)[1][..., -1]
        else:
            phi = solve(psd_n, psd_s)
            stv = (psd_s @ (phi @ phi[..., ref:ref + 1]))[..., 0]
        numerator = solve(psd_n, stv[..., None])[..., 0]
        weights = numerator / ((stv.conj() * numerator).sum(-1).real[..., None] + eps) * stv[..., ref:ref + 1].conj()
    return (weights.conj()[..., None, :] @ frames)[..., 0, :]


def mvdr_section():
    import ember
    import torch
    from emberaudio import transforms

    rng = np.random.default_rng(0)
    shape = (MVDR_BATCH, MVDR_CHANNELS, MVDR_FREQS, MVDR_FRAMES)
    spec = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    mask_s = rng.random((MVDR_BATCH, MVDR_FREQS, MVDR_FRAMES)).astype(np.float32)
    mask_n = (1 - mask_s).astype(np.float32)
    spec_e, mask_s_e, mask_n_e = (ember.from_numpy(a) for a in (spec, mask_s, mask_n))
    spec_t, mask_s_t, mask_n_t = (torch.from_numpy(a) for a in (spec, mask_s, mask_n))
    spec_np = spec.astype(np.complex128)
    rows = []
    for solution in ("ref_channel", "stv_power", "stv_evd"):
        module = transforms.MVDR(solution=solution)

        def run_torch(solution=solution):
            out = mvdr_reference(torch, torch.linalg.solve, torch.linalg.eigh, spec_t.to(torch.complex128),
                                 mask_s_t, mask_n_t, solution)
            return out.to(torch.complex64)

        def run_numpy(solution=solution):
            return mvdr_reference(np, np.linalg.solve, np.linalg.eigh, spec_np, mask_s, mask_n, solution)

        got = module(spec_e, mask_s_e, mask_n_e).numpy()
        for want in (run_torch().numpy(), run_numpy()):
            assert np.allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max()), f"MVDR {solution} differs"
        rows.append((solution, best_of(lambda: module(spec_e, mask_s_e, mask_n_e)), best_of(run_torch),
                     best_of(run_numpy)))
    print(f"\nMVDR, complex64 batch of {MVDR_BATCH} x {MVDR_CHANNELS} channels x {MVDR_FREQS} freqs x {MVDR_FRAMES} "
          f"frames (4 s at 16 kHz), forward only, best of {REPEATS} (torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; torchaudio absent: TorchAudio's MVDR formulas in torch ops)\n")
    print("| solution | emberaudio MVDR | torch ops | NumPy | utterances per second, ember | torch time / ember time "
          "| NumPy time / ember time |")
    print("|---|---|---|---|---|---|---|")
    for solution, ember_s, torch_s, numpy_s in rows:
        print(f"| {solution} | {ember_s * 1e3:.1f} ms | {torch_s * 1e3:.1f} ms | {numpy_s * 1e3:.1f} ms | "
              f"{MVDR_BATCH / ember_s:.0f} | {torch_s / ember_s:.2f}x | {numpy_s / ember_s:.2f}x |")


def main(sections):
    if "streamreader" in sections:
        stream_reader_section()
    if "decoder" in sections:
        decoder_section()
    if "frontend" in sections:
        frontend_section()
    if "mvdr" in sections:
        mvdr_section()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rss"]:
        rss_child_main(sys.argv[2])
    elif sys.argv[1:2] == ["--decoder-rss"]:
        decoder_rss_child_main(*sys.argv[2:6])
    else:
        main(sys.argv[1:] or ["streamreader", "decoder", "frontend", "mvdr"])
