//! Character classes of the BERT pipeline, as HuggingFace `tokenizers` defines them.
use unicode_categories::UnicodeCategories;

/// Whitespace for the normaliser's cleaning step: tab, newline and carriage return count as
/// whitespace although they are control characters.
pub fn is_clean_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Characters the cleaning step removes: NUL, U+FFFD and the "other" categories of
/// `unicode_categories` (Cc, Cf, Co; unassigned code points are kept), except the three control
/// characters treated as whitespace.
pub fn is_removed_by_cleaning(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => false,
        '\0' | '\u{fffd}' => true,
        _ => c.is_other(),
    }
}

/// The CJK ideograph blocks that BERT surrounds with spaces (Hangul, kana and other scripts
/// are not included: they separate words with spaces already).
pub fn is_chinese_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

/// BERT's punctuation: all of ASCII's symbols (`$`, `+`, `^` ... are symbols in Unicode but
/// punctuation here) plus every Unicode P* category.
pub fn is_bert_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_ascii() && c.is_punctuation())
}

/// Nonspacing marks (Mn): what stripping accents removes after canonical decomposition.
pub fn is_nonspacing_mark(c: char) -> bool {
    c.is_mark_nonspacing()
}
