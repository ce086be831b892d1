//! The lexicon trie: one path of token indices per spelling, word labels on the node where a
//! spelling ends, and on every node the best LM score reachable below it ("smearing"), which the
//! lexicon decoder uses as a look-ahead before a word is complete.

use crate::dictionary::{Dictionary, Lexicon};
use crate::error::AudioError;
use crate::lm::LanguageModel;

/// Flashlight keeps at most this many words on one trie node (homophones beyond it are
/// dropped, with a warning there; counted here in [`Trie::dropped_labels`]).
pub const MAX_LABELS_PER_NODE: usize = 6;

/// Below this difference `log_add` returns the larger operand unchanged.
const LOG_ADD_CUTOFF: f64 = -39.14;

/// Index of a node in the trie's node arena; the root is 0.
pub type NodeId = u32;

/// One trie node.
#[derive(Debug, Clone)]
pub struct TrieNode {
    /// The token leading to this node (the silence token for the root).
    pub token: usize,
    /// `(token, child)` pairs sorted by token.
    pub children: Vec<(u32, NodeId)>,
    /// Words whose spelling ends here.
    pub labels: Vec<usize>,
    /// The LM score given to each label when it was inserted.
    pub scores: Vec<f32>,
    /// Smeared score: log-sum of this node's label scores, maxed with its children's.
    pub max_score: f32,
}

impl TrieNode {
    fn new(token: usize) -> Self {
        TrieNode {
            token,
            children: Vec::new(),
            labels: Vec::new(),
            scores: Vec::new(),
            max_score: f32::NEG_INFINITY,
        }
    }

    /// The child reached by `token`, if any.
    #[inline]
    pub fn child(&self, token: usize) -> Option<NodeId> {
        let key = token as u32;
        self.children
            .binary_search_by_key(&key, |&(t, _)| t)
            .ok()
            .map(|i| self.children[i].1)
    }

    /// Whether any spelling continues below this node.
    pub fn has_children(&self) -> bool {
        !self.children.is_empty()
    }
}

/// A lexicon trie over a token set of `num_tokens` entries.
#[derive(Debug, Clone)]
pub struct Trie {
    nodes: Vec<TrieNode>,
    num_tokens: usize,
    dropped_labels: usize,
}

/// The root node's id.
pub const ROOT: NodeId = 0;

impl Trie {
    /// An empty trie; the root carries the silence token, as in Flashlight.
    pub fn new(num_tokens: usize, silence: usize) -> Self {
        Trie {
            nodes: vec![TrieNode::new(silence)],
            num_tokens,
            dropped_labels: 0,
        }
    }

    /// Insert one spelling of word `label` with LM score `score`; returns the end node.
    pub fn insert(
        &mut self,
        spelling: &[usize],
        label: usize,
        score: f32,
    ) -> Result<NodeId, AudioError> {
        let mut node = ROOT;
        for &token in spelling {
            if token >= self.num_tokens {
                return Err(AudioError::Invalid(format!(
                    "trie: token index {token} out of range"
                )));
            }
            node = match self.nodes[node as usize].child(token) {
                Some(child) => child,
                None => self.add_child(node, token),
            };
        }
        let end = &mut self.nodes[node as usize];
        if end.labels.len() < MAX_LABELS_PER_NODE {
            end.labels.push(label);
            end.scores.push(score);
        } else {
            self.dropped_labels += 1;
        }
        Ok(node)
    }

    fn add_child(&mut self, parent: NodeId, token: usize) -> NodeId {
        let id = self.nodes.len() as NodeId;
        self.nodes.push(TrieNode::new(token));
        let children = &mut self.nodes[parent as usize].children;
        let at = children.partition_point(|&(t, _)| (t as usize) < token);
        children.insert(at, (token as u32, id));
        id
    }

    /// The node reached by `spelling`, if the whole spelling is in the trie.
    pub fn search(&self, spelling: &[usize]) -> Option<NodeId> {
        spelling
            .iter()
            .try_fold(ROOT, |node, &t| self.nodes[node as usize].child(t))
    }

    /// Compute every node's smeared score with the MAX rule (TorchAudio's choice): a node's own
    /// labels are log-added, then the node takes the max with each child's smeared score.
    pub fn smear_max(&mut self) {
        // Children are always created after their parent, so a reverse sweep is post-order.
        // Flashlight stores the smeared score as f32 after every step; so do we.
        for id in (0..self.nodes.len()).rev() {
            let mut best = f32::NEG_INFINITY;
            for &s in &self.nodes[id].scores {
                best = log_add(best as f64, s as f64) as f32;
            }
            for &(_, c) in &self.nodes[id].children {
                let child = self.nodes[c as usize].max_score;
                if child > best {
                    best = child;
                }
            }
            self.nodes[id].max_score = best;
        }
    }

    /// Build the trie TorchAudio builds: every spelling of every lexicon word, each word scored
    /// by `lm` right after the sentence start, then smeared with MAX.
    pub fn from_lexicon<L: LanguageModel>(
        lexicon: &Lexicon,
        tokens: &Dictionary,
        words: &Dictionary,
        lm: &L,
        silence: usize,
    ) -> Result<Self, AudioError> {
        let mut trie = Trie::new(tokens.len(), silence);
        let start = lm.start(false);
        for (word, spellings) in lexicon.words() {
            if spellings.is_empty() {
                continue;
            }
            let label = words.require(word)?;
            let (_, score) = lm.score(&start, label);
            for spelling in spellings {
                let ids = spelling
                    .iter()
                    .map(|t| {
                        tokens.index(t).ok_or_else(|| {
                            AudioError::Invalid(format!(
                                "lexicon word '{word}' uses unknown token '{t}'"
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                trie.insert(&ids, label, score)?;
            }
        }
        trie.smear_max();
        Ok(trie)
    }

    /// The node with id `id`.
    #[inline]
    pub fn node(&self, id: NodeId) -> &TrieNode {
        &self.nodes[id as usize]
    }

    /// Number of nodes, the root included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Never: the root is always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Words not stored because their node already had [`MAX_LABELS_PER_NODE`] labels.
    pub fn dropped_labels(&self) -> usize {
        self.dropped_labels
    }
}

/// log(exp(a) + exp(b)), returning the larger operand when the other is negligible.
pub fn log_add(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a < b { (b, a) } else { (a, b) };
    let diff = lo - hi;
    if diff.is_nan() || diff < LOG_ADD_CUTOFF {
        hi
    } else {
        hi + diff.exp().ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_search_and_smear() {
        // tokens: 0 '-', 1 '|', 2 a, 3 b, 4 c
        let mut trie = Trie::new(5, 1);
        let ab = trie.insert(&[2, 3], 0, -1.0).unwrap();
        trie.insert(&[2, 3, 4], 1, -0.5).unwrap();
        let ab2 = trie.insert(&[2, 3], 2, -1.0).unwrap();
        assert_eq!(ab, ab2);
        trie.insert(&[3], 3, -3.0).unwrap();
        trie.smear_max();
        let a = trie.search(&[2]).unwrap();
        assert_eq!(trie.node(ab).labels, vec![0, 2]);
        // own labels log-added: ln(2 e^-1) = -1 + ln 2 > -0.5? -0.307 > -0.5, so own wins
        let own = (-1.0 + 2f64.ln()) as f32;
        assert!((trie.node(ab).max_score - own).abs() < 1e-6);
        assert!((trie.node(a).max_score - own).abs() < 1e-6);
        assert!((trie.node(ROOT).max_score - own).abs() < 1e-6);
        assert_eq!(trie.node(trie.search(&[3]).unwrap()).max_score, -3.0);
        assert!(trie.search(&[4]).is_none());
        assert!(trie.insert(&[9], 0, 0.0).is_err());
    }

    #[test]
    fn labels_are_capped_per_node() {
        let mut trie = Trie::new(3, 1);
        for w in 0..8 {
            trie.insert(&[2], w, 0.0).unwrap();
        }
        assert_eq!(
            trie.node(trie.search(&[2]).unwrap()).labels.len(),
            MAX_LABELS_PER_NODE
        );
        assert_eq!(trie.dropped_labels(), 2);
    }

    #[test]
    fn log_add_matches_direct_formula() {
        assert!((log_add(-1.0, -2.0) - ((-1f64).exp() + (-2f64).exp()).ln()).abs() < 1e-12);
        assert_eq!(log_add(f64::NEG_INFINITY, -2.0), -2.0);
        assert_eq!(log_add(0.0, -100.0), 0.0);
    }
}
