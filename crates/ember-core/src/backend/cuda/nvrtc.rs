//! Compiling the kernel families with NVRTC, so no `nvcc` is needed anywhere: for a device, to
//! a cubin of its own architecture (`sm_XX`), cached on disk; without a device (the test that
//! compiles every kernel), to PTX for a virtual architecture (`compute_XX`).
//!
//! The cache is `$EMBER_HOME/kernels`, else `$XDG_CACHE_HOME/ember/kernels`, else
//! `~/.cache/ember/kernels` (the root Ember's downloads use), one file per family keyed by the
//! source's hash, the architecture and NVRTC's version. A cache that cannot be read or written
//! only costs a compile.
use super::libs::{self, Lib};
use super::Family;
use crate::bail;
use crate::error::Result;
use cudarc::nvrtc::sys;
use std::ffi::{c_char, c_int, CStr, CString};
use std::path::PathBuf;

/// The declarations every family's source starts with.
const COMMON: &str = include_str!("kernels/common.cuh");

/// What NVRTC produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Machine code for `sm_<arch>`, what a device loads.
    Cubin,
    /// PTX for `compute_<arch>`: needs no device to check.
    Ptx,
}

/// NVRTC's (major, minor) version.
pub fn version() -> Result<(i32, i32)> {
    libs::require(Lib::Nvrtc)?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    check("nvrtcVersion", unsafe { sys::nvrtcVersion(&mut major, &mut minor) })?;
    Ok((major, minor))
}

/// `family` compiled for architecture `arch` (90 for `sm_90`).
pub fn compile(family: &Family, arch: u32, target: Target) -> Result<Vec<u8>> {
    libs::require(Lib::Nvrtc)?;
    let source = CString::new(format!("{COMMON}\n{}", family.source)).expect("kernel sources hold no NUL");
    let name = CString::new(format!("{}.cu", family.name)).expect("family names hold no NUL");
    let options: Vec<CString> = options(arch, target).into_iter().map(|o| CString::new(o).unwrap()).collect();
    let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let mut program: sys::nvrtcProgram = std::ptr::null_mut();
    check("nvrtcCreateProgram", unsafe {
        sys::nvrtcCreateProgram(&mut program, source.as_ptr(), name.as_ptr(), 0, std::ptr::null(), std::ptr::null())
    })?;
    let result = unsafe { compile_program(program, &option_ptrs, target) };
    unsafe { sys::nvrtcDestroyProgram(&mut program) };
    result.map_err(|mut e| {
        e.message = format!("compiling the CUDA kernels of `{}` for {}: {}", family.name, arch_name(arch, target), e.message);
        e
    })
}

/// `compile(family, arch, Target::Cubin)` through the on-disk cache.
pub fn cubin_cached(family: &Family, arch: u32) -> Result<Vec<u8>> {
    let (major, minor) = version()?;
    let key = fnv1a(format!("{COMMON}\n{}\n{:?}", family.source, options(arch, Target::Cubin)).as_bytes());
    let file = format!("{}-sm_{arch}-nvrtc{major}.{minor}-{key:016x}.cubin", family.name);
    let path = cache_dir().map(|dir| dir.join(file));
    if let Some(cached) = path.as_ref().and_then(|p| std::fs::read(p).ok()) {
        return Ok(cached);
    }
    let cubin = compile(family, arch, Target::Cubin)?;
    if let Some(path) = path {
        store(&path, &cubin);
    }
    Ok(cubin)
}

fn options(arch: u32, target: Target) -> Vec<String> {
    vec![format!("--gpu-architecture={}", arch_name(arch, target)), "--std=c++17".into()]
}

fn arch_name(arch: u32, target: Target) -> String {
    match target {
        Target::Cubin => format!("sm_{arch}"),
        Target::Ptx => format!("compute_{arch}"),
    }
}

/// # Safety
/// `program` is a live NVRTC program.
unsafe fn compile_program(program: sys::nvrtcProgram, options: &[*const c_char], target: Target) -> Result<Vec<u8>> {
    let compiled = unsafe { sys::nvrtcCompileProgram(program, options.len() as c_int, options.as_ptr()) };
    if compiled != sys::nvrtcResult::NVRTC_SUCCESS {
        let log = unsafe { program_log(program) };
        bail!(Runtime, "NVRTC error: nvrtcCompileProgram failed: {}\n{log}", error_string(compiled));
    }
    let mut size = 0usize;
    let mut image;
    match target {
        Target::Cubin => {
            check("nvrtcGetCUBINSize", unsafe { sys::nvrtcGetCUBINSize(program, &mut size) })?;
            image = vec![0u8; size];
            check("nvrtcGetCUBIN", unsafe { sys::nvrtcGetCUBIN(program, image.as_mut_ptr() as *mut c_char) })?;
        }
        Target::Ptx => {
            check("nvrtcGetPTXSize", unsafe { sys::nvrtcGetPTXSize(program, &mut size) })?;
            image = vec![0u8; size];
            check("nvrtcGetPTX", unsafe { sys::nvrtcGetPTX(program, image.as_mut_ptr() as *mut c_char) })?;
        }
    }
    Ok(image)
}

/// # Safety
/// `program` is a live NVRTC program.
unsafe fn program_log(program: sys::nvrtcProgram) -> String {
    let mut size = 0usize;
    if unsafe { sys::nvrtcGetProgramLogSize(program, &mut size) } != sys::nvrtcResult::NVRTC_SUCCESS {
        return String::new();
    }
    let mut log = vec![0u8; size.max(1)];
    unsafe { sys::nvrtcGetProgramLog(program, log.as_mut_ptr() as *mut c_char) };
    String::from_utf8_lossy(&log).trim_end_matches('\0').trim().to_string()
}

/// An NVRTC status as a RuntimeError naming the call and NVRTC's message.
fn check(call: &str, status: sys::nvrtcResult) -> Result<()> {
    if status == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    bail!(Runtime, "NVRTC error: {call} failed: {}", error_string(status))
}

fn error_string(status: sys::nvrtcResult) -> String {
    unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(status)) }.to_string_lossy().into_owned()
}

fn cache_dir() -> Option<PathBuf> {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let root = env("EMBER_HOME")
        .or_else(|| env("XDG_CACHE_HOME").map(|c| c.join("ember")))
        .or_else(|| env("HOME").map(|h| h.join(".cache").join("ember")))?;
    Some(root.join("kernels"))
}

/// Writes through a temporary file and a rename, so a concurrent reader never sees half a file.
fn store(path: &std::path::Path, bytes: &[u8]) {
    let Some(dir) = path.parent() else { return };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let written = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&tmp, bytes)).and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// FNV-1a: a hash that stays the same across Rust versions, for file names.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}
