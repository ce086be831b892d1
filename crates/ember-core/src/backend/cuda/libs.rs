//! Finding the CUDA libraries before cudarc calls into them.
//!
//! cudarc opens each library by name on its first call and panics when none of its candidate
//! names loads. So before the first call into a library, `require` tries the same names itself
//! and turns a miss into a RuntimeError that says what to install. NVIDIA's pip wheels
//! (`pip install ember[cuda13]`) put the libraries under `site-packages/nvidia/...`, outside the
//! loader's search path: the Python package finds them and hands their full paths to
//! `set_preload`; they are loaded by path first, and the loader then answers cudarc's lookup by
//! name with the library already loaded (it matches the soname), as PyTorch and JAX do. A
//! system CUDA install on the library path works without that step.
use crate::bail;
use crate::error::Result;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// The CUDA libraries the backend loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lib {
    /// The driver API (`libcuda`), installed with the NVIDIA driver.
    Driver,
    /// The runtime compiler (`libnvrtc`), from the `nvidia-cuda-nvrtc` wheel or a CUDA toolkit.
    Nvrtc,
    /// The BLAS (`libcublas`), from the `nvidia-cublas` wheel or a CUDA toolkit.
    Cublas,
    /// The convolutions (`libcudnn`), from the `nvidia-cudnn-cu13` wheel or a cuDNN install.
    Cudnn,
}

impl Lib {
    /// The name cudarc looks the library up by.
    fn stem(self) -> &'static str {
        match self {
            Lib::Driver => "cuda",
            Lib::Nvrtc => "nvrtc",
            Lib::Cublas => "cublas",
            Lib::Cudnn => "cudnn",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Lib::Driver => "the CUDA driver library (libcuda)",
            Lib::Nvrtc => "NVRTC, CUDA's runtime compiler (libnvrtc)",
            Lib::Cublas => "cuBLAS (libcublas)",
            Lib::Cudnn => "cuDNN (libcudnn)",
        }
    }

    fn what_to_install(self) -> String {
        match self {
            Lib::Driver => "Is an NVIDIA driver installed? (libcuda.so.1 comes with it)".into(),
            Lib::Nvrtc | Lib::Cublas | Lib::Cudnn => format!(
                "Install NVIDIA's wheels with `pip install ember[cuda{major}]`, or put a CUDA {major} toolkit's lib folder on LD_LIBRARY_PATH",
                major = super::VERSION_MAJOR
            ),
        }
    }
}

static PRELOAD: Mutex<Vec<(Lib, PathBuf)>> = Mutex::new(Vec::new());

/// How many libraries `Lib` names.
const LIBS: usize = 4;

/// Where NVIDIA's pip wheels for this build's CUDA version put each library (folders under
/// site-packages, the first that has it wins), and the file-name prefixes to load from there, in
/// loading order: NVRTC's builtins before NVRTC (which looks them up when it compiles, not when
/// it loads), cuBLASLt before cuBLAS, cuDNN's parts before the front library that opens them.
fn wheel_folders(lib: Lib) -> (&'static [&'static str], &'static [&'static str]) {
    let cuda12 = super::VERSION_MAJOR == 12;
    match lib {
        Lib::Driver => (&[], &[]),
        Lib::Nvrtc if cuda12 => (&["nvidia/cuda_nvrtc/lib"], &["libnvrtc-builtins", "libnvrtc"]),
        Lib::Nvrtc => (&["nvidia/cu13/lib"], &["libnvrtc-builtins", "libnvrtc"]),
        Lib::Cublas if cuda12 => (&["nvidia/cublas/lib"], &["libcublasLt", "libcublas"]),
        Lib::Cublas => (&["nvidia/cu13/lib"], &["libcublasLt", "libcublas"]),
        Lib::Cudnn => (
            &["nvidia/cudnn/lib", "nvidia/cu13/lib"],
            &[
                "libcudnn_graph",
                "libcudnn_engines_runtime_compiled",
                "libcudnn_engines_precompiled",
                "libcudnn_heuristic",
                "libcudnn_ops",
                "libcudnn_cnn",
                "libcudnn_adv",
                "libcudnn",
            ],
        ),
    }
}

/// The wheels' libraries found under `site_dirs` (site-packages folders), each with the library
/// it belongs to, to be loaded by path in this order before that library's first call.
pub fn wheel_libraries(site_dirs: &[PathBuf]) -> Vec<(Lib, PathBuf)> {
    let mut found = Vec::new();
    for lib in [Lib::Nvrtc, Lib::Cublas, Lib::Cudnn] {
        let (folders, prefixes) = wheel_folders(lib);
        let dirs = folders.iter().flat_map(|folder| site_dirs.iter().map(move |d| d.join(folder)));
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            let files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            let here: Vec<PathBuf> = prefixes.iter().flat_map(|prefix| files.iter().filter(|p| is_library(p, prefix)).cloned()).collect();
            if !here.is_empty() {
                found.extend(here.into_iter().map(|p| (lib, p)));
                break;
            }
        }
    }
    found
}

/// Whether `path` is the shared library `prefix` names: `libcublas.so.13` for "libcublas",
/// not `libcublasLt.so.13`, nor NVIDIA's `.alt.` builds for other C++ ABIs.
fn is_library(path: &std::path::Path, prefix: &str) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(".so")) && !name.contains(".alt.")
}

/// Libraries (full paths, from pip wheels) to load before the first call into the library each
/// belongs to; set by the Python package at import, before anything asks for a CUDA device.
pub fn set_preload(paths: Vec<(Lib, PathBuf)>) {
    *PRELOAD.lock().unwrap_or_else(|e| e.into_inner()) = paths;
}

/// Loads `lib`'s part of the preload list once, keeping each library loaded for the life of
/// the process; the answer says which could not be loaded.
fn preload(lib: Lib) -> &'static str {
    static FAILED: [OnceLock<String>; LIBS] = [const { OnceLock::new() }; LIBS];
    FAILED[lib as usize].get_or_init(|| {
        let mut failed = String::new();
        let paths: Vec<PathBuf> = PRELOAD.lock().unwrap_or_else(|e| e.into_inner()).iter().filter(|(l, _)| *l == lib).map(|(_, p)| p.clone()).collect();
        for path in paths {
            match unsafe { libloading::Library::new(&path) } {
                Ok(loaded) => std::mem::forget(loaded),
                Err(e) => failed += &format!(" (could not load {}: {e})", path.display()),
            }
        }
        failed
    })
}

/// Refuses with a RuntimeError unless `lib` can be loaded under one of the names cudarc will
/// try (its own lookup would panic).
pub fn require(lib: Lib) -> Result<()> {
    static FOUND: [OnceLock<std::result::Result<(), String>>; LIBS] = [const { OnceLock::new() }; LIBS];
    let found = FOUND[lib as usize].get_or_init(|| {
        let failed_preloads = preload(lib);
        let names = cudarc::get_lib_name_candidates(lib.stem());
        let mut last_error = String::new();
        for name in &names {
            match unsafe { libloading::Library::new(name) } {
                Ok(_) => return Ok(()),
                Err(e) => last_error = e.to_string(),
            }
        }
        let (first, last) = (names.first().cloned().unwrap_or_default(), names.last().cloned().unwrap_or_default());
        Err(format!("none of the {} names cudarc looks for ({first} ... {last}) loads: {last_error}{failed_preloads}", names.len()))
    });
    match found {
        Ok(()) => Ok(()),
        Err(why) => bail!(Runtime, "cannot load {}: {why}. {}", lib.label(), lib.what_to_install()),
    }
}
