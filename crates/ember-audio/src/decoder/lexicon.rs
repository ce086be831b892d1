//! Lexicon-constrained CTC beam search (Flashlight's `LexiconDecoder`, CTC criterion,
//! word-level LM).
//!
//! A hypothesis sits on a trie node; each frame it may (1) step to a child by a token, which
//! either stays inside a word (scored with the smeared look-ahead) or completes a word (scored
//! by the LM, minus the look-ahead already paid), (2) repeat its last token, or (3) emit blank.
//! Unknown words are proposed at trie nodes without words when `unk_score` is finite.

use super::beam::{top_tokens, Candidates, Hyp, NO_PARENT};
use super::lm_cache::LmCache;
use super::{BeamOptions, DecodeResult};
use crate::lm::LanguageModel;
use crate::trie::{Trie, ROOT};

/// The search, borrowing its trie and LM; cheap to build, reusable, shareable across threads.
pub struct LexiconDecoder<'a, L: LanguageModel> {
    /// Beam widths, thresholds and score terms.
    pub options: BeamOptions,
    /// The lexicon trie.
    pub trie: &'a Trie,
    /// The word-level language model.
    pub lm: &'a L,
    /// Index of the silence token.
    pub silence: usize,
    /// Index of the CTC blank.
    pub blank: usize,
    /// Word index proposed for out-of-lexicon spellings.
    pub unk_word: usize,
}

/// Per-call working state.
struct Search<'d, 'a, L: LanguageModel> {
    d: &'d LexiconDecoder<'a, L>,
    lm: LmCache<'a, L>,
}

impl<'a, L: LanguageModel> LexiconDecoder<'a, L> {
    /// Decode `frames` rows of `num_tokens` emissions (row-major); returns every final
    /// hypothesis, best first.
    pub fn decode(&self, emissions: &[f32], frames: usize, num_tokens: usize) -> Vec<DecodeResult> {
        assert!(
            emissions.len() >= frames * num_tokens,
            "emissions shorter than frames * tokens"
        );
        super::beam::with_scratch(&self.options, frames, |s| {
            let mut search = Search {
                d: self,
                lm: LmCache::new(self.lm, std::mem::take(&mut s.lm_edges)),
            };
            s.prev.push(initial_hyp(self.silence));
            s.history.push_frame(&s.prev);
            for t in 0..frames {
                let frame = &emissions[t * num_tokens..(t + 1) * num_tokens];
                top_tokens(frame, self.options.beam_size_token, &mut s.order);
                search.step(&mut s.candidates, &s.prev, frame, &s.order, &mut s.next);
                s.history.push_frame(&s.next);
                std::mem::swap(&mut s.prev, &mut s.next);
            }
            search.finish(&mut s.candidates, &s.prev, &mut s.next);
            s.history.push_frame(&s.next);
            s.lm_edges = search.lm.into_edges();
            super::collect_results(&s.history, &s.next)
        })
    }
}

fn initial_hyp(silence: usize) -> Hyp {
    Hyp {
        score: 0.0,
        lm_state: 0,
        lex: ROOT,
        parent: NO_PARENT,
        token: silence as i32,
        word: -1,
        prev_blank: false,
        am_score: 0.0,
        lm_score: 0.0,
    }
}

impl<'d, 'a, L: LanguageModel> Search<'d, 'a, L> {
    fn step(
        &mut self,
        candidates: &mut Candidates,
        prev_hyps: &[Hyp],
        frame: &[f32],
        order: &[usize],
        out: &mut Vec<Hyp>,
    ) {
        candidates.reset();
        for (index, prev) in prev_hyps.iter().enumerate() {
            self.propose_children(candidates, index as u32, prev, frame, order);
            self.propose_repeat(candidates, index as u32, prev, frame);
            self.propose_blank(candidates, index as u32, prev, frame);
        }
        let o = &self.d.options;
        candidates.store(out, o.beam_size, o.log_add, false);
    }

    /// (1) Extend by every allowed token that has a child in the trie.
    fn propose_children(
        &mut self,
        candidates: &mut Candidates,
        parent: u32,
        prev: &Hyp,
        frame: &[f32],
        order: &[usize],
    ) {
        let d = self.d;
        let o = &d.options;
        let prev_node = d.trie.node(prev.lex);
        let at_root = prev.lex == ROOT;
        let lex_max: f32 = if at_root { 0.0 } else { prev_node.max_score };
        for &n in order {
            let Some(child_id) = prev_node.child(n) else {
                continue;
            };
            let child = d.trie.node(child_id);
            let am = frame[n] as f64;
            let mut score = prev.score + am;
            if n == d.silence {
                score += o.sil_score;
            }
            let base = Hyp {
                score,
                lm_state: prev.lm_state,
                lex: child_id,
                parent,
                token: n as i32,
                word: -1,
                prev_blank: false,
                am_score: prev.am_score + am,
                lm_score: prev.lm_score,
            };
            // A new token (CTC: not a repeat of the last one unless a blank separated them).
            if (prev.prev_blank || n as i32 != prev.token) && child.has_children() {
                let lm = (child.max_score - lex_max) as f64;
                candidates.add(Hyp {
                    score: score + o.lm_weight * lm,
                    lm_score: prev.lm_score + lm,
                    ..base
                });
            }
            // Words ending at the child. (Flashlight applies no repeat check here beyond the
            // root case below; kept as is for parity.)
            for &label in &child.labels {
                if at_root && prev.token == n as i32 {
                    continue;
                }
                self.propose_word(candidates, base, prev, label, lex_max, o.word_score);
            }
            if child.labels.is_empty() && o.unk_score > f64::NEG_INFINITY {
                self.propose_word(candidates, base, prev, d.unk_word, lex_max, o.unk_score);
            }
        }
    }

    /// A word completed by `base`'s token: LM score minus the look-ahead already counted.
    fn propose_word(
        &mut self,
        candidates: &mut Candidates,
        base: Hyp,
        prev: &Hyp,
        word: usize,
        lex_max: f32,
        bonus: f64,
    ) {
        let (lm_state, raw) = self.lm.score(prev.lm_state, word);
        let lm = (raw - lex_max) as f64;
        candidates.add(Hyp {
            score: base.score + self.d.options.lm_weight * lm + bonus,
            lm_state,
            lex: ROOT,
            word: word as i32,
            lm_score: prev.lm_score + lm,
            ..base
        });
    }

    /// (2) Stay on the same trie node by repeating the last token (silence at the root).
    fn propose_repeat(&self, candidates: &mut Candidates, parent: u32, prev: &Hyp, frame: &[f32]) {
        let d = self.d;
        let at_root = prev.lex == ROOT;
        if prev.prev_blank && !at_root {
            return;
        }
        let n = if at_root {
            d.silence
        } else {
            prev.token as usize
        };
        let am = frame[n] as f64;
        let mut score = prev.score + am;
        if n == d.silence {
            score += d.options.sil_score;
        }
        candidates.add(Hyp {
            score,
            parent,
            token: n as i32,
            word: -1,
            prev_blank: false,
            am_score: prev.am_score + am,
            ..*prev
        });
    }

    /// (3) Emit blank.
    fn propose_blank(&self, candidates: &mut Candidates, parent: u32, prev: &Hyp, frame: &[f32]) {
        let n = self.d.blank;
        let am = frame[n] as f64;
        candidates.add(Hyp {
            score: prev.score + am,
            parent,
            token: n as i32,
            word: -1,
            prev_blank: true,
            am_score: prev.am_score + am,
            ..*prev
        });
    }

    /// End of utterance: add the sentence-end LM score; if some hypothesis is between words,
    /// only those may finish.
    fn finish(&mut self, candidates: &mut Candidates, prev_hyps: &[Hyp], out: &mut Vec<Hyp>) {
        candidates.reset();
        let nice_ending = prev_hyps.iter().any(|h| h.lex == ROOT);
        for (index, prev) in prev_hyps.iter().enumerate() {
            if nice_ending && prev.lex != ROOT {
                continue;
            }
            let (lm_state, lm) = self.lm.finish(prev.lm_state);
            let lm = lm as f64;
            candidates.add(Hyp {
                score: prev.score + self.d.options.lm_weight * lm,
                lm_state,
                parent: index as u32,
                token: self.d.silence as i32,
                word: -1,
                prev_blank: false,
                lm_score: prev.lm_score + lm,
                ..*prev
            });
        }
        let o = &self.d.options;
        candidates.store(out, o.beam_size, o.log_add, true);
    }
}
