//! A second backend, registered as `privateuseone`, serving ops through the contract alone: its
//! memory is its own (`ExtStorage`, which no CPU kernel can read), and each family it serves
//! runs by wrapping that memory as CPU tensors and calling the CPU backend, counting the calls.
//! It serves memory, copies, fills, elementwise ops, reductions, random draws, gather, advanced
//! indexing, sort, convolution and the complex FFT, and leaves matrix products, scatter, scans
//! and linear algebra out.
use ember_core::backend::{self, cpu::Cpu, Backend};
use ember_core::ops::binary::{binary, BinaryOp, Operand, Scalar};
use ember_core::ops::conv::{conv, ConvPadding, Geom};
use ember_core::ops::fft::{fft_c2c, Norm};
use ember_core::ops::linalg::ops::inv;
use ember_core::ops::index::{gather, index, scatter_, IndexShape, Reduce};
use ember_core::ops::matmul::matmul;
use ember_core::ops::random::{self, Distribution, Generator};
use ember_core::ops::reduce::{reduce, ReduceOp};
use ember_core::ops::scan::{scan, ScanOp};
use ember_core::ops::sort::sort;
use ember_core::ops::unary::{unary, UnaryOp};
use ember_core::storage::{CpuStorage, ExtStorage, Storage};
use ember_core::{DType, Device, ErrorKind, Tensor};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};

const FAKE: Device = Device::PrivateUse1(0);

struct Fake;

/// Calls per family, for the tests to see which backend served an op.
static CALLS: Mutex<Option<HashMap<&'static str, usize>>> = Mutex::new(None);

/// The fake device's memory: a host buffer that only this backend unwraps.
struct Memory(CpuStorage);

impl Fake {
    fn count(&self, family: &'static str) {
        *CALLS.lock().unwrap().get_or_insert_with(HashMap::new).entry(family).or_default() += 1;
    }

    /// `t` (on the fake device) as a CPU tensor over the same memory, same layout.
    fn host_view(t: &Tensor) -> Tensor {
        let Storage::Ext(ext) = t.storage().as_ref() else { panic!("not a fake tensor: {}", t.device()) };
        let memory = ext.memory.downcast_ref::<Memory>().expect("fake memory");
        let owner = t.storage().clone();
        let cpu = unsafe { CpuStorage::from_foreign(memory.0.as_ptr(), memory.0.bytes(), Box::new(owner)) };
        Tensor::from_parts(Arc::new(Storage::Cpu(cpu)), t.layout().clone(), t.dtype())
    }

    fn host(o: Operand) -> (Option<Tensor>, Option<Scalar>) {
        match o {
            Operand::Tensor(t) => (Some(Self::host_view(t)), None),
            Operand::Scalar(s) => (None, Some(s)),
        }
    }
}

fn operand<'a>(t: &'a Option<Tensor>, s: Option<Scalar>) -> Operand<'a> {
    t.as_ref().map_or_else(|| Operand::Scalar(s.unwrap()), Operand::Tensor)
}

impl Backend for Fake {
    fn name(&self) -> &'static str {
        "PrivateUse1"
    }
    fn alloc(&self, device: Device, bytes: usize, zeroed: bool) -> ember_core::Result<Storage> {
        self.count("alloc");
        let memory = if zeroed { CpuStorage::zeroed(bytes)? } else { CpuStorage::uninit(bytes)? };
        Ok(Storage::Ext(ExtStorage { device, bytes, memory: Box::new(Memory(memory)) }))
    }
    fn upload(&self, host: &Tensor, dst: &Tensor) -> ember_core::Result<()> {
        self.count("upload");
        Cpu.copy(host, &Self::host_view(dst))
    }
    fn download(&self, src: &Tensor, host: &Tensor) -> ember_core::Result<()> {
        self.count("download");
        Cpu.copy(&Self::host_view(src), host)
    }
    fn copy(&self, src: &Tensor, dst: &Tensor) -> ember_core::Result<()> {
        self.count("copy");
        Cpu.copy(&Self::host_view(src), &Self::host_view(dst))
    }
    fn fill(&self, dst: &Tensor, value: Scalar) -> ember_core::Result<()> {
        self.count("fill");
        Cpu.fill(&Self::host_view(dst), value)
    }
    fn unary(&self, op: UnaryOp, x: &Tensor, out: &Tensor) -> ember_core::Result<()> {
        self.count("unary");
        Cpu.unary(op, &Self::host_view(x), &Self::host_view(out))
    }
    fn binary(&self, op: BinaryOp, a: Operand, b: Operand, compute: DType, out: &Tensor) -> ember_core::Result<()> {
        self.count("binary");
        let ((ta, sa), (tb, sb)) = (Self::host(a), Self::host(b));
        Cpu.binary(op, operand(&ta, sa), operand(&tb, sb), compute, &Self::host_view(out))
    }
    fn reduce(&self, op: ReduceOp, x: &Tensor, mask: &[bool], out: &Tensor) -> ember_core::Result<()> {
        self.count("reduce");
        Cpu.reduce(op, &Self::host_view(x), mask, &Self::host_view(out))
    }
    fn random(&self, dist: Distribution, key: u64, base: u64, out: &Tensor) -> ember_core::Result<()> {
        self.count("random");
        Cpu.random(dist, key, base, &Self::host_view(out))
    }
    fn gather(&self, x: &Tensor, dim: usize, index: &Tensor, out: &Tensor) -> ember_core::Result<()> {
        self.count("index");
        Cpu.gather(&Self::host_view(x), dim, &Self::host_view(index), &Self::host_view(out))
    }
    fn sort(&self, x: &Tensor, dim: usize, descending: bool, values: &Tensor, indices: &Tensor) -> ember_core::Result<()> {
        self.count("sort");
        Cpu.sort(&Self::host_view(x), dim, descending, &Self::host_view(values), &Self::host_view(indices))
    }
    fn conv(&self, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> ember_core::Result<Tensor> {
        self.count("conv");
        let bias = bias.map(Self::host_view);
        Cpu.conv(&Self::host_view(x), &Self::host_view(weight), bias.as_ref(), groups, geom)?.to_device(FAKE)
    }
    fn fft_c2c(&self, x: &Tensor, dims: &[usize], forward: bool, scale: f64) -> ember_core::Result<Tensor> {
        self.count("fft");
        Cpu.fft_c2c(&Self::host_view(x), dims, forward, scale)?.to_device(FAKE)
    }
    fn index(&self, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, wrap: bool, out: &Tensor) -> ember_core::Result<()> {
        self.count("index");
        let host: Vec<(usize, Tensor)> = indices.iter().map(|(d, i)| (*d, Self::host_view(i))).collect();
        Cpu.index(&Self::host_view(x), &host, shape, wrap, &Self::host_view(out))
    }
}

fn fake() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| backend::register_private_use1(Box::new(Fake)).unwrap());
}

fn calls(family: &'static str) -> usize {
    CALLS.lock().unwrap().as_ref().and_then(|c| c.get(family).copied()).unwrap_or(0)
}

fn on_fake(values: Vec<f32>, shape: &[usize]) -> Tensor {
    fake();
    Tensor::from_vec(values, shape).unwrap().to_device(FAKE).unwrap()
}

#[test]
fn tensors_move_to_the_fake_device_and_back() {
    let x = on_fake(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    assert_eq!(x.device(), FAKE);
    assert!(matches!(x.storage().as_ref(), Storage::Ext(_)));
    assert!(calls("upload") >= 1);
    // A transposed view copied to the CPU: the fake backend's strided copy, then a download.
    let back = x.t().unwrap().to_device(Device::Cpu).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!(x.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn elementwise_ops_and_reductions_run_on_the_fake_backend() {
    let x = on_fake(vec![1.0, -2.0, 3.0, -4.0], &[2, 2]);
    let (b0, u0, r0) = (calls("binary"), calls("unary"), calls("reduce"));
    let y = binary(BinaryOp::Mul, Operand::Tensor(&x), Operand::Scalar(Scalar::Float(2.0))).unwrap();
    let z = unary(UnaryOp::Abs, &y).unwrap();
    let s = reduce(ReduceOp::Sum, &z, Some(&[1]), false, None).unwrap();
    assert_eq!((y.device(), z.device(), s.device()), (FAKE, FAKE, FAKE));
    assert_eq!(s.to_vec::<f32>().unwrap(), [6.0, 14.0]);
    assert!(calls("binary") > b0 && calls("unary") > u0 && calls("reduce") > r0);
    // A 0-d CPU tensor goes with a fake one, as a number does.
    let two = Tensor::scalar(2.0f32);
    let w = binary(BinaryOp::Add, Operand::Tensor(&x), Operand::Tensor(&two)).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), [3.0, 0.0, 5.0, -2.0]);
}

#[test]
fn autograd_keeps_gradients_on_the_fake_device() {
    let x = on_fake(vec![1.0, 2.0, 3.0], &[3]);
    x.set_requires_grad(true).unwrap();
    let y = binary(BinaryOp::Mul, Operand::Tensor(&x), Operand::Tensor(&x)).unwrap();
    let loss = reduce(ReduceOp::Sum, &y, None, false, None).unwrap();
    loss.backward(None, false, false, None).unwrap();
    let g = x.grad().expect("a gradient");
    assert_eq!(g.device(), FAKE);
    assert_eq!(g.to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0]);
}

#[test]
fn random_draws_match_the_cpu_for_a_seed() {
    fake();
    let draw = |device| random::normal(&mut Generator::new(7), &[5], 0.0, 1.0, DType::F32, device).unwrap();
    let (cpu, other) = (draw(Device::Cpu), draw(FAKE));
    assert_eq!(other.device(), FAKE);
    assert_eq!(cpu.to_vec::<f32>().unwrap(), other.to_vec::<f32>().unwrap());
}

#[test]
fn a_family_the_backend_lacks_is_refused_with_pytorchs_error() {
    let a = on_fake(vec![1.0; 4], &[2, 2]);
    let err = matmul(&a, &a).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotImplemented);
    assert!(err.message.starts_with("Could not run 'aten::bmm' with arguments from the 'PrivateUse1' backend"), "{}", err.message);
}

#[test]
fn indexing_runs_on_the_fake_backend_which_checks_the_indices() {
    let x = on_fake(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let ints = |v: Vec<i64>, shape: &[usize]| Tensor::from_vec(v, shape).unwrap().to_device(FAKE).unwrap();
    let before = calls("index");
    let picked = gather(&x, 1, &ints(vec![2, 0], &[1, 2])).unwrap();
    assert_eq!(picked.device(), FAKE);
    assert_eq!(picked.to_vec::<f32>().unwrap(), [3.0, 1.0]);
    let last_row = index(&x, &[(0, ints(vec![-1], &[1]))]).unwrap();
    assert_eq!(last_row.to_vec::<f32>().unwrap(), [4.0, 5.0, 6.0]);
    assert_eq!(calls("index"), before + 2);
    let err = gather(&x, 1, &ints(vec![3], &[1, 1])).unwrap_err();
    assert_eq!((err.kind, err.message.as_str()), (ErrorKind::Index, "index 3 is out of bounds for dimension 1 with size 3"));
    let err = scatter_(&x, 1, &ints(vec![0, 1], &[1, 2]), &picked, Reduce::Sum, true).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotImplemented);
    assert!(err.message.starts_with("Could not run 'aten::scatter' with arguments from the 'PrivateUse1' backend"), "{}", err.message);
}

#[test]
fn sort_runs_on_the_fake_backend_and_a_scan_is_refused() {
    let x = on_fake(vec![3.0, 1.0, 2.0, 0.0, 5.0, 4.0], &[2, 3]);
    let before = calls("sort");
    let (values, indices) = sort(&x.t().unwrap(), 0, true).unwrap();
    assert_eq!((values.device(), indices.device()), (FAKE, FAKE));
    assert_eq!(values.to_vec::<f32>().unwrap(), [3.0, 5.0, 2.0, 4.0, 1.0, 0.0]);
    assert_eq!(indices.to_vec::<i64>().unwrap(), [0, 1, 2, 2, 1, 0]);
    assert_eq!(calls("sort"), before + 1);
    let err = scan(ScanOp::Sum, &x, 1, None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotImplemented);
    assert!(err.message.starts_with("Could not run 'aten::cumsum' with arguments from the 'PrivateUse1' backend"), "{}", err.message);
}

#[test]
fn conv_and_fft_run_on_the_fake_backend_and_linalg_is_refused() {
    let values: Vec<f32> = (0..32).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
    let (x, w) = (Tensor::from_vec(values[..18].to_vec(), &[1, 2, 3, 3]).unwrap(), Tensor::from_vec(values[14..30].to_vec(), &[2, 2, 2, 2]).unwrap());
    let on = |t: &Tensor| t.to_device(FAKE).unwrap();
    fake();
    let before = calls("conv");
    let y = conv(&on(&x), &on(&w), None, &[1], ConvPadding::Explicit(&[1]), &[1], 1, 2).unwrap();
    assert_eq!((y.device(), calls("conv")), (FAKE, before + 1));
    let want = conv(&x, &w, None, &[1], ConvPadding::Explicit(&[1]), &[1], 1, 2).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    let z = x.to_dtype(DType::C64).unwrap();
    let f = fft_c2c(&on(&z), &[2, 3], Norm::Ortho, true).unwrap();
    assert_eq!(f.device(), FAKE);
    let want = fft_c2c(&z, &[2, 3], Norm::Ortho, true).unwrap();
    assert_eq!(f.to_device(Device::Cpu).unwrap().to_vec::<ember_core::dtype::CFloat>().unwrap(), want.to_vec::<ember_core::dtype::CFloat>().unwrap());
    let err = inv(&on(&Tensor::from_vec(vec![2.0f32, 0.0, 0.0, 2.0], &[2, 2]).unwrap())).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotImplemented);
    assert!(err.message.starts_with("Could not run 'aten::linalg_inv_ex' with arguments from the 'PrivateUse1' backend"), "{}", err.message);
}

#[test]
fn mixing_devices_in_one_op_is_refused() {
    let a = on_fake(vec![1.0, 2.0], &[2]);
    let b = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let err = binary(BinaryOp::Add, Operand::Tensor(&a), Operand::Tensor(&b)).unwrap_err();
    assert_eq!(err.message, "Expected all tensors to be on the same device, but found at least two devices, privateuseone:0 and cpu!");
    if backend::cuda::device_count() == 0 {
        let err = Tensor::zeros_on(&[2], DType::F32, Device::Cuda(0)).unwrap_err();
        assert!(err.message.starts_with("device cuda:0 is not available: "), "{}", err.message);
    }
}
