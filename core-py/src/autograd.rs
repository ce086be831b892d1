//! Autograd bindings: the tensor attributes (`requires_grad`, `grad`, `grad_fn`, hooks,
//! `backward`), grad mode, `autograd.grad`, graph nodes as Python objects, and custom
//! `autograd.Function`s (a node whose backward calls back into Python).
use crate::errors::to_py;
use crate::tensor::PyTensor;
use ember_core::autograd::{self, Ctx, Edge, Hook, HookHandle, Node};
use ember_core::{Error, ErrorKind, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// A Python exception raised inside a hook or a custom backward, waiting to be re-raised
    /// as itself once the engine returns.
    static PENDING: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// Converts a Python failure inside the engine into an Ember error, keeping the exception.
fn stash(e: PyErr) -> Error {
    let message = e.to_string();
    PENDING.with(|p| *p.borrow_mut() = Some(e));
    Error::new(ErrorKind::Runtime, message)
}

/// The Python exception for an engine error: the stashed one when Python raised it.
pub fn engine_err(e: Error) -> PyErr {
    PENDING.with(|p| p.borrow_mut().take()).unwrap_or_else(|| to_py(e))
}

fn run<T>(r: ember_core::Result<T>) -> PyResult<T> {
    r.map_err(engine_err)
}

fn tensors(list: &[PyRef<'_, PyTensor>]) -> Vec<Tensor> {
    list.iter().map(|t| t.t.clone()).collect()
}

/// A Python callable `hook(grad) -> Tensor | None` as an engine hook.
fn python_hook(f: Py<PyAny>) -> Hook {
    Arc::new(move |g: &Tensor| {
        Python::attach(|py| {
            let r = f.call1(py, (PyTensor::new(g.clone()),)).map_err(stash)?;
            if r.is_none(py) {
                return Ok(None);
            }
            let t = r.cast_bound::<PyTensor>(py).map_err(|_| stash(PyTypeError::new_err(format!("hook returned an object of type {} where a Tensor or None was expected", r.bind(py).get_type()))))?;
            Ok(Some(t.borrow().t.clone()))
        })
    })
}

#[pymethods]
impl PyTensor {
    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.t.requires_grad()
    }
    #[setter]
    fn set_requires_grad(&self, flag: bool) -> PyResult<()> {
        self.t.set_requires_grad(flag).map_err(to_py)
    }
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: Py<Self>, py: Python<'_>, requires_grad: bool) -> PyResult<Py<Self>> {
        slf.borrow(py).t.set_requires_grad(requires_grad).map_err(to_py)?;
        Ok(slf)
    }
    #[getter(grad)]
    fn get_grad(&self) -> Option<PyTensor> {
        self.t.grad().map(PyTensor::new)
    }
    #[setter(grad)]
    fn set_grad(&self, grad: Option<PyRef<'_, PyTensor>>) -> PyResult<()> {
        self.t.set_grad(grad.map(|g| g.t.clone())).map_err(to_py)
    }
    #[getter]
    fn grad_fn(&self) -> Option<PyNode> {
        self.t.grad_fn().map(PyNode)
    }
    #[getter]
    fn is_leaf(&self) -> bool {
        self.t.is_leaf()
    }
    #[getter]
    fn retains_grad(&self) -> bool {
        self.t.retains_grad()
    }
    #[getter]
    fn output_nr(&self) -> usize {
        self.t.output_nr()
    }
    fn retain_grad(&self) -> PyResult<()> {
        self.t.retain_grad().map_err(to_py)
    }
    /// `hook(grad)` runs when this tensor's gradient is computed and may return a replacement.
    fn register_hook(&self, hook: Py<PyAny>) -> PyResult<PyHookHandle> {
        Ok(PyHookHandle(Some(self.t.register_hook(python_hook(hook)).map_err(to_py)?)))
    }
    /// The same data without autograd history (shares storage and version counter).
    fn detach(&self) -> PyTensor {
        PyTensor::new(self.t.detach())
    }
    fn _detach_in_place(&self) {
        self.t.detach_in_place()
    }
    /// `x.data = y`: this object now holds `y`'s data, keeping its own autograd flags.
    fn _set_data(&mut self, value: PyRef<'_, PyTensor>) -> PyResult<()> {
        let t = value.t.detach();
        if self.t.requires_grad() && self.t.is_leaf() {
            t.set_requires_grad(true).map_err(to_py)?;
            if let Some(g) = self.t.grad().filter(|g| g.shape() == t.shape() && g.dtype() == t.dtype()) {
                t.set_grad(Some(g)).map_err(to_py)?;
            }
        }
        self.t = t;
        Ok(())
    }
    #[getter]
    fn _base(&self) -> Option<PyTensor> {
        self.t.base().cloned().map(PyTensor::new)
    }
    fn _is_view(&self) -> bool {
        self.t.base().is_some()
    }
    #[pyo3(signature = (gradient, retain_graph, create_graph, inputs))]
    fn _backward(&self, py: Python<'_>, gradient: Option<PyRef<'_, PyTensor>>, retain_graph: bool, create_graph: bool, inputs: Option<Vec<PyRef<'_, PyTensor>>>) -> PyResult<()> {
        let (t, g, inputs) = (self.t.clone(), gradient.map(|g| g.t.clone()), inputs.map(|i| tensors(&i)));
        run(py.detach(|| t.backward(g, retain_graph, create_graph, inputs.as_deref())))
    }
}

/// The handle `register_hook` returns.
#[pyclass(name = "RemovableHandle", module = "ember.utils.hooks")]
pub struct PyHookHandle(Option<HookHandle>);

#[pymethods]
impl PyHookHandle {
    fn remove(&mut self) {
        if let Some(h) = self.0.take() {
            h.remove();
        }
    }
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __exit__(&mut self, _a: Py<PyAny>, _b: Py<PyAny>, _c: Py<PyAny>) {
        self.remove();
    }
}

/// A node of the graph (`tensor.grad_fn`): `name()`, `next_functions`, and for a leaf's
/// accumulator its `variable`.
#[pyclass(name = "Node", module = "ember.autograd.graph", frozen)]
pub struct PyNode(Arc<Node>);

fn edge_tuple<'py>(py: Python<'py>, e: &Option<Edge>) -> PyResult<Bound<'py, PyTuple>> {
    match e {
        Some(e) => (PyNode(e.node.clone()), e.input_nr).into_pyobject(py),
        None => (py.None(), 0usize).into_pyobject(py),
    }
}

#[pymethods]
impl PyNode {
    fn name(&self) -> String {
        self.0.name().to_string()
    }
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self.0.next_edges().iter().map(|e| edge_tuple(py, e)).collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }
    #[getter]
    fn variable(&self) -> PyResult<PyTensor> {
        self.0.variable().cloned().map(PyTensor::new).ok_or_else(|| pyo3::exceptions::PyAttributeError::new_err(format!("'{}' object has no attribute 'variable'", self.0.name())))
    }
    fn __repr__(&self) -> String {
        format!("<{} object at {:#x}>", self.0.name(), Arc::as_ptr(&self.0) as usize)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyNode>().is_ok_and(|o| Arc::ptr_eq(&self.0, &o.get().0))
    }
    fn __hash__(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

// ---- grad mode ----

#[pyfunction]
fn is_grad_enabled() -> bool {
    autograd::is_grad_enabled()
}
#[pyfunction]
fn _set_grad_enabled(on: bool) {
    autograd::set_grad_enabled(on)
}
#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    autograd::is_inference_mode()
}
#[pyfunction]
fn _set_inference_mode(on: bool) {
    autograd::set_inference_mode(on)
}

// ---- backward and grad ----

#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors, retain_graph, create_graph, inputs=None))]
fn _run_backward(
    py: Python<'_>,
    tensors: Vec<PyRef<'_, PyTensor>>,
    grad_tensors: Vec<Option<PyRef<'_, PyTensor>>>,
    retain_graph: bool,
    create_graph: bool,
    inputs: Option<Vec<PyRef<'_, PyTensor>>>,
) -> PyResult<()> {
    let roots = self::tensors(&tensors);
    let grads: Vec<Option<Tensor>> = grad_tensors.iter().map(|g| g.as_ref().map(|g| g.t.clone())).collect();
    let inputs = inputs.map(|i| self::tensors(&i));
    run(py.detach(|| autograd::backward(&roots, &grads, retain_graph, create_graph, inputs.as_deref())))
}

#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused))]
fn _run_grad(
    py: Python<'_>,
    outputs: Vec<PyRef<'_, PyTensor>>,
    inputs: Vec<PyRef<'_, PyTensor>>,
    grad_outputs: Vec<Option<PyRef<'_, PyTensor>>>,
    retain_graph: bool,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Vec<Option<PyTensor>>> {
    let (outs, ins) = (tensors(&outputs), tensors(&inputs));
    let grads: Vec<Option<Tensor>> = grad_outputs.iter().map(|g| g.as_ref().map(|g| g.t.clone())).collect();
    let r = run(py.detach(|| autograd::grad(&outs, &ins, &grads, retain_graph, create_graph, allow_unused)))?;
    Ok(r.into_iter().map(|g| g.map(PyTensor::new)).collect())
}

// ---- custom functions ----

/// Records the node of a custom `autograd.Function`: `backward(saved, grads)` is called with
/// the saved tensors (checked against in-place changes) and one gradient per output (`None`
/// where none flowed, unless `materialize`), and returns one gradient (or `None`) per input.
#[pyfunction]
#[pyo3(signature = (name, inputs, outputs, saved, backward, materialize))]
fn _record_function(
    name: String,
    inputs: Vec<PyRef<'_, PyTensor>>,
    outputs: Vec<PyRef<'_, PyTensor>>,
    saved: Vec<PyRef<'_, PyTensor>>,
    backward: Py<PyAny>,
    materialize: bool,
) -> PyResult<()> {
    let (ins, outs, saved) = (tensors(&inputs), tensors(&outputs), tensors(&saved));
    let n_saved = saved.len();
    let n_inputs = ins.len();
    let f = move |ctx: &Ctx, grads: &[Option<Tensor>]| {
        let saved = (0..n_saved).map(|i| ctx.saved(i)).collect::<ember_core::Result<Vec<_>>>()?;
        let grads: Vec<Option<Tensor>> = if materialize {
            grads.iter().zip(ctx.output_shapes()).map(|(g, (shape, dtype, device))| g.clone().map_or_else(|| Tensor::zeros_on(shape, dtype, device), Ok).map(Some)).collect::<ember_core::Result<_>>()?
        } else {
            grads.to_vec()
        };
        Python::attach(|py| {
            let saved = PyList::new(py, saved.into_iter().map(PyTensor::new)).map_err(stash)?;
            let grads = PyList::new(py, grads.into_iter().map(|g| g.map(PyTensor::new))).map_err(stash)?;
            let r = backward.call1(py, (saved, grads)).map_err(stash)?;
            let items: Vec<Option<PyRef<'_, PyTensor>>> = r.extract(py).map_err(|e: PyErr| stash(e))?;
            if items.len() != n_inputs {
                return Err(stash(PyRuntimeError::new_err(format!("function backward returned {} gradients for {n_inputs} inputs", items.len()))));
            }
            Ok(items.into_iter().map(|g| g.map(|g| g.t.clone())).collect())
        })
    };
    fn refs(v: &[Tensor]) -> Vec<&Tensor> {
        v.iter().collect()
    }
    autograd::record_raw(name, &refs(&ins), &refs(&outs), &refs(&saved), Box::new(f)).map_err(to_py)
}

/// Checks that a custom function may modify `t` in place (`ctx.mark_dirty`): not a leaf, or a
/// view of one, that requires grad.
#[pyfunction]
fn _check_inplace(t: PyRef<'_, PyTensor>) -> PyResult<()> {
    autograd::inplace::check_writable(&t.t).map_err(to_py)
}

// ---- forward mode ----

#[pyfunction]
fn _enter_dual_level() -> PyResult<u64> {
    autograd::forward::enter_dual_level().map_err(to_py)
}

#[pyfunction]
fn _exit_dual_level(level: u64) -> PyResult<()> {
    autograd::forward::exit_dual_level(level).map_err(to_py)
}

#[pyfunction]
fn _make_dual(primal: PyRef<'_, PyTensor>, tangent: PyRef<'_, PyTensor>, level: u64) -> PyResult<PyTensor> {
    autograd::forward::make_dual(&primal.t, &tangent.t, level).map(PyTensor::new).map_err(to_py)
}

#[pyfunction]
fn _unpack_dual(t: PyRef<'_, PyTensor>, level: u64) -> PyResult<(PyTensor, Option<PyTensor>)> {
    let (primal, tangent) = autograd::forward::unpack_dual(&t.t, level).map_err(to_py)?;
    Ok((PyTensor::new(primal), tangent.map(PyTensor::new)))
}

/// The tangent of `t` in the open level, if any.
#[pyfunction]
fn _fw_tangent(t: PyRef<'_, PyTensor>) -> Option<PyTensor> {
    autograd::forward::tangent(&t.t).map(PyTensor::new)
}

/// Gives a custom function's result the tangent its `jvp` returned.
#[pyfunction]
fn _set_fw_tangent(t: PyRef<'_, PyTensor>, tangent: PyRef<'_, PyTensor>) -> PyResult<()> {
    autograd::forward::set_result_tangent(&t.t, &tangent.t).map_err(to_py)
}

/// Turns tangent propagation off or on for this thread; returns the previous state.
#[pyfunction]
fn _set_fw_suspended(on: bool) -> bool {
    autograd::forward::set_suspended(on)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNode>()?;
    m.add_class::<PyHookHandle>()?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(_run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_run_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_record_function, m)?)?;
    m.add_function(wrap_pyfunction!(_check_inplace, m)?)?;
    m.add_function(wrap_pyfunction!(_enter_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_exit_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_make_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_unpack_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_fw_tangent, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fw_tangent, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fw_suspended, m)?)?;
    Ok(())
}
