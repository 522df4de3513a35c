"""Errors are Python exceptions naming the offending value: TypeError for dtypes and array
types, ValueError for shapes and options (the C++ std::invalid_argument included),
RuntimeError for a CUDA device asked for where there is none."""
import numpy as np
import pytest

import gpuconv

X = np.zeros((12, 12), np.float32)
K = np.ones((3, 3), np.float32)


@pytest.mark.parametrize("dtype", ["float64", "int32", "int16", "float16", "complex64", "bool"])
def test_unsupported_dtypes_name_themselves(dtype):
    with pytest.raises(TypeError, match=dtype):
        gpuconv.convolve(X.astype(dtype), K, device="cpu")


def test_float64_rule_says_what_to_do():
    with pytest.raises(TypeError, match=r"astype\('float32'\)"):
        gpuconv.convolve(X.astype(np.float64), K, device="cpu")


@pytest.mark.parametrize("kwargs, match", [
    ({"mode": "middle"}, "mode 'middle'"),
    ({"boundary": "mirror"}, "boundary 'mirror'"),
    ({"device": "gpu"}, "device 'gpu'"),
    ({"axes": (0, 0)}, "same axis twice"),
    ({"axes": (0, 2)}, "out of range"),
    ({"axes": (0,)}, "two axes"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gpuconv.convolve(X, K, **kwargs)


def test_cpp_invalid_argument_is_value_error():
    bad = K.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        gpuconv.convolve(X, bad, device="cpu")
    with pytest.raises(ValueError, match="valid"):
        gpuconv.convolve(X, np.ones((13, 3)), mode="valid", device="cpu")
    with pytest.raises(ValueError, match="mode 'x'"):
        gpuconv._gpuconv.Plan(4, 4, 1, np.ones((1, 3, 3), np.float32), mode="x")


def test_shapes():
    with pytest.raises(ValueError, match="at least two axes"):
        gpuconv.convolve(np.zeros(5, np.float32), K)
    with pytest.raises(ValueError, match="not 2D"):
        gpuconv.convolve(X, np.ones(3))
    with pytest.raises(ValueError, match="empty axis"):
        gpuconv.convolve(np.zeros((0, 4, 4), np.float32), K)
    plan = gpuconv.Plan((12, 12), K, device="cpu", dtype="uint8")
    with pytest.raises(ValueError, match=r"\(12, 13\)"):
        plan(np.zeros((12, 13), np.uint8))
    with pytest.raises(TypeError, match="float32 differs"):
        plan(X)
    with pytest.raises(ValueError, match="out has shape"):
        plan(np.zeros((12, 12), np.uint8), out=np.zeros((12, 11), np.uint8))
    with pytest.raises(ValueError, match="C-contiguous"):
        plan(np.zeros((12, 12), np.uint8), out=np.zeros((12, 24), np.uint8)[:, ::2])


def test_not_an_array():
    with pytest.raises(TypeError, match="object"):
        gpuconv.convolve(object(), K)


def test_cuda_without_a_device():
    if gpuconv.cuda_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        gpuconv.convolve(X, K, device="cuda")
