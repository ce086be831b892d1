//! `ember._C.audio`: the CTC decoders of `ember-audio`. Emissions arrive as ember tensors and are
//! checked here (so no input reaches a kernel unvalidated); batches are decoded on Ember's thread
//! pool with the GIL released. `emberaudio.models.decoder` builds TorchAudio's API on this.
use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use ember_audio::decoder::greedy::{greedy_decode_batch, GreedyResult};
use ember_audio::lm::arpa::ArpaModel;
use ember_audio::{AudioError, CtcDecoder, CtcDecoderOptions, CtcHypothesis, Dictionary, LanguageModel, Lexicon};
use ember_core::{DType, Device, Element, Tensor};
use pyo3::exceptions::{PyIndexError, PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use std::sync::{Arc, Mutex};

fn to_py(e: AudioError) -> PyErr {
    match e {
        e @ AudioError::Io { .. } => PyOSError::new_err(e.to_string()),
        e => PyValueError::new_err(e.to_string()),
    }
}

/// A state returned by a Python LM; `None` once a call has failed (the decode is then void).
type PyState = Option<Arc<Py<PyAny>>>;

/// A Python object with the methods of TorchAudio's `CTCDecoderLM` (`start`, `score`, `finish`)
/// as an ember-audio language model. Each call takes the GIL, so decoding with a Python LM
/// cannot run free of it: the search itself runs GIL-free on the pool, the LM calls one at a
/// time. States are compared by object identity, as Flashlight compares `LMState`s.
struct PyLm {
    lm: Py<PyAny>,
    /// The first exception a call raised; later calls return at once.
    error: Mutex<Option<PyErr>>,
}

impl PyLm {
    fn failed(&self) -> bool {
        self.error.lock().unwrap().is_some()
    }

    /// The value of a call, or `None` after keeping its exception (the first one wins).
    fn keep<T>(&self, result: PyResult<T>) -> Option<T> {
        result.map_err(|e| _ = self.error.lock().unwrap().get_or_insert(e)).ok()
    }

    /// `method(*args)`, which must return a (state, score) pair.
    fn call(&self, method: &str, args: impl FnOnce(Python<'_>) -> PyResult<Bound<'_, PyTuple>>) -> (PyState, f32) {
        if self.failed() {
            return (None, 0.0);
        }
        Python::attach(|py| {
            let result = args(py).and_then(|a| self.lm.bind(py).call_method1(method, a)).and_then(|r| {
                r.extract::<(Py<PyAny>, f32)>().map_err(|_| {
                    PyTypeError::new_err(format!("CTCDecoderLM.{method} must return a (state, float) pair, got {r}"))
                })
            });
            self.keep(result).map_or((None, 0.0), |(state, score)| (Some(Arc::new(state)), score))
        })
    }

    fn take_error(&self) -> PyResult<()> {
        self.error.lock().unwrap().take().map_or(Ok(()), Err)
    }
}

impl LanguageModel for PyLm {
    type State = PyState;

    fn start(&self, start_with_nothing: bool) -> PyState {
        if self.failed() {
            return None;
        }
        Python::attach(|py| self.keep(self.lm.bind(py).call_method1("start", (start_with_nothing,))).map(|s| Arc::new(s.unbind())))
    }

    fn score(&self, state: &PyState, word: usize) -> (PyState, f32) {
        let Some(state) = state else { return (None, 0.0) };
        self.call("score", |py| (state.bind(py), word).into_pyobject(py))
    }

    fn finish(&self, state: &PyState) -> (PyState, f32) {
        let Some(state) = state else { return (None, 0.0) };
        self.call("finish", |py| (state.bind(py),).into_pyobject(py))
    }

    fn state_identity(&self, state: &PyState) -> Option<u64> {
        Some(state.as_ref().map_or(0, |s| s.as_ptr() as u64))
    }
}

/// The decoder with either kind of LM (files: none or ARPA; or a Python object).
enum Search {
    Native(CtcDecoder),
    Python(CtcDecoder<PyLm>),
}

/// Emissions checked against the decoder: contiguous float32 `(batch, frames, tokens)` and
/// per-utterance lengths.
struct Batch {
    data: Tensor,
    batch: usize,
    frames: usize,
    tokens: usize,
    lengths: Option<Vec<usize>>,
}

impl Batch {
    fn new(emissions: &Bound<'_, PyAny>, lengths: Option<&Bound<'_, PyAny>>, num_tokens: usize) -> PyResult<Self> {
        let t = tensor_arg(emissions, "emissions")?;
        if t.dtype() != DType::F32 {
            return Err(PyValueError::new_err(format!("emissions must be float32, got {}", t.dtype())));
        }
        let &[batch, frames, tokens] = t.shape() else {
            return Err(PyRuntimeError::new_err(format!(
                "emissions must be 3-D (batch, frames, num_tokens), got shape {:?}",
                t.shape()
            )));
        };
        if tokens != num_tokens {
            return Err(PyRuntimeError::new_err(format!(
                "emissions must have one score per token in their last dim: expected {num_tokens} (the decoder's tokens), got shape {:?}",
                t.shape()
            )));
        }
        let lengths = lengths.map(|l| lengths_arg(l, batch, frames)).transpose()?;
        Ok(Batch { data: t.contiguous().py()?, batch, frames, tokens, lengths })
    }

    fn values(&self) -> &[f32] {
        if self.data.numel() == 0 {
            return &[]; // an empty tensor's data pointer may be null
        }
        // `data` is a contiguous CPU float32 tensor that `self` keeps alive.
        unsafe { std::slice::from_raw_parts(self.data.data_ptr::<f32>(), self.data.numel()) }
    }
}

fn tensor_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Tensor> {
    let t = obj
        .cast::<PyTensor>()
        .map_err(|_| PyTypeError::new_err(format!("{name} must be an ember.Tensor, got {}", type_name(obj))))?
        .borrow()
        .t
        .clone();
    if t.device() != Device::Cpu {
        return Err(PyRuntimeError::new_err(format!("{name} must be a CPU tensor, got one on {}", t.device())));
    }
    Ok(t)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
}

/// `lengths`: a 1-D integer tensor of `batch` entries, each in `0..=frames`.
fn lengths_arg(obj: &Bound<'_, PyAny>, batch: usize, frames: usize) -> PyResult<Vec<usize>> {
    let t = tensor_arg(obj, "lengths")?;
    if !t.dtype().is_int() {
        return Err(PyValueError::new_err(format!("lengths must be an integer tensor, got {}", t.dtype())));
    }
    if t.shape() != [batch] {
        return Err(PyRuntimeError::new_err(format!(
            "lengths must have shape ({batch},), one entry per utterance, got shape {:?}",
            t.shape()
        )));
    }
    let values = t.to_dtype(DType::I64).py()?.to_vec::<i64>().map_err(|e| PyValueError::new_err(e.message))?;
    values
        .iter()
        .enumerate()
        .map(|(i, &l)| match usize::try_from(l) {
            Ok(l) if l <= frames => Ok(l),
            _ => Err(PyValueError::new_err(format!(
                "lengths[{i}] must be between 0 and the emissions' {frames} frames, got {l}"
            ))),
        })
        .collect()
}

/// A count option, positive and within Flashlight's `int` (as torchaudio's binding takes it): a
/// beam that wide would keep every hypothesis of a search that grows exponentially per frame,
/// until memory ran out.
fn positive(name: &str, value: i64) -> PyResult<usize> {
    if value > i32::MAX as i64 {
        return Err(PyValueError::new_err(format!("{name} must be at most {}, got {value}", i32::MAX)));
    }
    usize::try_from(value)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| PyValueError::new_err(format!("{name} must be a positive int, got {value}")))
}

/// The tokens: a path to a tokens file (Flashlight's format) or a list of str.
fn tokens_arg(py: Python<'_>, tokens: &Bound<'_, PyAny>) -> PyResult<Dictionary> {
    if let Ok(path) = tokens.cast::<PyString>() {
        let path = path.to_string();
        return py.detach(|| Dictionary::load_tokens(&path)).map_err(to_py);
    }
    let list: Vec<String> = tokens
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("tokens must be a path or a list of str, got {}", type_name(tokens))))?;
    Dictionary::from_entries(&list).map_err(|e| PyValueError::new_err(format!("tokens: {e}")))
}

/// `blank_token` and `sil_token` must name tokens.
fn check_token(tokens: &Dictionary, name: &str, token: &str) -> PyResult<usize> {
    tokens.index(token).ok_or_else(|| {
        let shown: Vec<String> = tokens.entries().iter().take(40).map(|t| format!("'{t}'")).collect();
        let more = if tokens.len() > shown.len() { ", ..." } else { "" };
        PyValueError::new_err(format!("{name} must be one of the tokens [{}{more}], got '{token}'", shown.join(", ")))
    })
}

fn hypothesis(py: Python<'_>, h: CtcHypothesis) -> PyResult<Bound<'_, PyTuple>> {
    let tokens = int_tensor(h.tokens.iter().map(|&t| t as i64).collect())?;
    let timesteps = int_tensor(h.timesteps.iter().map(|&t| t as i32).collect())?;
    (tokens, h.words, h.score, timesteps).into_pyobject(py)
}

fn int_tensor<T: Element>(values: Vec<T>) -> PyResult<PyTensor> {
    let n = values.len();
    Tensor::from_vec(values, &[n]).map(PyTensor::new).map_err(|e| PyRuntimeError::new_err(e.message))
}

fn tokens_of(tokens: &Dictionary, idxs: Vec<i64>) -> PyResult<Vec<String>> {
    idxs.iter()
        .map(|&i| {
            usize::try_from(i).ok().and_then(|i| tokens.entry(i)).map(str::to_string).ok_or_else(|| {
                PyIndexError::new_err(format!("token index {i} is out of range for {} tokens", tokens.len()))
            })
        })
        .collect()
}

fn decode_batch<L: LanguageModel>(py: Python<'_>, d: &CtcDecoder<L>, b: &Batch) -> Result<Vec<Vec<CtcHypothesis>>, AudioError> {
    let (values, lengths) = (b.values(), b.lengths.as_deref());
    py.detach(|| ember_core::parallel::pool().install(|| d.decode_batch(values, b.batch, b.frames, b.tokens, lengths)))
}

/// TorchAudio's `CTCDecoder` (Flashlight's beam search): lexicon-constrained with a lexicon file,
/// lexicon-free without; the LM is none, an ARPA file, or a Python `CTCDecoderLM`.
#[pyclass(name = "CTCDecoder", module = "ember._C.audio", frozen)]
pub struct PyCtcDecoder {
    search: Search,
}

#[pymethods]
impl PyCtcDecoder {
    #[new]
    #[pyo3(signature = (lexicon, tokens, lm=None, nbest=1, beam_size=50, beam_size_token=None, beam_threshold=50.0,
        lm_weight=2.0, word_score=0.0, unk_score=f64::NEG_INFINITY, sil_score=0.0, log_add=false,
        blank_token="-".to_string(), sil_token="|".to_string(), unk_word="<unk>".to_string()))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        lexicon: Option<String>,
        tokens: &Bound<'_, PyAny>,
        lm: Option<&Bound<'_, PyAny>>,
        nbest: i64,
        beam_size: i64,
        beam_size_token: Option<i64>,
        beam_threshold: f64,
        lm_weight: f64,
        word_score: f64,
        unk_score: f64,
        sil_score: f64,
        log_add: bool,
        blank_token: String,
        sil_token: String,
        unk_word: String,
    ) -> PyResult<Self> {
        let tokens = tokens_arg(py, tokens)?;
        check_token(&tokens, "blank_token", &blank_token)?;
        check_token(&tokens, "sil_token", &sil_token)?;
        let options = CtcDecoderOptions {
            nbest: positive("nbest", nbest)?,
            beam_size: positive("beam_size", beam_size)?,
            beam_size_token: beam_size_token.map(|b| positive("beam_size_token", b)).transpose()?,
            beam_threshold,
            lm_weight,
            word_score,
            unk_score,
            sil_score,
            log_add,
            blank_token,
            sil_token,
            unk_word,
        };
        let lexicon = lexicon.map(|path| py.detach(|| Lexicon::load(&path))).transpose().map_err(to_py)?;
        let search = match lm {
            Some(lm) if !lm.is_instance_of::<PyString>() => {
                let words = lexicon.as_ref().map(Lexicon::word_dictionary);
                let lm = PyLm { lm: lm.clone().unbind(), error: Mutex::new(None) };
                let decoder = CtcDecoder::with_lm(lexicon.as_ref(), tokens, words, lm, &options);
                let decoder = decoder.map_err(to_py)?;
                decoder.lm().take_error()?;
                Search::Python(decoder)
            }
            lm => {
                let path = lm.map(|p| p.to_string());
                let model = py.detach(|| path.map(|p| ArpaModel::load(&p)).transpose()).map_err(to_py)?;
                Search::Native(CtcDecoder::new(lexicon.as_ref(), tokens, model.map(Arc::new), &options).map_err(to_py)?)
            }
        };
        Ok(PyCtcDecoder { search })
    }

    /// `List[List[(tokens, words, score, timesteps)]]`: the `nbest` best of each utterance.
    #[pyo3(signature = (emissions, lengths=None))]
    fn decode<'py>(&self, py: Python<'py>, emissions: &Bound<'py, PyAny>, lengths: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyList>> {
        let b = Batch::new(emissions, lengths, self.num_tokens())?;
        let hyps = match &self.search {
            Search::Native(d) => decode_batch(py, d, &b),
            Search::Python(d) => {
                let hyps = decode_batch(py, d, &b);
                d.lm().take_error()?;
                hyps
            }
        }
        .map_err(to_py)?;
        let rows = hyps
            .into_iter()
            .map(|row| PyList::new(py, row.into_iter().map(|h| hypothesis(py, h)).collect::<PyResult<Vec<_>>>()?))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows)
    }

    fn idxs_to_tokens(&self, idxs: Vec<i64>) -> PyResult<Vec<String>> {
        tokens_of(self.tokens(), idxs)
    }
}

impl PyCtcDecoder {
    fn tokens(&self) -> &Dictionary {
        match &self.search {
            Search::Native(d) => d.tokens(),
            Search::Python(d) => d.tokens(),
        }
    }

    fn num_tokens(&self) -> usize {
        self.tokens().len()
    }
}

/// Best-path decoding: the best token of each frame, repeats collapsed, blanks removed.
#[pyclass(name = "GreedyCTCDecoder", module = "ember._C.audio", frozen)]
pub struct PyGreedyDecoder {
    tokens: Dictionary,
    blank: usize,
}

#[pymethods]
impl PyGreedyDecoder {
    #[new]
    #[pyo3(signature = (tokens, blank_token="-".to_string()))]
    fn new(py: Python<'_>, tokens: &Bound<'_, PyAny>, blank_token: String) -> PyResult<Self> {
        let tokens = tokens_arg(py, tokens)?;
        let blank = check_token(&tokens, "blank_token", &blank_token)?;
        Ok(PyGreedyDecoder { tokens, blank })
    }

    /// `List[(tokens, score, timesteps)]`, one per utterance.
    #[pyo3(signature = (emissions, lengths=None))]
    fn decode<'py>(&self, py: Python<'py>, emissions: &Bound<'py, PyAny>, lengths: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyList>> {
        let b = Batch::new(emissions, lengths, self.tokens.len())?;
        let (values, lengths) = (b.values(), b.lengths.as_deref());
        let results = py
            .detach(|| ember_core::parallel::pool().install(|| greedy_decode_batch(values, b.batch, b.frames, b.tokens, lengths, self.blank)))
            .map_err(to_py)?;
        let rows = results.into_iter().map(|r: GreedyResult| {
            let tokens = int_tensor(r.tokens.iter().map(|&t| t as i64).collect())?;
            let timesteps = int_tensor(r.timesteps.iter().map(|&t| t as i32).collect())?;
            (tokens, r.score, timesteps).into_pyobject(py)
        });
        PyList::new(py, rows.collect::<PyResult<Vec<_>>>()?)
    }

    fn idxs_to_tokens(&self, idxs: Vec<i64>) -> PyResult<Vec<String>> {
        tokens_of(&self.tokens, idxs)
    }
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "audio")?;
    m.add_class::<PyCtcDecoder>()?;
    m.add_class::<PyGreedyDecoder>()?;
    parent.add_submodule(&m)?;
    Ok(())
}
