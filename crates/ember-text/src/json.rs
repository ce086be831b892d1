//! Loading HuggingFace `tokenizer.json` files whose model is WordPiece.
use crate::encoding::{Padding, Side, Truncation, TruncationStrategy};
use crate::error::{Error, Result};
use crate::normalizer::BertNormalizer;
use crate::protected::Protected;
use crate::tokenizer::BertTokenizer;
use crate::vocab::Vocab;
use crate::wordpiece::WordPiece;
use serde_json::Value;
use std::path::Path;

fn invalid(what: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("tokenizer.json: {what}"))
}

fn str_field<'a>(v: &'a Value, key: &str, default: &'a str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or(default)
}

fn bool_field(v: &Value, key: &str, default: bool) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(default)
}

fn usize_field(v: &Value, key: &str) -> Option<usize> {
    v.get(key).and_then(Value::as_u64).map(|n| n as usize)
}

impl BertTokenizer {
    /// From a HuggingFace `tokenizer.json` of a BERT WordPiece model: its vocabulary, normaliser
    /// options, special tokens, truncation and padding.
    pub fn from_tokenizer_json(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        Self::from_json_str(&text).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
    }

    /// `from_tokenizer_json` on the file's text.
    pub fn from_json_str(text: &str) -> Result<Self> {
        let root: Value = serde_json::from_str(text).map_err(|e| invalid(format!("not valid JSON ({e})")))?;
        let model = root.get("model").ok_or_else(|| invalid("no 'model'"))?;
        let kind = str_field(model, "type", "");
        if kind != "WordPiece" {
            return Err(invalid(format!("model type is '{kind}', only WordPiece is supported")));
        }
        check_pre_tokenizer(&root)?;
        let added = added_tokens(&root)?;
        let prefix = str_field(model, "continuing_subword_prefix", "##").to_string();
        let vocab = Vocab::new(vocab_entries(model)?.chain(added.iter().map(|(t, id, _)| (t.clone(), *id))), &prefix);
        let unk = str_field(model, "unk_token", "[UNK]");
        let unk_id = vocab.get(unk).ok_or_else(|| invalid(format!("the vocabulary has no unknown token '{unk}'")))?;
        let mut protected = Protected::default();
        for (token, id, _) in &added {
            protected.add(token, *id, false);
        }
        let special_ids = added.iter().filter(|a| a.2).map(|a| a.1).collect();
        let cls_sep = cls_sep(&root, &vocab);
        let model = WordPiece {
            vocab,
            unk_id,
            prefix,
            max_input_chars_per_word: usize_field(model, "max_input_chars_per_word").unwrap_or(100),
        };
        let mut tokenizer = BertTokenizer::from_parts(normalizer(&root)?, model, protected, special_ids, cls_sep);
        tokenizer.truncation = truncation(&root)?;
        tokenizer.padding = padding(&root);
        Ok(tokenizer)
    }
}

fn vocab_entries(model: &Value) -> Result<impl Iterator<Item = (String, u32)> + '_> {
    let vocab = model.get("vocab").and_then(Value::as_object).ok_or_else(|| invalid("model.vocab is not an object"))?;
    if let Some((t, _)) = vocab.iter().find(|(_, id)| id.as_u64().filter(|&id| id <= u32::MAX as u64).is_none()) {
        return Err(invalid(format!("the id of vocabulary token '{t}' is not a non-negative integer")));
    }
    Ok(vocab.iter().map(|(t, id)| (t.clone(), id.as_u64().unwrap_or_default() as u32)))
}

/// (content, id, special) of each added token.
fn added_tokens(root: &Value) -> Result<Vec<(String, u32, bool)>> {
    let Some(list) = root.get("added_tokens").and_then(Value::as_array) else { return Ok(Vec::new()) };
    list.iter()
        .map(|t| {
            let content = t.get("content").and_then(Value::as_str).ok_or_else(|| invalid("an added token has no 'content'"))?;
            let id = usize_field(t, "id").ok_or_else(|| invalid(format!("added token '{content}' has no id")))?;
            Ok((content.to_string(), id as u32, bool_field(t, "special", false)))
        })
        .collect()
}

fn normalizer(root: &Value) -> Result<BertNormalizer> {
    match root.get("normalizer") {
        None | Some(Value::Null) => Ok(BertNormalizer { clean_text: false, handle_chinese_chars: false, strip_accents: false, lowercase: false }),
        Some(n) if str_field(n, "type", "") == "BertNormalizer" => {
            let lowercase = bool_field(n, "lowercase", true);
            Ok(BertNormalizer {
                clean_text: bool_field(n, "clean_text", true),
                handle_chinese_chars: bool_field(n, "handle_chinese_chars", true),
                strip_accents: n.get("strip_accents").and_then(Value::as_bool).unwrap_or(lowercase),
                lowercase,
            })
        }
        Some(n) => Err(invalid(format!("normalizer '{}' is not supported (only BertNormalizer)", str_field(n, "type", "?")))),
    }
}

fn check_pre_tokenizer(root: &Value) -> Result<()> {
    match root.get("pre_tokenizer") {
        Some(p) if !p.is_null() && str_field(p, "type", "") != "BertPreTokenizer" => {
            Err(invalid(format!("pre_tokenizer '{}' is not supported (only BertPreTokenizer)", str_field(p, "type", "?"))))
        }
        _ => Ok(()),
    }
}

/// [CLS] and [SEP] from a BertProcessing post-processor, else by their usual names.
fn cls_sep(root: &Value, vocab: &Vocab) -> (Option<u32>, Option<u32>) {
    let pair = |key: &str, default: &str| {
        let p = root.get("post_processor").and_then(|p| p.get(key));
        let token = p.and_then(|p| p.get(0)).and_then(Value::as_str).unwrap_or(default);
        vocab.get(token)
    };
    (pair("cls", "[CLS]"), pair("sep", "[SEP]"))
}

fn side(v: &Value) -> Side {
    if str_field(v, "direction", "Right") == "Left" {
        Side::Left
    } else {
        Side::Right
    }
}

fn truncation(root: &Value) -> Result<Option<Truncation>> {
    let Some(t) = root.get("truncation").filter(|t| !t.is_null()) else { return Ok(None) };
    let strategy = match str_field(t, "strategy", "LongestFirst") {
        "LongestFirst" => TruncationStrategy::LongestFirst,
        "OnlyFirst" => TruncationStrategy::OnlyFirst,
        "OnlySecond" => TruncationStrategy::OnlySecond,
        other => return Err(invalid(format!("unknown truncation strategy '{other}'"))),
    };
    Ok(Some(Truncation { max_length: usize_field(t, "max_length").unwrap_or(512), strategy, side: side(t) }))
}

fn padding(root: &Value) -> Option<Padding> {
    let p = root.get("padding").filter(|p| !p.is_null())?;
    let length = p.get("strategy").and_then(|s| s.get("Fixed")).and_then(Value::as_u64).map(|n| n as usize);
    Some(Padding {
        length,
        pad_to_multiple_of: usize_field(p, "pad_to_multiple_of"),
        pad_id: usize_field(p, "pad_id").unwrap_or(0) as u32,
        pad_type_id: usize_field(p, "pad_type_id").unwrap_or(0) as u32,
        pad_token: str_field(p, "pad_token", "[PAD]").to_string(),
        side: side(p),
    })
}
