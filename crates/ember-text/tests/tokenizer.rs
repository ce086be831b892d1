//! Edge cases of the normaliser, pre-tokeniser, WordPiece, truncation, padding and decoding.
//! The expected values are what HuggingFace `tokenizers` produces for the same inputs.
use ember_text::*;

const VOCAB: &str = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n!\n,\n?\n.\nhow\nare\nyou\nun\n##aff\n##able\n\
                     cafe\ncafé\n中\n文\n##s\na\n##b\n##c\n'\nt\ndon\n";

fn tokenizer(lowercase: bool, strip_accents: Option<bool>) -> BertTokenizer {
    let options = Options { normalizer: BertNormalizer::new(lowercase, strip_accents), ..Options::default() };
    BertTokenizer::new(Vocab::from_lines(VOCAB, "##"), &options).unwrap()
}

fn tokens(t: &BertTokenizer, text: &str) -> Vec<String> {
    let e = t.encode(text, None, false).unwrap();
    t.tokens(&e).into_iter().map(String::from).collect()
}

fn normalize(n: BertNormalizer, text: &str) -> (String, Vec<u32>) {
    let mut out = Normalized::default();
    n.normalize(text, 0, &mut out);
    (out.text, out.origin)
}

#[test]
fn cleaning_removes_controls_and_maps_whitespace() {
    let n = BertNormalizer::new(false, Some(false));
    assert_eq!(normalize(n, "a\u{0}b\u{fffd}c\u{200b}d\u{7}e").0, "abcde");
    assert_eq!(normalize(n, "a\tb\nc\rd\u{3000}e\u{a0}f").0, "a b c d e f");
    // Private-use characters are removed; unassigned ones are kept, as in `tokenizers`.
    assert_eq!(normalize(n, "x\u{e000}y\u{10ffff}z").0, "xy\u{10ffff}z");
}

#[test]
fn chinese_characters_are_spaced_and_keep_their_origin() {
    let (text, origin) = normalize(BertNormalizer::new(true, None), "a中b");
    assert_eq!(text, "a 中 b");
    assert_eq!(origin, [0, 1, 1, 1, 1, 1, 2]);
}

#[test]
fn accents_strip_with_lowercase_unless_told_otherwise() {
    assert_eq!(normalize(BertNormalizer::new(true, None), "Café Ñ").0, "cafe n");
    assert_eq!(normalize(BertNormalizer::new(true, Some(false)), "Café").0, "café");
    assert_eq!(normalize(BertNormalizer::new(false, None), "Café").0, "Café");
    assert_eq!(normalize(BertNormalizer::new(false, Some(true)), "Café").0, "Cafe");
    // Combining accent on its own is a nonspacing mark: removed, offsets of the rest kept.
    let (text, origin) = normalize(BertNormalizer::new(true, None), "e\u{301}x");
    assert_eq!(text, "ex");
    assert_eq!(origin, [0, 2]);
}

#[test]
fn canonical_ordering_moves_origins_as_tokenizers_does() {
    // U+04F9 decomposes to U+044B U+0308 (class 230); U+302F (class 224) sorts before the
    // diaeresis and, as the first of its own character, takes the next origin: its own.
    let (text, origin) = normalize(BertNormalizer::new(true, None), "\u{4f9}\u{302f}");
    assert_eq!(text, "\u{44b}\u{302f}");
    assert_eq!(origin, [0, 0, 1, 1, 1]);
    // Three marks of classes 224, 230, 220 reorder to 220, 224, 230: origins stay in input
    // order, so the one kept (U+302E) reports the second character.
    let (text, origin) = normalize(BertNormalizer::new(true, None), "\u{302e}\u{368}\u{33a}");
    assert_eq!(text, "\u{302e}");
    assert_eq!(origin, [1, 1, 1]);
}

#[test]
fn lowercase_can_grow_a_character() {
    // U+0130 lowercases to "i" + U+0307; with accents stripped first, only "i" remains.
    assert_eq!(normalize(BertNormalizer::new(true, Some(false)), "\u{130}").0, "i\u{307}");
    assert_eq!(normalize(BertNormalizer::new(true, None), "\u{130}").0, "i");
}

#[test]
fn pre_tokenizer_splits_whitespace_and_every_punctuation() {
    let mut words = Vec::new();
    let text = "a,b  c$d¿e«f»g—h";
    for_each_word(text, |s, e| words.push(&text[s..e]));
    assert_eq!(words, ["a", ",", "b", "c", "$", "d", "¿", "e", "«", "f", "»", "g", "—", "h"]);
}

#[test]
fn wordpiece_greedy_longest_match_and_unknown_words() {
    let t = tokenizer(true, None);
    assert_eq!(tokens(&t, "unaffable"), ["un", "##aff", "##able"]);
    assert_eq!(tokens(&t, "unaffablex"), ["[UNK]"]);
    assert_eq!(tokens(&t, "abc hellos"), ["a", "##b", "##c", "hello", "##s"]);
    let long = "a".to_string() + &"b".repeat(99);
    assert_eq!(tokens(&t, &long).len(), 100);
    assert_eq!(tokens(&t, &(long + "b")), ["[UNK]"]);
}

#[test]
fn word_length_limit_counts_characters_not_bytes() {
    let t = tokenizer(true, Some(false));
    // 100 two-byte characters: 200 bytes, but within the 100-character limit.
    let word = "é".repeat(100);
    assert_eq!(tokens(&t, &word), ["[UNK]"]);
    let e = t.encode(&word, None, false).unwrap();
    assert_eq!(e.offsets, [(0, 100)]);
    let t = BertTokenizer::new(Vocab::from_lines(&format!("{VOCAB}é\n##é\n"), "##"), &Options::default()).unwrap();
    let t_keep = BertTokenizer::new(
        Vocab::from_lines(&format!("{VOCAB}é\n##é\n"), "##"),
        &Options { normalizer: BertNormalizer::new(true, Some(false)), ..Options::default() },
    )
    .unwrap();
    assert_eq!(tokens(&t, &word), ["[UNK]"], "accents stripped: 'e' pieces are not in the vocab");
    assert_eq!(tokens(&t_keep, &word).len(), 100);
    assert_eq!(tokens(&t_keep, &"é".repeat(101)), ["[UNK]"]);
}

#[test]
fn cjk_extension_ideographs_are_words_of_their_own() {
    let t = tokenizer(true, None);
    let e = t.encode("a\u{20000}\u{2A700}b", None, false).unwrap();
    assert_eq!(e.offsets, [(0, 1), (1, 2), (2, 3), (3, 4)]);
}

#[test]
fn decode_cleans_up_token_by_token_as_tokenizers_does() {
    let t = tokenizer(true, None);
    let e = t.encode("don't you?", None, false).unwrap();
    assert_eq!(t.tokens(&e), ["don", "'", "t", "you", "?"]);
    // The clean-up rules apply to each token with its leading space, so " ?" loses its space
    // but a lone apostrophe keeps both of its neighbours' spaces.
    assert_eq!(t.decode(&e.ids, true), "don ' t you?");
}

#[test]
fn empty_and_whitespace_inputs() {
    let t = tokenizer(true, None);
    assert!(tokens(&t, "").is_empty());
    assert!(tokens(&t, " \t\n\u{3000}").is_empty());
    let e = t.encode("", None, true).unwrap();
    assert_eq!(e.ids, [2, 3]);
    assert_eq!(e.special_tokens_mask, [1, 1]);
}

#[test]
fn offsets_are_character_indices_into_the_original() {
    let t = tokenizer(true, None);
    let e = t.encode("Hé! 中文 unaffable", None, false).unwrap();
    assert_eq!(t.tokens(&e), ["[UNK]", "!", "中", "文", "un", "##aff", "##able"]);
    assert_eq!(e.offsets, [(0, 2), (2, 3), (4, 5), (5, 6), (7, 9), (9, 12), (12, 16)]);
    // An astral-plane character counts as one character.
    let e = t.encode("😀 hello", None, false).unwrap();
    assert_eq!(e.offsets, [(0, 1), (2, 7)]);
}

#[test]
fn special_tokens_in_text_are_kept_whole() {
    let t = tokenizer(true, None);
    assert_eq!(tokens(&t, "hello[MASK]world"), ["hello", "[MASK]", "world"]);
    assert_eq!(tokens(&t, "[mask]"), ["[UNK]", "[UNK]", "[UNK]"]);
}

#[test]
fn never_split_words_are_whole_words_only() {
    let options = Options { never_split: vec!["Hello".into()], match_special_tokens: false, ..Options::default() };
    let t = BertTokenizer::new(Vocab::from_lines(VOCAB, "##"), &options).unwrap();
    assert_eq!(tokens(&t, "Hello x"), ["[UNK]", "[UNK]"]);
    assert_eq!(tokens(&t, "Hellos"), ["hello", "##s"]);
    assert_eq!(tokens(&t, "[MASK]"), ["[UNK]", "[UNK]", "[UNK]"]);
}

#[test]
fn pairs_get_cls_sep_and_type_ids() {
    let t = tokenizer(true, None);
    let e = t.encode("hello", Some("world !"), true).unwrap();
    assert_eq!(t.tokens(&e), ["[CLS]", "hello", "[SEP]", "world", "!", "[SEP]"]);
    assert_eq!(e.type_ids, [0, 0, 0, 1, 1, 1]);
    assert_eq!(e.offsets[4], (6, 7));
}

fn truncated(t: &mut BertTokenizer, strategy: TruncationStrategy, max_length: usize, a: &str, b: &str) -> Result<(usize, usize)> {
    t.truncation = Some(Truncation { max_length, strategy, side: Side::Right });
    let e = t.encode(a, Some(b), true)?;
    let first = e.type_ids.iter().filter(|&&x| x == 0).count() - 2;
    Ok((first, e.len() - first - 3))
}

#[test]
fn truncation_strategies() {
    let mut t = tokenizer(true, None);
    let (four, two) = ("a a a a", "a a");
    assert_eq!(truncated(&mut t, TruncationStrategy::LongestFirst, 8, four, two).unwrap(), (3, 2));
    assert_eq!(truncated(&mut t, TruncationStrategy::LongestFirst, 6, four, two).unwrap(), (2, 1));
    assert_eq!(truncated(&mut t, TruncationStrategy::OnlyFirst, 7, four, two).unwrap(), (2, 2));
    assert_eq!(truncated(&mut t, TruncationStrategy::OnlySecond, 8, four, two).unwrap(), (4, 1));
    assert!(truncated(&mut t, TruncationStrategy::OnlySecond, 5, four, two).is_err());
    assert!(truncated(&mut t, TruncationStrategy::LongestFirst, 2, four, two).is_err());
}

#[test]
fn padding_to_longest_and_fixed() {
    let mut t = tokenizer(true, None);
    let pad = Padding { length: None, pad_to_multiple_of: None, pad_id: 0, pad_type_id: 0, pad_token: "[PAD]".into(), side: Side::Right };
    t.padding = Some(pad.clone());
    let batch = t.encode_batch(&[("hello", None), ("hello world !", None)], true).unwrap();
    assert_eq!(batch[0].ids, [2, 5, 3, 0, 0]);
    assert_eq!(batch[0].attention_mask, [1, 1, 1, 0, 0]);
    t.padding = Some(Padding { length: Some(4), side: Side::Left, ..pad });
    assert_eq!(t.encode("hello", None, true).unwrap().ids, [0, 2, 5, 3]);
}

#[test]
fn decode_joins_pieces_and_skips_specials() {
    let t = tokenizer(true, None);
    let e = t.encode("Hello, unaffable world!", None, true).unwrap();
    assert_eq!(t.decode(&e.ids, true), "hello, unaffable world!");
    assert_eq!(t.decode(&e.ids, false), "[CLS] hello, unaffable world! [SEP]");
    assert_eq!(t.decode(&[999, 5], true), "hello");
}

#[test]
fn batch_matches_single_encodes() {
    let t = tokenizer(true, None);
    let inputs: Vec<(String, Option<String>)> = (0..100).map(|i| (format!("hello {} world", "a ".repeat(i % 7)), None)).collect();
    let batch = t.encode_batch(&inputs, true).unwrap();
    assert_eq!(t.encode_batch_serial(&inputs, true).unwrap(), batch);
    for (input, e) in inputs.iter().zip(&batch) {
        assert_eq!(&t.encode(&input.0, None, true).unwrap(), e);
    }
}

#[test]
fn missing_unk_and_missing_file() {
    let err = BertTokenizer::new(Vocab::from_lines("a\nb", "##"), &Options::default()).unwrap_err();
    assert!(err.to_string().contains("[UNK]"));
    let err = BertTokenizer::from_vocab_file("/nonexistent/vocab.txt", &Options::default()).unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/vocab.txt"));
}

#[test]
fn tokenizer_json_round_trip() {
    let json = r###"{"added_tokens":[{"id":0,"content":"[PAD]","special":true},{"id":1,"content":"[UNK]","special":true},
        {"id":2,"content":"[CLS]","special":true},{"id":3,"content":"[SEP]","special":true}],
        "normalizer":{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true},
        "pre_tokenizer":{"type":"BertPreTokenizer"},
        "post_processor":{"type":"BertProcessing","sep":["[SEP]",3],"cls":["[CLS]",2]},
        "model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":100,
        "vocab":{"[PAD]":0,"[UNK]":1,"[CLS]":2,"[SEP]":3,"hello":4,"##s":5}}}"###;
    let t = BertTokenizer::from_json_str(json).unwrap();
    assert_eq!(t.encode("HELLOS", None, true).unwrap().ids, [2, 4, 5, 3]);
    let bpe = json.replace("\"type\":\"WordPiece\"", "\"type\":\"BPE\"");
    assert!(BertTokenizer::from_json_str(&bpe).unwrap_err().to_string().contains("BPE"));
}
