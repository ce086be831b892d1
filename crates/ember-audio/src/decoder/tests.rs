//! Decoder tests: hand-checked cases and exhaustive enumerations on tiny inputs.

use super::greedy::greedy_decode;
use super::*;
use crate::lm::arpa::ArpaModel;
use crate::lm::ZeroLm;

const TOKENS: &str = "-\n|\na\nb\nc\n";
const LEXICON: &str = "ab a b |\nba b a |\nc c |\n";
const BLANK: usize = 0;
const SIL: usize = 1;
const A: usize = 2;
const B: usize = 3;
const C: usize = 4;

/// Word bigram model over the lexicon's words.
const WORD_ARPA: &str = "\\data\\
ngram 1=6
ngram 2=4

\\1-grams:
-99\t<s>\t-0.3
-0.8\t</s>
-0.9\tab\t-0.2
-0.4\tba\t-0.25
-1.1\tc\t-0.1
-3.0\t<unk>

\\2-grams:
-0.35\t<s> ab
-0.7\t<s> ba
-0.2\tab c
-0.15\tc </s>

\\end\\
";

/// Deterministic pseudo-random log-softmax emissions.
fn random_emissions(seed: u64, frames: usize, tokens: usize) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = Vec::with_capacity(frames * tokens);
    for _ in 0..frames {
        let row: Vec<f64> = (0..tokens)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) as f64 / (1u64 << 31) as f64) * 4.0
            })
            .collect();
        let lse = row.iter().map(|v| v.exp()).sum::<f64>().ln();
        out.extend(row.iter().map(|v| (v - lse) as f32));
    }
    out
}

/// Emissions where each frame's chosen token has log-prob `hi` and the others `lo`.
fn peaked(path: &[usize], tokens: usize, hi: f32, lo: f32) -> Vec<f32> {
    let mut out = vec![lo; path.len() * tokens];
    for (t, &k) in path.iter().enumerate() {
        out[t * tokens + k] = hi;
    }
    out
}

fn decoder(lm: Option<&str>, options: &CtcDecoderOptions) -> CtcDecoder {
    let lexicon = Lexicon::parse(LEXICON).unwrap();
    let tokens = Dictionary::parse_tokens(TOKENS).unwrap();
    let lm = lm.map(|text| Arc::new(ArpaModel::parse(text).unwrap()));
    CtcDecoder::new(Some(&lexicon), tokens, lm, options).unwrap()
}

fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol, "{a} vs {b}");
}

#[test]
fn lexicon_decoder_reads_the_obvious_word() {
    let d = decoder(None, &CtcDecoderOptions::default());
    let path = [A, A, BLANK, B, SIL, SIL];
    let e = peaked(&path, 5, -0.1, -5.0);
    let hyps = d.decode(&e, path.len(), 5).unwrap();
    assert_eq!(hyps.len(), 1);
    let h = &hyps[0];
    assert_eq!(h.words, vec!["ab"]);
    assert_eq!(h.tokens, vec![SIL, A, B, SIL]);
    assert_eq!(h.timesteps, vec![0, 1, 4, 5]);
    close(h.score, -0.6, 1e-5);
    assert_eq!(d.idxs_to_tokens(&h.tokens), vec!["|", "a", "b", "|"]);
}

#[test]
fn lexicon_decoder_rejects_spellings_outside_the_lexicon() {
    // Acoustically "a c": not a word; the decoder must pick a lexicon word instead.
    let d = decoder(None, &CtcDecoderOptions::default());
    let e = peaked(&[A, C, SIL], 5, -0.1, -3.0);
    let h = &d.decode(&e, 3, 5).unwrap()[0];
    assert!(
        h.words.iter().all(|w| w == "ab" || w == "ba" || w == "c"),
        "{:?}",
        h.words
    );
    assert!(!h.words.is_empty());
    // With unknown words allowed and cheap, "a" becomes <unk> and "c |" the word c.
    // ("c" is spelled `c |`, so the silence frame completes it.)
    let opts = CtcDecoderOptions {
        unk_score: -0.01,
        ..Default::default()
    };
    let d = decoder(None, &opts);
    let h = &d.decode(&e, 3, 5).unwrap()[0];
    close(h.score, -0.31, 1e-5);
    assert_eq!(h.words, vec!["<unk>", "c"]);
}

#[test]
fn word_lm_decides_between_acoustic_ties() {
    // "ab" and "ba" with identical acoustics (a and b equally likely in both frames).
    let mut e = vec![-6.0f32; 3 * 5];
    for t in 0..2 {
        e[t * 5 + A] = -0.7;
        e[t * 5 + B] = -0.7;
    }
    e[2 * 5 + SIL] = -0.05;
    let opts = CtcDecoderOptions {
        lm_weight: 1.0,
        nbest: 2,
        ..Default::default()
    };
    let d = decoder(Some(WORD_ARPA), &opts);
    let hyps = d.decode(&e, 3, 5).unwrap();
    // ab: log10 P(ab|<s>) = -0.35, P(</s>|ab) backs off: bo(ab) -0.2 + P(</s>) -0.8
    // ba: P(ba|<s>) = -0.7, P(</s>|ba) = -0.25 - 0.8
    let ab = -1.45 - 0.35 - 1.0;
    let ba = -1.45 - 0.7 - 1.05;
    assert_eq!(hyps[0].words, vec!["ab"]);
    close(hyps[0].score, ab, 1e-5);
    assert_eq!(hyps[1].words, vec!["ba"]);
    close(hyps[1].score, ba, 1e-5);
}

#[test]
fn lm_scores_are_log10_as_in_flashlight() {
    let model = Arc::new(ArpaModel::parse(WORD_ARPA).unwrap());
    let words = Lexicon::parse(LEXICON).unwrap().word_dictionary();
    let lm = ArpaLm::new(model, &words);
    let start = lm.start(false);
    let (_, s) = lm.score(&start, words.index("ab").unwrap());
    close(s as f64, -0.35, 1e-6);
    // the trie's look-ahead at the root child 'a' is the best word below it: ab's -0.35
    let d = decoder(Some(WORD_ARPA), &CtcDecoderOptions::default());
    let trie = d.trie().unwrap();
    let a = trie.search(&[A]).unwrap();
    close(trie.node(a).max_score as f64, -0.35, 1e-6);
    let b = trie.search(&[B]).unwrap();
    close(trie.node(b).max_score as f64, -0.7, 1e-6);
}

/// Every derivation the lexicon search allows, followed exhaustively; returns the best final
/// score (nice-ending rule applied) with its words.
fn brute_force_lexicon<L: LanguageModel>(
    trie: &Trie,
    lm: &L,
    words: &Dictionary,
    e: &[f32],
    frames: usize,
    n: usize,
    o: &BeamOptions,
) -> (f64, Vec<String>) {
    #[derive(Clone)]
    struct S<St> {
        score: f64,
        lm: St,
        node: u32,
        token: usize,
        blank: bool,
        words: Vec<usize>,
    }
    let root = crate::trie::ROOT;
    let mut states = vec![S {
        score: 0.0,
        lm: lm.start(false),
        node: root,
        token: SIL,
        blank: false,
        words: vec![],
    }];
    for t in 0..frames {
        let f = &e[t * n..(t + 1) * n];
        let mut next = Vec::new();
        for s in &states {
            let node = trie.node(s.node);
            let lex_max = if s.node == root { 0.0 } else { node.max_score };
            for (k, &fk) in f.iter().enumerate() {
                let Some(c) = node.child(k) else { continue };
                let child = trie.node(c);
                let sc = s.score + fk as f64 + if k == SIL { o.sil_score } else { 0.0 };
                if (s.blank || k != s.token) && child.has_children() {
                    let la = (child.max_score - lex_max) as f64;
                    next.push(S {
                        score: sc + o.lm_weight * la,
                        node: c,
                        token: k,
                        blank: false,
                        ..s.clone()
                    });
                }
                for &w in &child.labels {
                    if s.node == root && s.token == k {
                        continue;
                    }
                    let (st, ls) = lm.score(&s.lm, w);
                    let mut ws = s.words.clone();
                    ws.push(w);
                    let l = (ls - lex_max) as f64;
                    next.push(S {
                        score: sc + o.lm_weight * l + o.word_score,
                        lm: st,
                        node: root,
                        token: k,
                        blank: false,
                        words: ws,
                    });
                }
                if child.labels.is_empty() && o.unk_score > f64::NEG_INFINITY {
                    let unk = words.index("<unk>").unwrap();
                    let (st, ls) = lm.score(&s.lm, unk);
                    let mut ws = s.words.clone();
                    ws.push(unk);
                    let l = (ls - lex_max) as f64;
                    next.push(S {
                        score: sc + o.lm_weight * l + o.unk_score,
                        lm: st,
                        node: root,
                        token: k,
                        blank: false,
                        words: ws,
                    });
                }
            }
            if !s.blank || s.node == root {
                let k = if s.node == root { SIL } else { s.token };
                let sc = s.score + f[k] as f64 + if k == SIL { o.sil_score } else { 0.0 };
                next.push(S {
                    score: sc,
                    token: k,
                    blank: false,
                    ..s.clone()
                });
            }
            next.push(S {
                score: s.score + f[BLANK] as f64,
                token: BLANK,
                blank: true,
                ..s.clone()
            });
        }
        states = next;
    }
    let nice = states.iter().any(|s| s.node == root);
    let mut best = (f64::NEG_INFINITY, vec![]);
    for s in &states {
        if nice && s.node != root {
            continue;
        }
        let total = s.score + o.lm_weight * lm.finish(&s.lm).1 as f64;
        if total > best.0 {
            best = (
                total,
                s.words
                    .iter()
                    .map(|&w| words.entry(w).unwrap().to_string())
                    .collect(),
            );
        }
    }
    best
}

#[test]
fn lexicon_search_matches_exhaustive_enumeration() {
    for seed in 0..12u64 {
        let frames = 4 + (seed as usize % 2);
        let e = random_emissions(seed, frames, 5);
        let opts = CtcDecoderOptions {
            lm_weight: 0.5 + seed as f64 * 0.1,
            word_score: -0.3,
            sil_score: 0.2,
            unk_score: if seed % 3 == 0 {
                -1.5
            } else {
                f64::NEG_INFINITY
            },
            log_add: false,
            beam_size: 100_000,
            beam_threshold: 1e9,
            ..Default::default()
        };
        let d = decoder(Some(WORD_ARPA), &opts);
        let got = &d.decode(&e, frames, 5).unwrap()[0];
        let DecoderLm::Arpa(lm) = &d.lm else { panic!() };
        let (score, words) = brute_force_lexicon(
            d.trie().unwrap(),
            lm,
            d.words().unwrap(),
            &e,
            frames,
            5,
            &d.beam,
        );
        close(got.score, score, 1e-6);
        assert_eq!(got.words, words, "seed {seed}");
    }
}

/// Token-level ARPA over the token set (for lexicon-free decoding).
const TOKEN_ARPA: &str = "\\data\\
ngram 1=7
ngram 2=3

\\1-grams:
-99\t<s>\t-0.2
-0.9\t</s>
-0.5\ta\t-0.1
-0.6\tb\t-0.3
-1.0\tc
-0.7\t|\t-0.05
-2.0\t<unk>

\\2-grams:
-0.1\ta b
-0.3\t<s> c
-0.2\tb </s>

\\end\\
";

/// Exhaustive lexicon-free scoring: every frame path, its CTC token sequence scored by the LM.
fn brute_force_lexicon_free(
    lm: &ArpaLm,
    e: &[f32],
    frames: usize,
    n: usize,
    o: &BeamOptions,
) -> f64 {
    let mut best = f64::NEG_INFINITY;
    let total = n.pow(frames as u32);
    for code in 0..total {
        let mut c = code;
        let path: Vec<usize> = (0..frames)
            .map(|_| {
                let k = c % n;
                c /= n;
                k
            })
            .collect();
        let mut score = 0.0;
        let mut state = lm.start(false);
        let (mut prev, mut prev_blank) = (SIL, false);
        for (t, &k) in path.iter().enumerate() {
            score += e[t * n + k] as f64;
            if k == SIL {
                score += o.sil_score;
            }
            if k != BLANK && (k != prev || prev_blank) {
                let (st, s) = lm.score(&state, k);
                score += o.lm_weight * s as f64;
                state = st;
            }
            prev_blank = k == BLANK;
            prev = k;
        }
        score += o.lm_weight * lm.finish(&state).1 as f64;
        best = best.max(score);
    }
    best
}

#[test]
fn lexicon_free_search_matches_exhaustive_enumeration() {
    for seed in 0..10u64 {
        let frames = 5;
        let e = random_emissions(100 + seed, frames, 5);
        let opts = CtcDecoderOptions {
            lm_weight: 0.3 * seed as f64,
            sil_score: -0.1,
            beam_size: 100_000,
            beam_threshold: 1e9,
            ..Default::default()
        };
        let tokens = Dictionary::parse_tokens(TOKENS).unwrap();
        let model = Arc::new(ArpaModel::parse(TOKEN_ARPA).unwrap());
        let d = CtcDecoder::new(None, tokens, Some(model), &opts).unwrap();
        let got = &d.decode(&e, frames, 5).unwrap()[0];
        let DecoderLm::Arpa(lm) = &d.lm else { panic!() };
        close(
            got.score,
            brute_force_lexicon_free(lm, &e, frames, 5, &d.beam),
            1e-6,
        );
        assert!(got.words.is_empty());
    }
}

#[test]
fn lexicon_free_without_lm_finds_the_greedy_path() {
    for seed in 0..8u64 {
        let frames = 12;
        let e = random_emissions(7 + seed, frames, 5);
        let tokens = Dictionary::parse_tokens(TOKENS).unwrap();
        let d = CtcDecoder::new(None, tokens, None, &CtcDecoderOptions::default()).unwrap();
        let got = &d.decode(&e, frames, 5).unwrap()[0];
        let greedy = greedy_decode(&e, frames, 5, BLANK);
        close(got.score, greedy.score, 1e-5);
        // raw path: sil, argmax per frame, sil; collapse then drop blanks
        let mut raw = vec![SIL];
        for t in 0..frames {
            let f = &e[t * 5..(t + 1) * 5];
            raw.push((0..5).max_by(|&a, &b| f[a].total_cmp(&f[b])).unwrap());
        }
        raw.push(SIL);
        let mut expect = Vec::new();
        for i in 0..raw.len() {
            if (i == 0 || raw[i] != raw[i - 1]) && raw[i] != BLANK {
                expect.push(raw[i]);
            }
        }
        assert_eq!(got.tokens, expect, "seed {seed}");
    }
}

#[test]
fn log_add_merges_paths_into_one_hypothesis() {
    // tokens - | a ; two frames. Paths reading "a": (a,a) (a,-) (-,a), and (|,a) since a
    // leading silence repeats the initial silence; all end in one state after `finish`.
    let tokens = Dictionary::parse_tokens("-\n|\na\n").unwrap();
    let e = [-1.0f32, -3.0, -0.5, -0.8, -3.0, -0.9];
    let opts = CtcDecoderOptions {
        log_add: true,
        nbest: 10,
        ..Default::default()
    };
    let d = CtcDecoder::new(None, tokens, None, &opts).unwrap();
    let hyps = d.decode(&e, 2, 3).unwrap();
    let a = hyps.iter().find(|h| h.tokens == vec![SIL, 2, SIL]).unwrap();
    let sum = [(-0.5f64 - 0.9), (-0.5 - 0.8), (-1.0 - 0.9), (-3.0 - 0.9)]
        .iter()
        .map(|v| v.exp())
        .sum::<f64>()
        .ln();
    close(a.score, sum, 1e-6);
    // without log_add: the best single path
    let d = CtcDecoder::new(
        None,
        Dictionary::parse_tokens("-\n|\na\n").unwrap(),
        None,
        &CtcDecoderOptions {
            nbest: 10,
            ..Default::default()
        },
    )
    .unwrap();
    let hyps = d.decode(&e, 2, 3).unwrap();
    let a = hyps.iter().find(|h| h.tokens == vec![SIL, 2, SIL]).unwrap();
    close(a.score, -1.3, 1e-6);
    assert!(hyps.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn beam_size_and_nbest_limit_the_output() {
    let e = random_emissions(3, 6, 5);
    let opts = CtcDecoderOptions {
        nbest: 3,
        beam_size: 2,
        ..Default::default()
    };
    let d = decoder(None, &opts);
    let raw = d.decode_raw(&e, 6, 5);
    assert!(raw.len() <= 2);
    assert_eq!(raw[0].tokens.len(), 8);
    let opts = CtcDecoderOptions {
        nbest: 3,
        ..Default::default()
    };
    let d = decoder(None, &opts);
    assert_eq!(d.decode(&e, 6, 5).unwrap().len(), 3);
}

#[test]
fn batch_decoding_equals_one_by_one() {
    let (batch, frames) = (6, 9);
    let e: Vec<f32> = (0..batch)
        .flat_map(|b| random_emissions(40 + b as u64, frames, 5))
        .collect();
    let lengths: Vec<usize> = (0..batch).map(|b| frames - b).collect();
    let opts = CtcDecoderOptions {
        nbest: 2,
        lm_weight: 1.0,
        ..Default::default()
    };
    let d = decoder(Some(WORD_ARPA), &opts);
    let all = d
        .decode_batch(&e, batch, frames, 5, Some(&lengths))
        .unwrap();
    for b in 0..batch {
        let one = d.decode(&e[b * frames * 5..], lengths[b], 5).unwrap();
        assert_eq!(all[b], one);
    }
    assert!(d.decode_batch(&e, batch, frames, 5, Some(&[1, 2])).is_err());
    assert!(d.decode(&e, frames, 4).is_err());
}

#[test]
fn custom_language_models_plug_in() {
    let lexicon = Lexicon::parse(LEXICON).unwrap();
    let words = lexicon.word_dictionary();
    let tokens = Dictionary::parse_tokens(TOKENS).unwrap();
    let d = CtcDecoder::with_lm(
        Some(&lexicon),
        tokens,
        Some(words),
        ZeroLm,
        &CtcDecoderOptions::default(),
    )
    .unwrap();
    let e = peaked(&[C, SIL], 5, -0.1, -4.0);
    assert_eq!(d.decode(&e, 2, 5).unwrap()[0].words, vec!["c"]);
}

#[test]
fn missing_special_tokens_are_reported() {
    let tokens = Dictionary::parse_tokens("a\nb\n").unwrap();
    assert!(CtcDecoder::new(None, tokens, None, &CtcDecoderOptions::default()).is_err());
    let lexicon = Lexicon::parse("x x z |\n").unwrap();
    let tokens = Dictionary::parse_tokens(TOKENS).unwrap();
    assert!(CtcDecoder::new(Some(&lexicon), tokens, None, &CtcDecoderOptions::default()).is_err());
}

/// Exhaustive lexicon-free n-best: every path's score grouped by its LM history (the final
/// search state), max-merged or log-added.
fn exhaustive_nbest(lm: &ArpaLm, e: &[f32], frames: usize, n: usize, o: &BeamOptions) -> Vec<f64> {
    let mut groups: std::collections::HashMap<Vec<usize>, f64> = Default::default();
    for code in 0..n.pow(frames as u32) {
        let mut c = code;
        let (mut score, mut state, mut history) = (0.0, lm.start(false), Vec::new());
        let (mut prev, mut prev_blank) = (SIL, false);
        for t in 0..frames {
            let k = c % n;
            c /= n;
            score += e[t * n + k] as f64 + if k == SIL { o.sil_score } else { 0.0 };
            if k != BLANK && (k != prev || prev_blank) {
                let (st, s) = lm.score(&state, k);
                score += o.lm_weight * s as f64;
                state = st;
                history.push(k);
            }
            prev_blank = k == BLANK;
            prev = k;
        }
        score += o.lm_weight * lm.finish(&state).1 as f64;
        let slot = groups.entry(history).or_insert(f64::NEG_INFINITY);
        *slot = if o.log_add {
            crate::trie::log_add(*slot, score)
        } else {
            slot.max(score)
        };
    }
    let mut scores: Vec<f64> = groups.into_values().collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    scores
}

#[test]
fn lexicon_free_nbest_matches_exhaustive_grouping() {
    for (seed, log_add) in [(1u64, false), (2, true), (3, false), (4, true)] {
        let frames = 5;
        let e = random_emissions(500 + seed, frames, 5);
        let opts = CtcDecoderOptions {
            lm_weight: 0.7,
            sil_score: 0.1,
            log_add,
            nbest: 1000,
            beam_size: 100_000,
            beam_threshold: 1e9,
            ..Default::default()
        };
        let tokens = Dictionary::parse_tokens(TOKENS).unwrap();
        let model = Arc::new(ArpaModel::parse(TOKEN_ARPA).unwrap());
        let d = CtcDecoder::new(None, tokens, Some(model), &opts).unwrap();
        let got: Vec<f64> = d
            .decode(&e, frames, 5)
            .unwrap()
            .iter()
            .map(|h| h.score)
            .collect();
        let DecoderLm::Arpa(lm) = &d.lm else { panic!() };
        let want = exhaustive_nbest(lm, &e, frames, 5, &d.beam);
        assert_eq!(got.len(), want.len(), "seed {seed}");
        for (g, w) in got.iter().zip(&want) {
            close(*g, *w, 1e-9);
        }
    }
}

#[test]
fn pruning_keeps_the_beam_within_bounds_and_the_threshold() {
    let e = random_emissions(77, 30, 5);
    for (beam_size, threshold) in [(1usize, 50.0), (3, 50.0), (50, 0.5)] {
        let opts = CtcDecoderOptions {
            beam_size,
            beam_threshold: threshold,
            beam_size_token: Some(3),
            nbest: 100,
            lm_weight: 1.0,
            ..Default::default()
        };
        let d = decoder(Some(WORD_ARPA), &opts);
        let hyps = d.decode(&e, 30, 5).unwrap();
        assert!(!hyps.is_empty() && hyps.len() <= beam_size);
        assert!(hyps.iter().all(|h| h.score >= hyps[0].score - threshold));
        assert!(hyps.windows(2).all(|w| w[0].score >= w[1].score));
    }
}

/// A model whose states all share one identity: every hypothesis with the same trie node,
/// token and blank flag merges, whatever words it read (Flashlight would do the same when an
/// LM returns one state object for everything).
struct OneStateLm;

impl LanguageModel for OneStateLm {
    type State = ();
    fn start(&self, _: bool) {}
    fn score(&self, _: &(), _: usize) -> ((), f32) {
        ((), 0.0)
    }
    fn finish(&self, _: &()) -> ((), f32) {
        ((), 0.0)
    }
    fn state_identity(&self, _: &()) -> Option<u64> {
        Some(7)
    }
}

#[test]
fn state_identity_controls_merging() {
    let e = random_emissions(9, 6, 5);
    let opts = CtcDecoderOptions {
        nbest: 1000,
        beam_size: 100_000,
        beam_threshold: 1e9,
        ..Default::default()
    };
    let tokens = || Dictionary::parse_tokens(TOKENS).unwrap();
    let by_history = CtcDecoder::with_lm(None, tokens(), None, ZeroLm, &opts).unwrap();
    let by_identity = CtcDecoder::with_lm(None, tokens(), None, OneStateLm, &opts).unwrap();
    let many = by_history.decode(&e, 6, 5).unwrap();
    let one = by_identity.decode(&e, 6, 5).unwrap();
    // After `finish` every hypothesis has token |, no blank: one state when identities merge.
    assert_eq!(one.len(), 1);
    assert!(many.len() > 1);
    close(one[0].score, many[0].score, 1e-9);
}

#[test]
fn reused_buffers_leave_no_trace_between_utterances() {
    // Each thread keeps its search buffers between utterances: a long utterance, then a short
    // one, then the long one again must decode exactly as on fresh buffers.
    let options = CtcDecoderOptions {
        beam_size: 8,
        nbest: 3,
        ..Default::default()
    };
    let d = decoder(Some(WORD_ARPA), &options);
    let long = random_emissions(7, 40, 5);
    let short = random_emissions(8, 3, 5);
    let first = d.decode_raw(&long, 40, 5);
    let between = d.decode_raw(&short, 3, 5);
    assert_eq!(d.decode_raw(&long, 40, 5), first);
    let fresh = std::thread::spawn(move || {
        let d = decoder(Some(WORD_ARPA), &options);
        d.decode_raw(&short, 3, 5)
    });
    assert_eq!(fresh.join().unwrap(), between);
    assert!(first
        .iter()
        .all(|r| r.tokens.len() == 42 && r.words.len() == 42));
}
