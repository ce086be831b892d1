//! Compiles every CUDA kernel with NVRTC, which needs no GPU, and checks that each kernel name
//! the Rust side launches is in the compiled module: a kernel that does not compile fails here,
//! on machines without a GPU (CI) as well.
//!
//! NVRTC comes from NVIDIA's pip wheel (requirements-dev.txt installs it for `make test`),
//! found in the virtualenv named by `$VIRTUAL_ENV`, else the repository's `.venv`, or from a
//! CUDA toolkit on the library path. Without one of those the test fails, saying how to get it:
//! `VIRTUAL_ENV=/path/to/venv cargo test -p ember-core --test cuda_kernels`.
#![cfg(feature = "cuda")]
use ember_core::backend::cuda::nvrtc::{self, Target};
use ember_core::backend::cuda::{libs, FAMILIES};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// site-packages of the test's virtualenv.
fn site_dirs() -> Vec<PathBuf> {
    let repo_venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv");
    let venvs = std::env::var_os("VIRTUAL_ENV").map(PathBuf::from).into_iter().chain([repo_venv]);
    venvs
        .filter_map(|v| std::fs::read_dir(v.join("lib")).ok())
        .flat_map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path().join("site-packages"))))
        .collect()
}

fn load_nvrtc() -> (i32, i32) {
    libs::set_preload(libs::wheel_libraries(&site_dirs()));
    nvrtc::version().unwrap_or_else(|e| {
        panic!(
            "{e}\nThis test compiles the CUDA kernels with NVRTC: install NVIDIA's wheel into the virtualenv \
             (`pip install -r requirements-dev.txt`) and point $VIRTUAL_ENV at it, or put a CUDA toolkit on LD_LIBRARY_PATH."
        )
    })
}

/// The kernels a PTX module defines.
fn entries(ptx: &str) -> HashSet<String> {
    ptx.lines()
        .filter_map(|l| l.trim().strip_prefix(".visible .entry "))
        .map(|l| l.split('(').next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn every_kernel_compiles_with_nvrtc() {
    let version = load_nvrtc();
    eprintln!("NVRTC {}.{}", version.0, version.1);
    // Families compile in parallel: NVRTC programs are independent.
    std::thread::scope(|s| {
        let jobs: Vec<_> = FAMILIES.iter().map(|family| (family, s.spawn(move || nvrtc::compile(family, 90, Target::Ptx)))).collect();
        for (family, job) in jobs {
            let ptx = job.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
            let defined = entries(&String::from_utf8_lossy(&ptx));
            let wanted = (family.kernel_names)();
            assert!(!wanted.is_empty());
            let missing: Vec<_> = wanted.iter().filter(|n| !defined.contains(*n)).collect();
            assert!(missing.is_empty(), "family `{}` lacks kernels the backend launches: {missing:?}", family.name);
        }
    });
}

#[test]
fn compiled_kernels_are_cached_on_disk() {
    load_nvrtc();
    let home = std::env::temp_dir().join(format!("ember-cuda-cache-{}", std::process::id()));
    std::env::set_var("EMBER_HOME", &home);
    let fill = FAMILIES.iter().find(|f| f.name == "fill").unwrap();
    let first = nvrtc::cubin_cached(fill, 90).unwrap();
    let files: Vec<_> = std::fs::read_dir(home.join("kernels")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].to_string_lossy().into_owned();
    assert!(name.starts_with("fill-sm_90-nvrtc") && name.ends_with(".cubin"), "{name}");
    // A cached file is what the next call returns.
    std::fs::write(home.join("kernels").join(&name), b"cached").unwrap();
    assert_eq!(nvrtc::cubin_cached(fill, 90).unwrap(), b"cached");
    assert!(!first.is_empty());
    std::fs::remove_dir_all(&home).unwrap();
}
