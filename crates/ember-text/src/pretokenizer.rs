//! BertPreTokenizer: words end at whitespace (which is dropped) and every punctuation character
//! is a word of its own.
use crate::unicode::is_bert_punctuation;

/// Calls `word(start, end)` with the byte range of each word of `text`, in order.
pub fn for_each_word(text: &str, mut word: impl FnMut(usize, usize)) {
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if let Some(s) = start.take() {
                word(s, i);
            }
        } else if is_bert_punctuation(c) {
            if let Some(s) = start.take() {
                word(s, i);
            }
            word(i, i + c.len_utf8());
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        word(s, text.len());
    }
}
