# Photo-like 12 MP JPEGs (quality 92) for the nvJPEG probes on a GPU machine without the
# portable binary: a Python version of `gpuconv bench`'s generator (src/bench_batch.cpp:
# octaves of smooth noise with a 1/f spectrum, a lighting gradient, soft-edged shapes, sensor
# noise; 8 scenes, each further file one of them mirrored, shifted and a little brighter).
# Not the bench's exact pixels (another RNG); about the same size a file (3.6 MB).
#   python3 scripts/photo-like-jpegs.py OUT_DIR N
import sys, os, numpy as np, cv2
from concurrent.futures import ThreadPoolExecutor
out, n = sys.argv[1], int(sys.argv[2]); os.makedirs(out, exist_ok=True)
H, W = 3000, 4000
def scene(seed):
    rng = np.random.default_rng(seed)
    acc = np.zeros((H, W, 3), np.float32); amp = 90.0; cells = 3
    while cells <= max(H, W) // 2:
        ch, cw = max(2, cells * H // max(H, W)), max(2, cells * W // max(H, W))
        acc += cv2.resize(rng.normal(0, amp, (ch, cw, 3)).astype(np.float32), (W, H), interpolation=cv2.INTER_CUBIC)
        cells *= 2; amp *= 0.8
    top, bot = rng.uniform(60, 200, 3), rng.uniform(20, 160, 3)
    t = (np.arange(H, dtype=np.float32) / H)[:, None, None]
    acc += (top * (1 - t) + bot * t).astype(np.float32)
    shapes = np.zeros_like(acc)
    for i in range(24):
        c = (int(rng.integers(0, W)), int(rng.integers(0, H))); col = tuple(float(v) for v in rng.uniform(-80, 80, 3))
        r = int(rng.integers(W // 60, W // 8))
        if i % 2: cv2.circle(shapes, c, r, col, -1, cv2.LINE_AA)
        else: cv2.ellipse(shapes, c, (r, r // 2 + 1), float(rng.uniform(0, 180)), 0, 360, col, -1, cv2.LINE_AA)
    acc += cv2.GaussianBlur(shapes, (0, 0), 1.5)
    acc += rng.normal(0, 4, acc.shape).astype(np.float32)
    return np.clip(acc, 0, 255).astype(np.uint8)
with ThreadPoolExecutor(8) as ex: scenes = list(ex.map(scene, range(8)))
def make(i):
    img = scenes[i % 8]
    if i >= 8:
        img = np.roll(cv2.flip(img, (i // 8) % 2), ((i * 104729) % H, (i * 7919) % W), (0, 1))
        img = cv2.add(img, np.full(img.shape, i % 7, np.uint8))
    cv2.imwrite(os.path.join(out, "img%05d.jpg" % i), img, [cv2.IMWRITE_JPEG_QUALITY, 92])
with ThreadPoolExecutor(16) as ex: list(ex.map(make, range(n)))
