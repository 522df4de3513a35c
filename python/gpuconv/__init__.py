"""gpuconv: FFT-based image convolution on the GPU (CUDA) and the CPU.

    import numpy as np, gpuconv
    out = gpuconv.convolve(image, kernel)                 # NumPy, CuPy or PyTorch in, same type out
    out = gpuconv.convolve(batch, kernel, boundary="zero", mode="full")
    plan = gpuconv.Plan(batch.shape, kernel); out = plan(batch)   # reuse for many calls
    gpuconv.fftconvolve(a, b, mode="same")                # scipy.signal.fftconvolve
    gpuconv.filter2D(img, -1, k, borderType=gpuconv.BORDER_REPLICATE)  # cv2.filter2D
    gpuconv.convolve3d(stack, psf)                        # volumes (D, H, W) with a 3D PSF
    gpuconv.richardson_lucy(stack, psf, iterations=50)    # 3D deconvolution

The C++ core (gpuconv._gpuconv) is a thin binding of conv::plan; this package adds the array
types (NumPy on the host; CuPy arrays and CUDA PyTorch tensors zero-copy on the caller's
current stream), batching, the plan cache, reused host output buffers
(_hostbuf) and the SciPy/OpenCV drop-ins. `python -m
gpuconv.bench` compares it with CuPy, cuDNN and torch.fft on a GPU.
"""
from . import _gpuconv
from ._cv import (BORDER_CONSTANT, BORDER_DEFAULT, BORDER_ISOLATED, BORDER_REFLECT, BORDER_REFLECT101,
                  BORDER_REFLECT_101, BORDER_REPLICATE, BORDER_TRANSPARENT, BORDER_WRAP, CV_8U, CV_16U, CV_32F,
                  CV_64F, filter2D)
from ._hostbuf import clear_host_cache, host_cache_info
from ._plan import (BOUNDARIES, MODES, Plan, clear_plan_cache, convolve, cuda_available, plan_cache_info,
                    set_plan_cache_size)
from ._scipy import fftconvolve
from ._volume import Plan3D, convolve3d, richardson_lucy

__version__ = "0.1.0"

__all__ = [
    "BORDER_CONSTANT", "BORDER_DEFAULT", "BORDER_ISOLATED", "BORDER_REFLECT", "BORDER_REFLECT101",
    "BORDER_REFLECT_101", "BORDER_REPLICATE", "BORDER_TRANSPARENT", "BORDER_WRAP", "BOUNDARIES", "CV_8U",
    "CV_16U", "CV_32F", "CV_64F", "MODES", "Plan", "Plan3D", "clear_host_cache", "clear_plan_cache", "convolve", "convolve3d",
    "cuda_available", "fftconvolve", "filter2D", "host_cache_info", "plan_cache_info", "richardson_lucy", "set_plan_cache_size",
]
