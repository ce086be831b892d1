//! Encodings and what happens to them after WordPiece: truncation, the [CLS]/[SEP] frame,
//! padding. The rules and their edge cases follow HuggingFace `tokenizers`.
use crate::error::{Error, Result};

/// One encoded input. Offsets are (start, end) character indices into the original string;
/// special and padding tokens have (0, 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Encoding {
    /// Token ids.
    pub ids: Vec<u32>,
    /// Segment of each token: 0 for the first input, 1 for the second.
    pub type_ids: Vec<u32>,
    /// (start, end) character indices of each token in the original string.
    pub offsets: Vec<(u32, u32)>,
    /// 1 for `[CLS]`, `[SEP]` and padding, 0 for the input's own tokens.
    pub special_tokens_mask: Vec<u32>,
    /// 1 for real tokens, 0 for padding.
    pub attention_mask: Vec<u32>,
}

impl Encoding {
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub(crate) fn push(&mut self, id: u32, type_id: u32, offsets: (u32, u32), special: bool, attend: bool) {
        self.ids.push(id);
        self.type_ids.push(type_id);
        self.offsets.push(offsets);
        self.special_tokens_mask.push(special as u32);
        self.attention_mask.push(attend as u32);
    }

    /// Keeps `len` tokens, dropping the rest from the end (or the start, for `Side::Left`).
    pub fn truncate(&mut self, len: usize, side: Side) {
        if len >= self.len() {
            return;
        }
        let cut = self.len() - len;
        match side {
            Side::Right => self.for_each_field(|v| v.truncate(len), |v| v.truncate(len)),
            Side::Left => self.for_each_field(|v| drop(v.drain(..cut)), |v| drop(v.drain(..cut))),
        }
    }

    fn for_each_field(&mut self, mut f: impl FnMut(&mut Vec<u32>), mut g: impl FnMut(&mut Vec<(u32, u32)>)) {
        f(&mut self.ids);
        f(&mut self.type_ids);
        f(&mut self.special_tokens_mask);
        f(&mut self.attention_mask);
        g(&mut self.offsets);
    }

    /// Pads to `len` tokens with `pad`; an encoding already that long is left alone.
    pub fn pad(&mut self, len: usize, pad: &Padding) {
        if self.len() >= len {
            return;
        }
        let n = len - self.len();
        let mut padding = Encoding::default();
        for _ in 0..n {
            padding.push(pad.pad_id, pad.pad_type_id, (0, 0), true, false);
        }
        match pad.side {
            Side::Right => self.append(padding),
            Side::Left => {
                padding.append(std::mem::take(self));
                *self = padding;
            }
        }
    }

    pub(crate) fn append(&mut self, other: Encoding) {
        self.ids.extend(other.ids);
        self.type_ids.extend(other.type_ids);
        self.offsets.extend(other.offsets);
        self.special_tokens_mask.extend(other.special_tokens_mask);
        self.attention_mask.extend(other.attention_mask);
    }
}

/// Which end truncation cuts from or padding adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Side {
    /// The start.
    Left,
    /// The end (the default).
    #[default]
    Right,
}

/// How a pair of inputs is shortened to `max_length`, named as HuggingFace names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TruncationStrategy {
    /// Shorten the longer of the pair first (both to about half when both are long).
    #[default]
    LongestFirst,
    /// Shorten only the first input.
    OnlyFirst,
    /// Shorten only the second input.
    OnlySecond,
}

impl TruncationStrategy {
    /// From HuggingFace's name: `longest_first`, `only_first`, `only_second`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "longest_first" => Self::LongestFirst,
            "only_first" => Self::OnlyFirst,
            "only_second" => Self::OnlySecond,
            _ => return None,
        })
    }
}

/// Truncation settings, as `tokenizer.enable_truncation` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncation {
    /// Length of the final encoding, special tokens included.
    pub max_length: usize,
    /// Which input of a pair loses tokens.
    pub strategy: TruncationStrategy,
    /// Which end tokens are cut from.
    pub side: Side,
}

/// Padding settings, as `tokenizer.enable_padding` takes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Padding {
    /// `None` pads a batch to its longest encoding.
    pub length: Option<usize>,
    /// Round the padded length up to a multiple of this.
    pub pad_to_multiple_of: Option<usize>,
    /// Id of the padding token.
    pub pad_id: u32,
    /// Segment id given to padding.
    pub pad_type_id: u32,
    /// The padding token's text.
    pub pad_token: String,
    /// Which end padding goes to.
    pub side: Side,
}

impl Padding {
    /// The length every encoding of a batch whose longest has `longest` tokens is padded to.
    pub fn target(&self, longest: usize) -> usize {
        let len = self.length.unwrap_or(longest);
        match self.pad_to_multiple_of {
            Some(m) if m > 0 => len.div_ceil(m) * m,
            _ => len,
        }
    }
}

/// Truncates a sequence (and its pair) so that, with `reserved` special tokens added, the
/// result fits `t.max_length`.
pub fn truncate(first: &mut Encoding, second: Option<&mut Encoding>, t: &Truncation, reserved: usize) -> Result<()> {
    let max = t.max_length.checked_sub(reserved).ok_or_else(|| {
        Error::Value(format!("truncation max_length ({}) is shorter than the {reserved} special tokens added", t.max_length))
    })?;
    let total = first.len() + second.as_ref().map_or(0, |s| s.len());
    if max == 0 {
        // Nothing fits: every strategy empties both sequences (HF does not raise here).
        first.truncate(0, t.side);
        if let Some(second) = second {
            second.truncate(0, t.side);
        }
        return Ok(());
    }
    if total <= max {
        return Ok(());
    }
    match (t.strategy, second) {
        (TruncationStrategy::LongestFirst, None) => first.truncate(max, t.side),
        (TruncationStrategy::LongestFirst, Some(second)) => {
            let (n1, n2) = longest_first_lengths(first.len(), second.len(), max);
            first.truncate(n1, t.side);
            second.truncate(n2, t.side);
        }
        (TruncationStrategy::OnlyFirst, _) => shorten_by(first, total - max, t.side)?,
        (TruncationStrategy::OnlySecond, Some(second)) => shorten_by(second, total - max, t.side)?,
        (TruncationStrategy::OnlySecond, None) => {
            return Err(Error::Value("truncation strategy 'only_second' needs a second sequence".into()))
        }
    }
    Ok(())
}

/// The shorter sequence keeps all it can; when both exceed half, they split `max` evenly,
/// the odd token going to the longer one.
fn longest_first_lengths(n1: usize, n2: usize, max: usize) -> (usize, usize) {
    let short = n1.min(n2);
    let (mut s, mut l) = (short, if short > max { short } else { short.max(max - short) });
    if s + l > max {
        s = max / 2;
        l = s + max % 2;
    }
    if n1 > n2 {
        (l, s)
    } else {
        (s, l)
    }
}

fn shorten_by(e: &mut Encoding, remove: usize, side: Side) -> Result<()> {
    if e.len() <= remove {
        return Err(Error::Value(format!(
            "truncation: the sequence to truncate has {} tokens, too few to remove the {remove} needed to reach max_length",
            e.len()
        )));
    }
    let keep = e.len() - remove;
    e.truncate(keep, side);
    Ok(())
}
