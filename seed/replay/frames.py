"""Stacked frames kept once each, and the byte compression of what the replay keeps.

An Atari observation stacks the last S frames, oldest first (uint8 [S, H, W],
channels first); the next step's stack is this one shifted by one frame, except
where the env refilled it (an episode reset: gymnasium's FrameStackObservation
repeats the reset frame). `split_stacks` keeps every frame once: a step whose
stack IS the previous one shifted, compared frame by frame on the data and never
assumed, adds its newest frame to a pool; any other step (the first, a reset, or
data that is no stack at all) adds its whole stack. Each step's stack is then S
consecutive pool frames (`stack_indices`), and `join_stacks` gathers them back
bit for bit. 121 Atari steps keep 124 frames instead of 484.

Compression (`compress` / `decompress`): zstd at level 1 by default. Measured on
real Pong frames (random play, 124-frame pools of 121-step sequences, 2-core
machine): zstd-1 4.8 KiB a sequence (690x smaller than its stacks), 0.5 ms to
compress, 0.8 ms to decompress into a new bytes object but 0.09 ms into a buffer
(`decompress_into`, which only zstandard offers); lz4 11.2 KiB, 0.3 / 1.0 ms;
zlib-1 12.4 KiB, 2.0 / 1.1 ms. MsPacman: zstd-1 16 KiB (206x), lz4 48 KiB,
zlib-1 62 KiB. zlib (the standard library's) stays for installs without zstandard.
"""
import threading
import zlib
from typing import Optional, Tuple

import numpy as np

CODECS = ('zstd', 'zlib', None)

_ZSTD_LEVEL = 1
_ZLIB_LEVEL = 1
_contexts = threading.local()  # zstd contexts are not thread-safe: one per thread.


def split_stacks(observations: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """Stacks [T, S, ...] -> (frames [N, ...] with S <= N <= T * S, full bool [T]).

  full[t] says step t added its whole stack (step 0 always does); otherwise it
  added only its newest frame, its stack being the previous one shifted by one.
  """
  observations = np.asarray(observations)
  if observations.ndim < 2 or observations.shape[0] < 1:
    raise ValueError(f'observations must be [T >= 1, S, ...] stacks, got shape '
                     f'{observations.shape}.')
  equal = observations[1:, :-1] == observations[:-1, 1:]
  shifted = equal.all(axis=tuple(range(1, equal.ndim)))
  full = np.concatenate([[True], ~shifted])
  parts = [observations[t] if full[t] else observations[t, -1:]
           for t in range(observations.shape[0])]
  return np.concatenate(parts), full


def stack_indices(full: np.ndarray, stack_size: int) -> np.ndarray:
  """Pool indices of each step's frames, oldest first: int64 [..., T, stack_size] for
  `full` [..., T] (one unroll's flags, or a batch of them)."""
  ends = np.cumsum(np.where(full, stack_size, 1), axis=-1) - 1
  return ends[..., None] + np.arange(1 - stack_size, 1)


def join_stacks(frames: np.ndarray, indices: np.ndarray,
                out: Optional[np.ndarray] = None) -> np.ndarray:
  """The inverse of `split_stacks`: stacks [T, S, ...] from a pool and its `stack_indices`,
  into `out` if given."""
  if indices.size and indices[-1, -1] + 1 != frames.shape[0]:
    raise ValueError(f'{frames.shape[0]} frames do not fit the stack layout, which takes '
                     f'{indices[-1, -1] + 1}: stored data is corrupt.')
  if out is None:
    out = np.empty(indices.shape + frames.shape[1:], frames.dtype)
  # 'clip' spares take a buffered copy of `out`; the indices are in range (checked).
  return np.take(frames, indices, axis=0, out=out, mode='clip')


def check_codec(codec: Optional[str]) -> None:
  """Raises a ValueError for an unknown codec, or an ImportError if its library is missing."""
  if codec not in CODECS:
    raise ValueError(f'observation compression must be one of {CODECS}, got {codec!r}.')
  if codec == 'zstd':
    try:
      import zstandard  # pylint: disable=g-import-not-at-top,unused-import
    except ImportError as e:
      raise ImportError("observation compression 'zstd' needs the zstandard package "
                        "(pip install -e '.[learner]'); or bind "
                        "ReplayInput.observation_compression = 'zlib' (or None).") from e


def _zstd():
  if not hasattr(_contexts, 'compressor'):
    import zstandard  # pylint: disable=g-import-not-at-top
    _contexts.compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
    _contexts.decompressor = zstandard.ZstdDecompressor()
  return _contexts.compressor, _contexts.decompressor


def compress(data, codec: Optional[str]) -> bytes:
  """`data` (bytes-like) compressed with `codec` ('zstd', 'zlib', or None: as is)."""
  if codec == 'zstd':
    # python-zstandard returns a bytes object allocated for the worst case (the
    # input's size) and only shortened: copy it, or a 5 KB Pong sequence holds 870 KB.
    return bytes(memoryview(_zstd()[0].compress(data)))
  if codec == 'zlib':
    return zlib.compress(data, _ZLIB_LEVEL)
  if codec is None:
    return bytes(data)
  raise ValueError(f'unknown codec {codec!r}, expected one of {CODECS}.')


def decompress_into(blob: bytes, codec: Optional[str], scratch: np.ndarray) -> np.ndarray:
  """`blob` decompressed, as a uint8 view of `scratch` (or of `blob` itself for no codec).

  zstd decompresses straight into `scratch`: a fresh bytes object per blob cost
  0.65 ms for a Pong sequence, all but 0.09 ms of it in allocating (page faults).

  Raises:
    ValueError: if the data do not fit in `scratch` (corrupt data).
  """
  if codec is None:
    return np.frombuffer(blob, np.uint8)
  view = memoryview(scratch).cast('B')
  if codec != 'zstd':
    data = decompress(blob, codec)
    if len(data) > len(view):
      raise ValueError(f'{len(data)} bytes decompressed, at most {len(view)} expected: '
                       'stored data is corrupt.')
    view[:len(data)] = data
    return scratch.reshape(-1).view(np.uint8)[:len(data)]
  import zstandard  # pylint: disable=g-import-not-at-top
  size = zstandard.frame_content_size(blob)  # compress() writes it; -1 if absent.
  if not 0 <= size <= len(view):
    raise ValueError(f'a blob of {size} bytes (at most {len(view)} expected): stored data '
                     'is corrupt.')
  written = 0
  with _zstd()[1].stream_reader(blob) as reader:
    while written < size:
      count = reader.readinto(view[written:size])
      if not count:
        break
      written += count
  if written != size:  # A truncated blob ends early, without an error of its own.
    raise ValueError(f'{written} bytes decompressed, {size} expected: stored data is corrupt.')
  return scratch.reshape(-1).view(np.uint8)[:written]


def decompress(blob: bytes, codec: Optional[str]) -> bytes:
  """The inverse of `compress`."""
  if codec == 'zstd':
    return _zstd()[1].decompress(blob)
  if codec == 'zlib':
    return zlib.decompress(blob)
  if codec is None:
    return blob
  raise ValueError(f'unknown codec {codec!r}, expected one of {CODECS}.')
