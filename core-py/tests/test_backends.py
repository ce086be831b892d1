"""`ember.backends`: PyTorch's flags, settable, effective where Ember has the feature."""
import ember
import pytest


@pytest.fixture(autouse=True)
def _restore_precision():
    saved = ember.get_float32_matmul_precision()
    yield
    ember.set_float32_matmul_precision(saved)


def test_matmul_allow_tf32_is_the_float32_matmul_precision():
    ember.backends.cuda.matmul.allow_tf32 = True
    assert ember.get_float32_matmul_precision() == "high"
    ember.backends.cuda.matmul.allow_tf32 = False
    assert ember.get_float32_matmul_precision() == "highest"
    ember.set_float32_matmul_precision("medium")
    assert ember.backends.cuda.matmul.allow_tf32 is True


def test_cudnn_flags_are_settable_and_restored_by_flags():
    cudnn = ember.backends.cudnn
    cudnn.benchmark = True
    cudnn.deterministic = True
    try:
        with cudnn.flags(enabled=False, benchmark=False, deterministic=False):
            assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, False, False)
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, True, True)
    finally:
        cudnn.benchmark = cudnn.deterministic = False


def test_flags_restored_when_the_block_raises():
    with pytest.raises(KeyError):
        with ember.backends.mkldnn.flags(enabled=False):
            assert ember.backends.mkldnn.enabled is False
            raise KeyError
    assert ember.backends.mkldnn.enabled is True


def test_libraries_missing_here_report_unavailable():
    b = ember.backends
    assert not b.cudnn.is_available() and b.cudnn.version() is None  # no cuDNN wheel in the test venv
    assert not b.mps.is_available() and not b.mps.is_built()
    assert b.cuda.is_built()  # CUDA support is in the default build, GPU or not
    assert not b.mkldnn.is_available() and not b.mkl.is_available() and not b.openmp.is_available()


def test_cudnn_allow_tf32_is_a_flag_the_core_keeps():
    cudnn = ember.backends.cudnn
    assert cudnn.allow_tf32 is True
    with cudnn.flags(allow_tf32=False):
        assert cudnn.allow_tf32 is False
    assert cudnn.allow_tf32 is True


def test_import_as_torch_scripts_do():
    import ember.backends.cudnn as cudnn
    assert cudnn is ember.backends.cudnn
