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
}

impl Lib {
    /// The name cudarc looks the library up by.
    fn stem(self) -> &'static str {
        match self {
            Lib::Driver => "cuda",
            Lib::Nvrtc => "nvrtc",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Lib::Driver => "the CUDA driver library (libcuda)",
            Lib::Nvrtc => "NVRTC, CUDA's runtime compiler (libnvrtc)",
        }
    }

    fn what_to_install(self) -> String {
        match self {
            Lib::Driver => "Is an NVIDIA driver installed? (libcuda.so.1 comes with it)".into(),
            Lib::Nvrtc => format!(
                "Install NVIDIA's NVRTC wheel with `pip install ember[cuda{major}]`, or put a CUDA {major} toolkit's lib folder on LD_LIBRARY_PATH",
                major = super::VERSION_MAJOR
            ),
        }
    }
}

static PRELOAD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Where NVIDIA's pip wheels for this build's CUDA version put NVRTC, under site-packages.
const WHEEL_DIR: &str = if super::VERSION_MAJOR == 12 { "nvidia/cuda_nvrtc/lib" } else { "nvidia/cu13/lib" };

/// The wheels' NVRTC libraries found under any of `site_dirs` (the first that has them), to be
/// loaded by path: `libnvrtc` and the builtins library it loads by name when compiling.
pub fn wheel_libraries(site_dirs: &[PathBuf]) -> Vec<PathBuf> {
    for dir in site_dirs.iter().map(|d| d.join(WHEEL_DIR)) {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                // `.alt.` builds are NVIDIA's variant for other C++ ABIs, not what cudarc binds.
                name.starts_with("libnvrtc") && name.contains(".so") && !name.contains(".alt.")
            })
            .collect();
        if !found.is_empty() {
            // The builtins first: libnvrtc looks them up when it compiles, not when it loads.
            found.sort_by_key(|p| !p.to_string_lossy().contains("builtins"));
            return found;
        }
    }
    Vec::new()
}

/// Libraries (full paths, from pip wheels) to load before the first CUDA call; set by the
/// Python package at import, before anything asks for a CUDA device.
pub fn set_preload(paths: Vec<PathBuf>) {
    *PRELOAD.lock().unwrap_or_else(|e| e.into_inner()) = paths;
}

/// Loads the preload list once, keeping each library loaded for the life of the process.
fn preload() -> &'static std::result::Result<(), String> {
    static DONE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        for path in PRELOAD.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("could not load {}: {e}", path.display()))?;
            std::mem::forget(lib);
        }
        Ok(())
    })
}

/// Refuses with a RuntimeError unless `lib` can be loaded under one of the names cudarc will
/// try (its own lookup would panic).
pub fn require(lib: Lib) -> Result<()> {
    static FOUND: [OnceLock<std::result::Result<(), String>>; 2] = [OnceLock::new(), OnceLock::new()];
    let found = FOUND[lib as usize].get_or_init(|| {
        preload().clone()?;
        let names = cudarc::get_lib_name_candidates(lib.stem());
        let mut last_error = String::new();
        for name in &names {
            match unsafe { libloading::Library::new(name) } {
                Ok(_) => return Ok(()),
                Err(e) => last_error = e.to_string(),
            }
        }
        let (first, last) = (names.first().cloned().unwrap_or_default(), names.last().cloned().unwrap_or_default());
        Err(format!("none of the {} names cudarc looks for ({first} ... {last}) loads: {last_error}", names.len()))
    });
    match found {
        Ok(()) => Ok(()),
        Err(why) => bail!(Runtime, "cannot load {}: {why}. {}", lib.label(), lib.what_to_install()),
    }
}
