//! `ember._C.text`: the BERT WordPiece tokenizer of `ember-text`. Batches run on Ember's thread
//! pool with the GIL released; the `embertext` package builds the public API on this.
use crate::tensor::PyTensor;
use ember_core::Tensor;
use ember_text::{BertNormalizer, BertTokenizer, Encoding, Error, Options, Padding, Side, Truncation, TruncationStrategy};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use std::sync::Arc;

fn to_py(e: Error) -> PyErr {
    match e {
        Error::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err((2, "No such file or directory", path.display().to_string()))
        }
        e @ Error::Io { .. } => PyOSError::new_err(e.to_string()),
        e => PyValueError::new_err(e.to_string()),
    }
}

fn side(name: &str, what: &str) -> PyResult<Side> {
    match name {
        "right" => Ok(Side::Right),
        "left" => Ok(Side::Left),
        _ => Err(PyValueError::new_err(format!("{what} must be 'right' or 'left', got '{name}'"))),
    }
}

fn side_name(s: Side) -> &'static str {
    match s {
        Side::Right => "right",
        Side::Left => "left",
    }
}

/// Strings shorter than this are encoded without releasing the GIL: the hand-off costs more.
const DETACH_BYTES: usize = 4096;

type Input = (PyBackedStr, Option<PyBackedStr>);

/// Batches this small are encoded on the calling thread: handing them to the pool costs more.
fn is_small(inputs: &[Input]) -> bool {
    inputs.len() < 2 || inputs.iter().map(|(a, b)| a.len() + b.as_ref().map_or(0, |b| b.len())).sum::<usize>() < DETACH_BYTES
}

/// A batch item: a `str`, or a `(str, str)` pair.
fn input(item: &Bound<'_, PyAny>, i: usize) -> PyResult<Input> {
    if let Ok(s) = item.cast::<PyString>() {
        return Ok((s.clone().try_into()?, None));
    }
    if let Ok((a, b)) = item.extract::<(PyBackedStr, PyBackedStr)>() {
        return Ok((a, Some(b)));
    }
    Err(PyTypeError::new_err(format!(
        "inputs[{i}] must be a str or a (str, str) pair, got {}",
        item.get_type().name()?
    )))
}

fn inputs(items: &Bound<'_, PyAny>) -> PyResult<Vec<Input>> {
    if items.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("inputs must be a list of str or (str, str) pairs, got a single str"));
    }
    let iter = items
        .try_iter()
        .map_err(|_| PyTypeError::new_err(format!("inputs must be a list of str or (str, str) pairs, got {}", items.get_type().name().map(|n| n.to_string()).unwrap_or_default())))?;
    iter.enumerate().map(|(i, item)| input(&item?, i)).collect()
}

#[pyclass(name = "Encoding", module = "ember._C.text", frozen)]
pub struct PyEncoding {
    enc: Encoding,
    tok: Arc<BertTokenizer>,
}

#[pymethods]
impl PyEncoding {
    #[getter]
    fn ids(&self) -> Vec<u32> {
        self.enc.ids.clone()
    }
    #[getter]
    fn type_ids(&self) -> Vec<u32> {
        self.enc.type_ids.clone()
    }
    #[getter]
    fn tokens(&self) -> Vec<&str> {
        self.tok.tokens(&self.enc)
    }
    #[getter]
    fn offsets(&self) -> Vec<(u32, u32)> {
        self.enc.offsets.clone()
    }
    #[getter]
    fn attention_mask(&self) -> Vec<u32> {
        self.enc.attention_mask.clone()
    }
    #[getter]
    fn special_tokens_mask(&self) -> Vec<u32> {
        self.enc.special_tokens_mask.clone()
    }
    fn __len__(&self) -> usize {
        self.enc.len()
    }
    fn __repr__(&self) -> String {
        format!("Encoding(num_tokens={}, attributes=[ids, type_ids, tokens, offsets, attention_mask, special_tokens_mask])", self.enc.len())
    }
}

#[pyclass(name = "BertTokenizer", module = "ember._C.text")]
pub struct PyBertTokenizer {
    tok: Arc<BertTokenizer>,
}

impl PyBertTokenizer {
    fn wrap(&self, enc: Encoding) -> PyEncoding {
        PyEncoding { enc, tok: self.tok.clone() }
    }

    fn run_batch(&self, py: Python<'_>, inputs: &[Input], add_special_tokens: bool) -> PyResult<Vec<Encoding>> {
        let tok = &*self.tok;
        let result = if is_small(inputs) {
            tok.encode_batch_serial(inputs, add_special_tokens)
        } else {
            py.detach(|| ember_core::parallel::pool().install(|| tok.encode_batch(inputs, add_special_tokens)))
        };
        result.map_err(to_py)
    }

    fn texts(items: &Bound<'_, PyAny>) -> PyResult<Vec<Input>> {
        let inputs = inputs(items)?;
        if let Some(i) = inputs.iter().position(|x| x.1.is_some()) {
            return Err(PyTypeError::new_err(format!("inputs[{i}] must be a str, got a pair")));
        }
        Ok(inputs)
    }
}

#[pymethods]
impl PyBertTokenizer {
    /// From BERT's `vocab.txt`. `strip_accents=None` follows `lowercase`.
    #[staticmethod]
    #[pyo3(signature = (path, lowercase=true, strip_accents=None, clean_text=true, handle_chinese_chars=true,
        match_special_tokens=true, never_split=Vec::new(), unk_token="[UNK]".to_string(), sep_token="[SEP]".to_string(),
        cls_token="[CLS]".to_string(), pad_token="[PAD]".to_string(), mask_token="[MASK]".to_string(),
        wordpieces_prefix="##".to_string(), max_input_chars_per_word=100))]
    #[allow(clippy::too_many_arguments)]
    fn from_vocab_file(
        path: std::path::PathBuf,
        lowercase: bool,
        strip_accents: Option<bool>,
        clean_text: bool,
        handle_chinese_chars: bool,
        match_special_tokens: bool,
        never_split: Vec<String>,
        unk_token: String,
        sep_token: String,
        cls_token: String,
        pad_token: String,
        mask_token: String,
        wordpieces_prefix: String,
        max_input_chars_per_word: usize,
    ) -> PyResult<Self> {
        let normalizer = BertNormalizer { clean_text, handle_chinese_chars, ..BertNormalizer::new(lowercase, strip_accents) };
        let options = Options {
            normalizer,
            unk_token,
            cls_token,
            sep_token,
            pad_token,
            mask_token,
            continuing_subword_prefix: wordpieces_prefix,
            max_input_chars_per_word,
            match_special_tokens,
            never_split,
        };
        let tok = BertTokenizer::from_vocab_file(&path, &options).map_err(to_py)?;
        Ok(PyBertTokenizer { tok: Arc::new(tok) })
    }

    /// From a HuggingFace `tokenizer.json` with a WordPiece model.
    #[staticmethod]
    fn from_tokenizer_json(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(PyBertTokenizer { tok: Arc::new(BertTokenizer::from_tokenizer_json(&path).map_err(to_py)?) })
    }

    #[pyo3(signature = (sequence, pair=None, add_special_tokens=true))]
    fn encode(&self, py: Python<'_>, sequence: PyBackedStr, pair: Option<PyBackedStr>, add_special_tokens: bool) -> PyResult<PyEncoding> {
        let (tok, pair) = (&*self.tok, pair.as_deref());
        let run = || tok.encode(&sequence, pair, add_special_tokens);
        let enc = if sequence.len() + pair.map_or(0, str::len) >= DETACH_BYTES { py.detach(run) } else { run() };
        Ok(self.wrap(enc.map_err(to_py)?))
    }

    #[pyo3(signature = (inputs, add_special_tokens=true))]
    fn encode_batch(&self, py: Python<'_>, inputs: &Bound<'_, PyAny>, add_special_tokens: bool) -> PyResult<Vec<PyEncoding>> {
        let inputs = self::inputs(inputs)?;
        Ok(self.run_batch(py, &inputs, add_special_tokens)?.into_iter().map(|e| self.wrap(e)).collect())
    }

    /// Ids of one text, without special tokens, truncation or padding (TorchText's output).
    fn encode_ids<'py>(&self, py: Python<'py>, text: PyBackedStr) -> PyResult<Bound<'py, PyList>> {
        let tok = &*self.tok;
        let run = || tok.encode_ids(&text);
        let ids = if text.len() >= DETACH_BYTES { py.detach(run) } else { run() };
        PyList::new(py, ids)
    }

    fn encode_ids_batch<'py>(&self, py: Python<'py>, texts: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyList>>> {
        let inputs = Self::texts(texts)?;
        let tok = &*self.tok;
        let texts: Vec<&str> = inputs.iter().map(|(t, _)| &**t).collect();
        let ids = if is_small(&inputs) {
            texts.iter().map(|t| tok.encode_ids(t)).collect()
        } else {
            py.detach(|| ember_core::parallel::pool().install(|| tok.encode_ids_batch(&texts)))
        };
        ids.into_iter().map(|v| PyList::new(py, v)).collect()
    }

    /// Token strings of one text, without special tokens (TorchText's `return_tokens=True`).
    fn tokenize(&self, text: PyBackedStr) -> Vec<&str> {
        self.tok.encode_ids(&text).into_iter().map(|id| self.tok.id_to_token(id).unwrap_or("")).collect()
    }

    fn tokenize_batch(&self, py: Python<'_>, texts: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<&str>>> {
        let inputs = Self::texts(texts)?;
        let encs = self.run_batch(py, &inputs, false)?;
        Ok(encs.iter().map(|e| self.tok.tokens(e)).collect())
    }

    /// A padded batch as int64 tensors: (input_ids, token_type_ids, attention_mask, offsets).
    /// Without a padding setting, pads to the longest with the `[PAD]` id (0 if absent).
    #[pyo3(signature = (inputs, add_special_tokens=true))]
    fn encode_batch_tensors(&self, py: Python<'_>, inputs: &Bound<'_, PyAny>, add_special_tokens: bool) -> PyResult<(PyTensor, PyTensor, PyTensor, PyTensor)> {
        let inputs = self::inputs(inputs)?;
        let encs = self.run_batch(py, &inputs, add_special_tokens)?;
        let width = encs.iter().map(Encoding::len).max().unwrap_or(0);
        let pad_id = match &self.tok.padding {
            Some(p) => p.pad_id,
            None => self.tok.token_to_id("[PAD]").unwrap_or(0),
        };
        let pad_left = self.tok.padding.as_ref().is_some_and(|p| p.side == Side::Left);
        let grid = |field: &dyn Fn(&Encoding) -> Vec<i64>, fill: i64, per_token: usize| {
            let mut data = vec![fill; encs.len() * width * per_token];
            for (row, e) in data.chunks_mut((width * per_token).max(1)).zip(&encs) {
                let values = field(e);
                let at = if pad_left { row.len() - values.len() } else { 0 };
                row[at..at + values.len()].copy_from_slice(&values);
            }
            let shape: Vec<usize> = if per_token == 1 { vec![encs.len(), width] } else { vec![encs.len(), width, per_token] };
            Tensor::from_vec(data, &shape).map(PyTensor::new).map_err(|e| PyValueError::new_err(e.message))
        };
        let widen = |v: &[u32]| v.iter().map(|&x| x as i64).collect::<Vec<i64>>();
        Ok((
            grid(&|e| widen(&e.ids), pad_id as i64, 1)?,
            grid(&|e| widen(&e.type_ids), 0, 1)?,
            grid(&|e| widen(&e.attention_mask), 0, 1)?,
            grid(&|e| e.offsets.iter().flat_map(|&(s, t)| [s as i64, t as i64]).collect(), 0, 2)?,
        ))
    }

    #[pyo3(signature = (ids, skip_special_tokens=true))]
    fn decode(&self, ids: Vec<i64>, skip_special_tokens: bool) -> String {
        self.tok.decode(&valid_ids(&ids), skip_special_tokens)
    }

    #[pyo3(signature = (sequences, skip_special_tokens=true))]
    fn decode_batch(&self, sequences: Vec<Vec<i64>>, skip_special_tokens: bool) -> Vec<String> {
        sequences.iter().map(|ids| self.tok.decode(&valid_ids(ids), skip_special_tokens)).collect()
    }

    #[pyo3(signature = (max_length, strategy="longest_first", direction="right"))]
    fn enable_truncation(&mut self, max_length: usize, strategy: &str, direction: &str) -> PyResult<()> {
        let strategy = TruncationStrategy::from_name(strategy).ok_or_else(|| {
            PyValueError::new_err(format!("strategy must be 'longest_first', 'only_first' or 'only_second', got '{strategy}'"))
        })?;
        let side = side(direction, "direction")?;
        Arc::make_mut(&mut self.tok).truncation = Some(Truncation { max_length, strategy, side });
        Ok(())
    }

    fn no_truncation(&mut self) {
        Arc::make_mut(&mut self.tok).truncation = None;
    }

    #[pyo3(signature = (direction="right", pad_id=0, pad_type_id=0, pad_token="[PAD]".to_string(), length=None, pad_to_multiple_of=None))]
    fn enable_padding(
        &mut self,
        direction: &str,
        pad_id: u32,
        pad_type_id: u32,
        pad_token: String,
        length: Option<usize>,
        pad_to_multiple_of: Option<usize>,
    ) -> PyResult<()> {
        let side = side(direction, "direction")?;
        Arc::make_mut(&mut self.tok).padding = Some(Padding { length, pad_to_multiple_of, pad_id, pad_type_id, pad_token, side });
        Ok(())
    }

    fn no_padding(&mut self) {
        Arc::make_mut(&mut self.tok).padding = None;
    }

    #[getter]
    fn truncation<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(t) = &self.tok.truncation else { return Ok(None) };
        let d = PyDict::new(py);
        d.set_item("max_length", t.max_length)?;
        d.set_item("stride", 0)?;
        let strategy = match t.strategy {
            TruncationStrategy::LongestFirst => "longest_first",
            TruncationStrategy::OnlyFirst => "only_first",
            TruncationStrategy::OnlySecond => "only_second",
        };
        d.set_item("strategy", strategy)?;
        d.set_item("direction", side_name(t.side))?;
        Ok(Some(d))
    }

    #[getter]
    fn padding<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(p) = &self.tok.padding else { return Ok(None) };
        let d = PyDict::new(py);
        d.set_item("length", p.length)?;
        d.set_item("pad_to_multiple_of", p.pad_to_multiple_of)?;
        d.set_item("pad_id", p.pad_id)?;
        d.set_item("pad_token", &p.pad_token)?;
        d.set_item("pad_type_id", p.pad_type_id)?;
        d.set_item("direction", side_name(p.side))?;
        Ok(Some(d))
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.tok.token_to_id(token)
    }

    fn id_to_token(&self, id: i64) -> Option<&str> {
        u32::try_from(id).ok().and_then(|id| self.tok.id_to_token(id))
    }

    fn get_vocab<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (token, id) in self.tok.vocab().iter() {
            d.set_item(token, id)?;
        }
        Ok(d)
    }

    fn get_vocab_size(&self) -> usize {
        self.tok.vocab().len()
    }

    /// (lowercase, strip_accents, clean_text, handle_chinese_chars) in force.
    fn normalizer_settings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let n = self.tok.normalizer();
        PyTuple::new(py, [n.lowercase, n.strip_accents, n.clean_text, n.handle_chinese_chars])
    }
}

/// Negative or too-large ids are not in any vocabulary; decoding skips them as unknown ids.
fn valid_ids(ids: &[i64]) -> Vec<u32> {
    ids.iter().filter_map(|&id| u32::try_from(id).ok()).collect()
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "text")?;
    m.add_class::<PyBertTokenizer>()?;
    m.add_class::<PyEncoding>()?;
    parent.add_submodule(&m)?;
    Ok(())
}
