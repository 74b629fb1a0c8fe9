"""Atomic, pickle-free .npz files written entry by entry (what np.savez writes, streamed)."""
import os
import tempfile
import zipfile
from typing import Any, Iterable, Tuple

import numpy as np

from seed.replay.columns import Blobs


def write_atomically(path: str, entries: Iterable[Tuple[str, Any]]) -> None:
  """Writes (name, array or Blobs) entries as an .npz at `path`: temp file, then os.replace.

  A crash or an error leaves `path` as it was. Each entry goes to the file as it
  comes, so only one column at a time needs to exist as an array; Blobs are
  written end to end as one uint8 array without being joined in memory. The
  file reads back with np.load(path, allow_pickle=False).
  """
  directory = os.path.dirname(os.path.abspath(path))
  fd, tmp_path = tempfile.mkstemp(prefix=os.path.basename(path) + '.', suffix='.tmp',
                                  dir=directory)
  try:
    with os.fdopen(fd, 'wb') as f:
      with zipfile.ZipFile(f, mode='w', compression=zipfile.ZIP_STORED,
                           allowZip64=True) as archive:
        for name, value in entries:
          with archive.open(name + '.npy', 'w', force_zip64=True) as entry:
            if isinstance(value, Blobs):
              header = {'descr': '|u1', 'fortran_order': False, 'shape': (value.nbytes,)}
              np.lib.format.write_array_header_2_0(entry, header)
              for part in value.parts:
                entry.write(part)
            else:
              np.lib.format.write_array(entry, np.asarray(value), allow_pickle=False)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp_path, path)
  except BaseException:
    if os.path.exists(tmp_path):
      os.unlink(tmp_path)
    raise
