//! Indexing (`kernels/index.cu`; `ops::index` holds the semantics, `backend::cpu::index` the
//! reference): advanced-index get and put, gather/scatter along a dim, nonzero, masked_select,
//! tril/triu, embedding_bag and embedding_renorm_.
//!
//! Index values are checked on the device. A checking kernel records the smallest position of
//! an index out of range in a flag word per index tensor; the host reads the flags back (one
//! wait) and raises the CPU's IndexError, naming the value found there. Kernels that write
//! into an existing tensor run only after that check, so a bad index changes nothing.
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::strided::Strided;
use super::Family;
use crate::backend::unsupported;
use crate::bail;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::binary::Scalar;
use crate::ops::embedding::BagMode;
use crate::ops::index::{IndexShape, Reduce};
use crate::tensor::Tensor;
use cudarc::driver::{sys, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};

pub const FAMILY: Family = Family { name: "index", source: include_str!("kernels/index.cu"), kernel_names };

/// The element widths of the kernels that only move elements (`with_width` on the CPU).
const WIDTHS: [usize; 5] = [1, 2, 4, 8, 16];

fn width_name(dtype: DType) -> &'static str {
    match dtype.size() {
        1 => "w1",
        2 => "w2",
        4 => "w4",
        8 => "w8",
        _ => "w16",
    }
}

/// The scatter reductions with a kernel of their own (`Mean` sums, then divides).
fn reduce_name(op: Reduce) -> &'static str {
    match op {
        Reduce::Assign => "assign",
        Reduce::Sum | Reduce::Mean => "sum",
        Reduce::Prod => "prod",
        Reduce::Amax => "amax",
        Reduce::Amin => "amin",
    }
}

fn kernel_names() -> Vec<String> {
    let mut names: Vec<String> = vec!["index_offsets_i32".into(), "index_offsets_i64".into(), "scatter_count".into()];
    for w in WIDTHS.map(|size| format!("w{size}")) {
        for k in ["index_get", "index_set", "gather", "scatter_assign", "tri", "masked_select"] {
            names.push(format!("{k}_{w}"));
        }
    }
    names.extend(DTYPES.iter().filter(|d| d.is_float()).filter_map(|&d| dtype_name(d)).map(|n| format!("embedding_renorm_{n}")));
    for n in DTYPES.iter().filter_map(|&d| dtype_name(d)) {
        for k in ["index_add", "embedding_bag", "scatter_sum", "scatter_prod", "scatter_amax", "scatter_amin", "scatter_identity", "scatter_mean", "nonzero_count", "nonzero_write"] {
            names.push(format!("{k}_{n}"));
        }
    }
    names
}

/// The most dims `nonzero` writes coordinates for (`MAX_COORD_DIMS` in index.cu).
const MAX_COORD_DIMS: usize = 25;

/// `Dims` in index.cu: the shape whose coordinates nonzero writes.
#[repr(C)]
#[derive(Clone, Copy)]
struct Dims {
    ndim: i64,
    size: [i64; MAX_COORD_DIMS],
}

// A plain C struct, passed by value as the kernels declare it.
unsafe impl DeviceRepr for Dims {}

fn launch_error(kernel: &str) -> impl FnOnce(cudarc::driver::DriverError) -> crate::error::Error + '_ {
    move |e| cuda_error(&format!("cuLaunchKernel({kernel})"), e)
}

/// `t`'s memory seen with another shape and strides (from its own offset): the layouts the
/// kernels walk (`Strided::of` reads only the layout).
fn view(t: &Tensor, shape: &[usize], strides: &[isize]) -> Tensor {
    t.with_layout(Layout::new(shape.to_vec(), strides.to_vec(), t.layout().offset()))
}

/// One flag word per index tensor for the checking kernels: the smallest position of an index
/// out of range, `u64::MAX` while none is.
struct BadIndex {
    flags: CudaSlice<u64>,
}

impl BadIndex {
    fn new(cuda: &Cuda, count: usize) -> Result<BadIndex> {
        let flags = cuda.stream().clone_htod(&vec![u64::MAX; count]).map_err(|e| cuda_error("cuMemcpyHtoDAsync", e))?;
        Ok(BadIndex { flags })
    }

    /// The address of flag `k`.
    fn slot(&self, cuda: &Cuda, k: usize) -> sys::CUdeviceptr {
        self.flags.device_ptr(cuda.stream()).0 + (k * 8) as u64
    }

    /// Waits for the checks, then raises the CPU's IndexError for the first index tensor (in
    /// `checked` order: (index as the kernel read it, its dim, that dim's size)) that had one
    /// out of range.
    fn raise(&self, cuda: &Cuda, checked: &[(Tensor, usize, usize)]) -> Result<()> {
        let found = cuda.stream().clone_dtoh(&self.flags).map_err(|e| cuda_error("cuMemcpyDtoHAsync", e))?;
        cuda.stream().synchronize().map_err(|e| cuda_error("cuStreamSynchronize", e))?;
        for ((index, dim, size), &position) in checked.iter().zip(&found) {
            if position != u64::MAX {
                let value = element(index, position as usize)?;
                bail!(Index, "index {value} is out of bounds for dimension {dim} with size {size}");
            }
        }
        Ok(())
    }
}

/// Element `position` (row-major) of the integer tensor `t`, read back from the device.
fn element(t: &Tensor, position: usize) -> Result<i64> {
    let coords = crate::strided::unravel(position, t.shape());
    let offset = coords.iter().zip(t.strides()).map(|(&c, &s)| c as isize * s).sum::<isize>() + t.layout().offset() as isize;
    let one = t.with_layout(Layout::new(vec![], vec![], offset as usize));
    Ok(one.to_device(Device::Cpu)?.to_dtype(DType::I64)?.to_vec::<i64>()?[0])
}

// ---- advanced indexing ----

/// Each advanced-index position's element offset into `x` (a contiguous int64 tensor of
/// `shape.b_shape`), every index checked against its dim (wrapped if `wrap`); `None` when no
/// element moves and nothing is checked (see `offsets` in backend/cpu/index.rs).
fn offsets(cuda: &Cuda, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, wrap: bool) -> Result<Option<Tensor>> {
    let nb: usize = shape.b_shape.iter().product();
    if nb == 0 || (wrap && shape.rest.iter().any(|&d| x.shape()[d] == 0)) {
        return Ok(None);
    }
    let offsets = Tensor::zeros_on(&shape.b_shape, DType::I64, x.device())?;
    let po = cuda.base(&offsets)?;
    let bad = BadIndex::new(cuda, indices.len())?;
    let mut checked = Vec::with_capacity(indices.len());
    for (k, (d, idx)) in indices.iter().enumerate() {
        let name = match idx.dtype() {
            DType::I32 => "index_offsets_i32",
            DType::I64 => "index_offsets_i64",
            other => return unsupported("index.Tensor", "CUDA", other),
        };
        let broadcast = idx.broadcast_to(&shape.b_shape)?;
        let (size, stride) = (x.shape()[*d] as i64, x.strides()[*d] as i64);
        let (pi, li, wrap_flag, count, flag) = (cuda.base(idx)?, Strided::of(&broadcast)?, wrap as i32, nb as i64, bad.slot(cuda, k));
        let f = cuda.function(&FAMILY, name)?;
        let mut launch = cuda.stream().launch_builder(&f);
        launch.arg(&pi).arg(&li).arg(&size).arg(&stride).arg(&wrap_flag).arg(&po).arg(&count).arg(&flag);
        unsafe { launch.launch(cuda.config(nb)) }.map_err(launch_error(name))?;
        checked.push((broadcast, *d, size as usize));
    }
    bad.raise(cuda, &checked)?;
    Ok(Some(offsets))
}

/// The pieces every advanced-index move takes: `x`'s rest dims as a layout over `x`'s memory,
/// and the indexing result (`out` or `values`) in work order (index dims first).
fn move_layouts(x: &Tensor, shape: &IndexShape, result: &Tensor) -> Result<(Strided, Strided, i64)> {
    let (rest_shape, rest_strides) = shape.rest_of(x);
    let x_rest = Strided::of(&view(x, &rest_shape, &rest_strides))?;
    let work = Strided::of(&result.permute(&shape.to_work)?)?;
    Ok((x_rest, work, rest_shape.iter().product::<usize>() as i64))
}

/// `out = x[indices]` (see `Backend::index`).
pub fn index(cuda: &Cuda, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, wrap: bool, out: &Tensor) -> Result<()> {
    let Some(offsets) = offsets(cuda, x, indices, shape, wrap)? else { return Ok(()) };
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let (x_rest, work, rest_n) = move_layouts(x, shape, out)?;
    let name = format!("index_get_{}", width_name(x.dtype()));
    let (px, po, pout, count) = (cuda.base(x)?, cuda.base(&offsets)?, cuda.base(out)?, n as i64);
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&x_rest).arg(&po).arg(&pout).arg(&work).arg(&rest_n).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(launch_error(&name))?;
    Ok(())
}

/// `x[indices] = values`, or `+=` with `accumulate` (see `Backend::index_put`).
pub fn index_put(cuda: &Cuda, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, values: &Tensor, accumulate: bool, wrap: bool) -> Result<()> {
    let name = if accumulate {
        match dtype_name(x.dtype()) {
            Some(d) => format!("index_add_{d}"),
            None => return unsupported("index_put_", "CUDA", x.dtype()),
        }
    } else {
        format!("index_set_{}", width_name(x.dtype()))
    };
    let Some(offsets) = offsets(cuda, x, indices, shape, wrap)? else { return Ok(()) };
    let n = values.numel();
    if n == 0 {
        return Ok(());
    }
    let (x_rest, work, rest_n) = move_layouts(x, shape, values)?;
    let (px, po, pv, count) = (cuda.base(x)?, cuda.base(&offsets)?, cuda.base(values)?, n as i64);
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&x_rest).arg(&po).arg(&pv).arg(&work).arg(&rest_n).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(launch_error(&name))?;
    Ok(())
}

// ---- gather / scatter along a dim ----

/// How position `e` of `index` (row-major) addresses `t` along `dim`: `t` seen with `index`'s
/// shape and a zero stride along `dim` gives the base, plus the index value times the returned
/// stride. A 0-d `t` or `index` is taken as one element, as on the CPU.
fn along(t: &Tensor, index: &Tensor, dim: usize) -> Result<(Strided, i64)> {
    let mut strides = if t.ndim() == index.ndim() { t.strides().to_vec() } else { vec![0; index.ndim()] };
    if let Some(s) = strides.get_mut(dim) {
        *s = 0;
    }
    let stride = if t.ndim() == 0 { 0 } else { t.strides()[dim] as i64 };
    Ok((Strided::of(&view(t, index.shape(), &strides))?, stride))
}

/// `t` (of `index`'s rank) read over `index`'s shape.
fn over_index(t: &Tensor, index: &Tensor) -> Result<Strided> {
    let strides = if t.ndim() == index.ndim() { t.strides().to_vec() } else { vec![0; index.ndim()] };
    Strided::of(&view(t, index.shape(), &strides))
}

/// The size of `x`'s `dim` as gather and scatter check indices against (1 for a 0-d `x`).
fn dim_size(x: &Tensor, dim: usize) -> usize {
    x.shape().get(dim).copied().unwrap_or(1)
}

/// `out[..j..] = x[..index[..j..]..]` along `dim` (see `Backend::gather`); `out` is fresh, so
/// the kernel checks as it goes.
pub fn gather(cuda: &Cuda, x: &Tensor, dim: usize, index: &Tensor, out: &Tensor) -> Result<()> {
    let n = index.numel();
    if n == 0 {
        return Ok(());
    }
    let size = dim_size(x, dim);
    let (base, stride) = along(x, index, dim)?;
    let bad = BadIndex::new(cuda, 1)?;
    let name = format!("gather_{}", width_name(x.dtype()));
    let (px, pi, li, pout, lo) = (cuda.base(x)?, cuda.base(index)?, Strided::of(index)?, cuda.base(out)?, Strided::of(out)?);
    let (size_arg, count, flag) = (size as i64, n as i64, bad.slot(cuda, 0));
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&base).arg(&stride).arg(&size_arg).arg(&pi).arg(&li).arg(&pout).arg(&lo).arg(&count).arg(&flag);
    unsafe { launch.launch(cuda.config(n)) }.map_err(launch_error(&name))?;
    bad.raise(cuda, &[(index.clone(), dim, size)])
}

/// Checks every value of the int64 `index` against `size` (no wrapping), before a scatter
/// writes through it.
fn check_index(cuda: &Cuda, index: &Tensor, dim: usize, size: usize) -> Result<()> {
    let bad = BadIndex::new(cuda, 1)?;
    let n = index.numel();
    let (pi, li, size_arg, stride, wrap, offsets, count, flag) = (cuda.base(index)?, Strided::of(index)?, size as i64, 0i64, 0i32, 0u64, n as i64, bad.slot(cuda, 0));
    let f = cuda.function(&FAMILY, "index_offsets_i64")?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&pi).arg(&li).arg(&size_arg).arg(&stride).arg(&wrap).arg(&offsets).arg(&count).arg(&flag);
    unsafe { launch.launch(cuda.config(n)) }.map_err(launch_error("index_offsets_i64"))?;
    bad.raise(cuda, &[(index.clone(), dim, size)])
}

/// The arguments every scatter kernel starts with: the destination through `along`, then the
/// index and its layout.
struct Targets {
    ptr: sys::CUdeviceptr,
    base: Strided,
    stride: i64,
    index: sys::CUdeviceptr,
    index_layout: Strided,
    count: i64,
}

impl Targets {
    fn new(cuda: &Cuda, t: &Tensor, dim: usize, index: &Tensor) -> Result<Targets> {
        let (base, stride) = along(t, index, dim)?;
        Ok(Targets { ptr: cuda.base(t)?, base, stride, index: cuda.base(index)?, index_layout: Strided::of(index)?, count: index.numel() as i64 })
    }

    /// Launches `name` over the index positions with these arguments, then `extra`'s.
    fn launch(&self, cuda: &Cuda, name: &str, extra: &[&dyn ExtraArg]) -> Result<()> {
        let f = cuda.function(&FAMILY, name)?;
        let mut launch = cuda.stream().launch_builder(&f);
        launch.arg(&self.ptr).arg(&self.base).arg(&self.stride).arg(&self.index).arg(&self.index_layout);
        for a in extra {
            a.push(&mut launch);
        }
        unsafe { launch.launch(cuda.config(self.count as usize)) }.map_err(launch_error(name))?;
        Ok(())
    }
}

/// A kernel argument pushed after `Targets`' own.
trait ExtraArg {
    fn push<'a>(&'a self, launch: &mut cudarc::driver::LaunchArgs<'a>);
}

impl<T: DeviceRepr> ExtraArg for T {
    fn push<'a>(&'a self, launch: &mut cudarc::driver::LaunchArgs<'a>) {
        launch.arg(self);
    }
}

/// `x[..index[..j..]..] (op)= src[..j..]` along `dim`, in place (see `Backend::scatter`).
pub fn scatter(cuda: &Cuda, x: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: Reduce, include_self: bool) -> Result<()> {
    let dtype = x.dtype();
    let name = match (op, dtype_name(dtype)) {
        (Reduce::Assign, _) => format!("scatter_assign_{}", width_name(dtype)),
        (_, Some(d)) => format!("scatter_{}_{d}", reduce_name(op)),
        (_, None) => return unsupported("scatter", "CUDA", dtype),
    };
    let n = index.numel();
    if n == 0 {
        return Ok(());
    }
    let size = dim_size(x, dim);
    check_index(cuda, index, dim, size)?;
    let targets = Targets::new(cuda, x, dim, index)?;
    if op != Reduce::Assign && !include_self {
        let which: i32 = match op {
            Reduce::Prod => 1,
            Reduce::Amax => 2,
            Reduce::Amin => 3,
            _ => 0,
        };
        targets.launch(cuda, &format!("scatter_identity_{}", dtype_name(dtype).unwrap_or_default()), &[&targets.count, &which])?;
    }
    let (ps, ls) = (cuda.base(src)?, over_index(src, index)?);
    targets.launch(cuda, &name, &[&ps, &ls, &targets.count])?;
    if op == Reduce::Mean {
        divide_by_counts(cuda, x, dim, index, include_self)?;
    }
    Ok(())
}

/// Finishes a `Mean` scatter: each destination divided by the number of values that met there
/// (plus itself with `include_self`).
fn divide_by_counts(cuda: &Cuda, x: &Tensor, dim: usize, index: &Tensor, include_self: bool) -> Result<()> {
    let counts = Tensor::zeros_on(x.shape(), DType::I64, x.device())?;
    if include_self {
        super::fill::run(cuda, &counts, Scalar::Int(1))?;
    }
    Targets::new(cuda, &counts, dim, index)?.launch(cuda, "scatter_count", &[&(index.numel() as i64)])?;
    let n = x.numel();
    let name = format!("scatter_mean_{}", dtype_name(x.dtype()).unwrap_or_default());
    let (px, lx, pc, count) = (cuda.base(x)?, Strided::of(x)?, cuda.base(&counts)?, n as i64);
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&lx).arg(&pc).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(launch_error(&name))?;
    Ok(())
}

// ---- tril / triu ----

/// `out` = `x` with the elements on one side of the `diagonal`-th diagonal zeroed (see
/// `Backend::tri`).
pub fn tri(cuda: &Cuda, x: &Tensor, diagonal: i64, upper: bool, out: &Tensor) -> Result<()> {
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let (rows, cols) = (x.shape()[x.ndim() - 2] as i64, x.shape()[x.ndim() - 1] as i64);
    let name = format!("tri_{}", width_name(x.dtype()));
    let (px, lx, po, lo, upper, count) = (cuda.base(x)?, Strided::of(x)?, cuda.base(out)?, Strided::of(out)?, upper as i32, n as i64);
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&lx).arg(&po).arg(&lo).arg(&rows).arg(&cols).arg(&diagonal).arg(&upper).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(launch_error(&name))?;
    Ok(())
}

// ---- nonzero and masked_select: per-chunk counts, their prefix on the host, then each
// chunk writes its rows ----

/// Threads per block of the compacting kernels (`SCAN_THREADS` in index.cu).
const SCAN_THREADS: u32 = 256;
/// At most this many chunks, so their counts come back to the host in one small copy.
const MAX_CHUNKS: usize = 2048;

/// The chunk length (a multiple of the block's width) and chunk count for `n` elements.
fn chunking(n: usize) -> (usize, usize) {
    let chunk = n.div_ceil(MAX_CHUNKS).max(4096).next_multiple_of(SCAN_THREADS as usize);
    (chunk, n.div_ceil(chunk))
}

fn chunk_config(chunks: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: (chunks as u32, 1, 1), block_dim: (SCAN_THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// Each chunk's first output row (uploaded) and the total: the selected elements of `t` (its
/// non-zeros) counted per chunk.
fn chunk_starts(cuda: &Cuda, t: &Tensor, chunk: usize, chunks: usize) -> Result<(CudaSlice<i64>, usize)> {
    let name = format!("nonzero_count_{}", dtype_name(t.dtype()).expect("the caller checked the dtype"));
    let counts = cuda.stream().alloc_zeros::<i64>(chunks).map_err(|e| cuda_error("cuMemAllocAsync", e))?;
    let (pt, lt, count, chunk_arg, pc) = (cuda.base(t)?, Strided::of(t)?, t.numel() as i64, chunk as i64, counts.device_ptr(cuda.stream()).0);
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&pt).arg(&lt).arg(&count).arg(&chunk_arg).arg(&pc);
    unsafe { launch.launch(chunk_config(chunks)) }.map_err(launch_error(&name))?;
    let counts = cuda.stream().clone_dtoh(&counts).map_err(|e| cuda_error("cuMemcpyDtoHAsync", e))?;
    cuda.stream().synchronize().map_err(|e| cuda_error("cuStreamSynchronize", e))?;
    let starts: Vec<i64> = counts.iter().scan(0, |acc, &c| Some(std::mem::replace(acc, *acc + c))).collect();
    let total = counts.iter().sum::<i64>() as usize;
    let starts = cuda.stream().clone_htod(&starts).map_err(|e| cuda_error("cuMemcpyHtoDAsync", e))?;
    Ok((starts, total))
}

/// The coordinates of `x`'s non-zero elements (see `Backend::nonzero`).
pub fn nonzero(cuda: &Cuda, x: &Tensor) -> Result<Tensor> {
    let Some(dtype) = dtype_name(x.dtype()) else { return unsupported("nonzero", "CUDA", x.dtype()) };
    if x.ndim() > MAX_COORD_DIMS {
        bail!(NotImplemented, "nonzero on CUDA takes tensors of at most {MAX_COORD_DIMS} dims, got {}", x.ndim());
    }
    let n = x.numel();
    if n == 0 {
        return Tensor::empty_on(&[0, x.ndim()], DType::I64, x.device());
    }
    let (chunk, chunks) = chunking(n);
    let (starts, total) = chunk_starts(cuda, x, chunk, chunks)?;
    let out = Tensor::empty_on(&[total, x.ndim()], DType::I64, x.device())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let mut dims = Dims { ndim: x.ndim() as i64, size: [1; MAX_COORD_DIMS] };
    for (d, &s) in x.shape().iter().enumerate() {
        dims.size[d] = s as i64;
    }
    let name = format!("nonzero_write_{dtype}");
    let (px, lx, count, chunk_arg, ps, po) = (cuda.base(x)?, Strided::of(x)?, n as i64, chunk as i64, starts.device_ptr(cuda.stream()).0, cuda.base(&out)?);
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&lx).arg(&count).arg(&chunk_arg).arg(&ps).arg(&po).arg(&dims);
    unsafe { launch.launch(chunk_config(chunks)) }.map_err(launch_error(&name))?;
    Ok(out)
}

/// The elements of `x` where the bool `mask` (of `x`'s shape), in row-major order (see
/// `Backend::masked_select`).
pub fn masked_select(cuda: &Cuda, x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let n = x.numel();
    if n == 0 {
        return Tensor::empty_on(&[0], x.dtype(), x.device());
    }
    let (chunk, chunks) = chunking(n);
    let (starts, total) = chunk_starts(cuda, mask, chunk, chunks)?;
    let out = Tensor::empty_on(&[total], x.dtype(), x.device())?;
    if total == 0 {
        return Ok(out);
    }
    let name = format!("masked_select_{}", width_name(x.dtype()));
    let (px, lx, pm, lm) = (cuda.base(x)?, Strided::of(x)?, cuda.base(mask)?, Strided::of(mask)?);
    let (count, chunk_arg, ps, po) = (n as i64, chunk as i64, starts.device_ptr(cuda.stream()).0, cuda.base(&out)?);
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&lx).arg(&pm).arg(&lm).arg(&count).arg(&chunk_arg).arg(&ps).arg(&po);
    unsafe { launch.launch(chunk_config(chunks)) }.map_err(launch_error(&name))?;
    Ok(out)
}

// ---- embedding_bag ----

/// `data` on the device; an empty slice becomes one unused element (no allocation is empty).
fn upload<T: DeviceRepr + Default>(cuda: &Cuda, data: &[T]) -> Result<CudaSlice<T>> {
    let one = [T::default()];
    let data = if data.is_empty() { &one[..] } else { data };
    cuda.stream().clone_htod(data).map_err(|e| cuda_error("cuMemcpyHtoDAsync", e))
}

/// Each bag's rows of `weight` pooled into its row of `out` (see `Backend::embedding_bag`);
/// the host's row numbers, bounds and weights are uploaded.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag(cuda: &Cuda, weight: &Tensor, idx: &[i64], bags: &[(usize, usize)], mode: BagMode, per_sample_weights: &[f64], padding_idx: Option<i64>, out: &Tensor) -> Result<()> {
    let Some(dtype) = dtype_name(weight.dtype()) else { return unsupported("_embedding_bag", "CUDA", weight.dtype()) };
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let bounds: Vec<i64> = bags.iter().flat_map(|&(s, e)| [s as i64, e as i64]).collect();
    let (index, bounds, weights) = (upload(cuda, idx)?, upload(cuda, &bounds)?, upload(cuda, per_sample_weights)?);
    let name = format!("embedding_bag_{dtype}");
    let (pw, offset, s0, s1, dim) = (cuda.base(weight)?, weight.layout().offset() as i64, weight.strides()[0] as i64, weight.strides()[1] as i64, weight.shape()[1] as i64);
    let (pi, pb, pp) = (index.device_ptr(cuda.stream()).0, bounds.device_ptr(cuda.stream()).0, weights.device_ptr(cuda.stream()).0);
    let mode: i32 = match mode {
        BagMode::Sum => 0,
        BagMode::Mean => 1,
        BagMode::Max => 2,
    };
    let (has_padding, padding, po, count) = (padding_idx.is_some() as i32, padding_idx.unwrap_or(0), cuda.base(out)?, n as i64);
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&pw).arg(&offset).arg(&s0).arg(&s1).arg(&dim).arg(&pi).arg(&pb).arg(&pp);
    launch.arg(&mode).arg(&has_padding).arg(&padding).arg(&po).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(launch_error(&name))?;
    Ok(())
}

/// Rescales each of the distinct `rows` of `weight` whose `norm_type`-norm exceeds `max_norm`
/// (see `Backend::embedding_renorm`); one thread per row.
pub fn embedding_renorm(cuda: &Cuda, weight: &Tensor, rows: &[i64], max_norm: f64, norm_type: f64) -> Result<()> {
    let Some(dtype) = dtype_name(weight.dtype()).filter(|_| weight.dtype().is_float()) else {
        return unsupported("embedding_renorm_", "CUDA", weight.dtype());
    };
    if rows.is_empty() {
        return Ok(());
    }
    let list = upload(cuda, rows)?;
    let name = format!("embedding_renorm_{dtype}");
    let (pw, offset, s0, s1, dim) = (cuda.base(weight)?, weight.layout().offset() as i64, weight.strides()[0] as i64, weight.strides()[1] as i64, weight.shape()[1] as i64);
    let (pr, count) = (list.device_ptr(cuda.stream()).0, rows.len() as i64);
    let f = cuda.function(&FAMILY, &name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&pw).arg(&offset).arg(&s0).arg(&s1).arg(&dim).arg(&pr).arg(&count).arg(&max_norm).arg(&norm_type);
    unsafe { launch.launch(cuda.config(rows.len())) }.map_err(launch_error(&name))?;
    Ok(())
}
