//! Lexicon-free CTC beam search (Flashlight's `LexiconFreeDecoder`): any token sequence is
//! allowed, and the LM (if any) scores tokens.

use super::beam::{top_tokens, Hyp, NO_PARENT};
use super::lm_cache::LmCache;
use super::{BeamOptions, DecodeResult};
use crate::lm::LanguageModel;

/// The search, borrowing its LM (a token-level one: word index = token index).
pub struct LexiconFreeDecoder<'a, L: LanguageModel> {
    /// `word_score` and `unk_score` are unused here.
    pub options: BeamOptions,
    /// The token-level language model.
    pub lm: &'a L,
    /// Index of the silence token.
    pub silence: usize,
    /// Index of the CTC blank.
    pub blank: usize,
}

impl<'a, L: LanguageModel> LexiconFreeDecoder<'a, L> {
    /// Decode `frames` rows of `num_tokens` emissions (row-major); every final hypothesis,
    /// best first.
    pub fn decode(&self, emissions: &[f32], frames: usize, num_tokens: usize) -> Vec<DecodeResult> {
        assert!(
            emissions.len() >= frames * num_tokens,
            "emissions shorter than frames * tokens"
        );
        let o = &self.options;
        super::beam::with_scratch(o, frames, |s| {
            let mut lm = LmCache::new(self.lm, std::mem::take(&mut s.lm_edges));
            s.prev.push(Hyp {
                score: 0.0,
                lm_state: 0,
                lex: 0,
                parent: NO_PARENT,
                token: self.silence as i32,
                word: -1,
                prev_blank: false,
                am_score: 0.0,
                lm_score: 0.0,
            });
            s.history.push_frame(&s.prev);
            for t in 0..frames {
                let frame = &emissions[t * num_tokens..(t + 1) * num_tokens];
                top_tokens(frame, o.beam_size_token, &mut s.order);
                s.candidates.reset();
                for (index, prev) in s.prev.iter().enumerate() {
                    for &n in &s.order {
                        s.candidates
                            .add(self.extend(&mut lm, index as u32, prev, n, frame[n]));
                    }
                }
                s.candidates
                    .store(&mut s.next, o.beam_size, o.log_add, false);
                s.history.push_frame(&s.next);
                std::mem::swap(&mut s.prev, &mut s.next);
            }
            s.candidates.reset();
            for (index, prev) in s.prev.iter().enumerate() {
                let (lm_state, score) = lm.finish(prev.lm_state);
                let score = score as f64;
                s.candidates.add(Hyp {
                    score: prev.score + o.lm_weight * score,
                    lm_state,
                    parent: index as u32,
                    token: self.silence as i32,
                    prev_blank: false,
                    lm_score: prev.lm_score + score,
                    ..*prev
                });
            }
            s.candidates
                .store(&mut s.next, o.beam_size, o.log_add, true);
            s.history.push_frame(&s.next);
            super::collect_results(&s.history, &s.next)
        })
    }

    /// The candidate for emitting token `n` after `prev`: a new token is scored by the LM, a
    /// blank or a CTC repeat is not.
    fn extend(
        &self,
        lm: &mut LmCache<'a, L>,
        parent: u32,
        prev: &Hyp,
        n: usize,
        emission: f32,
    ) -> Hyp {
        let am = emission as f64;
        let mut score = prev.score + am;
        if n == self.silence {
            score += self.options.sil_score;
        }
        let base = Hyp {
            score,
            parent,
            token: n as i32,
            prev_blank: false,
            am_score: prev.am_score + am,
            ..*prev
        };
        if n == self.blank {
            return Hyp {
                prev_blank: true,
                ..base
            };
        }
        if n as i32 != prev.token || prev.prev_blank {
            let (lm_state, lm_score) = lm.score(prev.lm_state, n);
            let lm_score = lm_score as f64;
            return Hyp {
                score: score + self.options.lm_weight * lm_score,
                lm_state,
                lm_score: prev.lm_score + lm_score,
                ..base
            };
        }
        base
    }
}
