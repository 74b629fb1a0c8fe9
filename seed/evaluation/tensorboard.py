"""An evaluation in TensorBoard: its returns as scalars and its video as an animated GIF
in the Images dashboard, at the checkpoint's env frames, in RUN/evaluation/tb.

TensorBoard has no video dashboard; its image summaries hold encoded images, which the
browser shows as they are, so a GIF plays there. The GIF is a subsampled, downscaled
copy of the MP4 (at most MAX_GIF_FRAMES frames, MAX_GIF_WIDTH pixels wide), small
enough for an events file.
"""
import io
import os
from typing import Mapping, Optional

import numpy as np

from seed.run_dir import layout

MAX_GIF_FRAMES = 200
MAX_GIF_WIDTH = 240
SUBDIRECTORY = os.path.join(layout.EVALUATION, 'tb')


def gif_from_video(path: str, max_frames: int = MAX_GIF_FRAMES,
                   max_width: int = MAX_GIF_WIDTH) -> bytes:
  """The MP4 at `path` as GIF bytes: every k-th frame so that at most `max_frames` remain,
  each shrunk to at most `max_width` pixels wide, at the pace of the original."""
  import imageio  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  from PIL import Image  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  reader = imageio.get_reader(path)
  fps = float(reader.get_meta_data().get('fps') or 30.0)
  frames = [np.asarray(frame) for frame in reader]
  reader.close()
  if not frames:
    raise ValueError(f'{path} has no frames')
  step = max(1, -(-len(frames) // max_frames))
  images = []
  for frame in frames[::step]:
    image = Image.fromarray(frame)
    if image.width > max_width:
      image = image.resize((max_width, max(1, round(image.height * max_width / image.width))))
    images.append(image.convert('P', palette=Image.ADAPTIVE))
  buffer = io.BytesIO()
  images[0].save(buffer, format='GIF', save_all=True, append_images=images[1:],
                 duration=int(1000 * step / fps), loop=0)
  return buffer.getvalue()


def write(logdir: str, env_frames: int, stats: Mapping[str, Mapping[str, float]],
          video_path: Optional[str] = None) -> str:
  """Writes the evaluation's summaries; returns the events directory."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  from tensorboard.plugins.image import metadata as image_metadata  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  directory = os.path.join(logdir, SUBDIRECTORY)
  writer = tf.summary.create_file_writer(directory)
  with writer.as_default(step=np.int64(env_frames)):
    for quantity, values in stats.items():
      for statistic in ('mean', 'std', 'min', 'max'):
        tf.summary.scalar(f'evaluation/{quantity}_{statistic}', np.float32(values[statistic]))
    if video_path:
      gif = gif_from_video(video_path)
      width, height = _gif_size(gif)
      tf.summary.write(
          'evaluation/video', tf.constant([str(width), str(height), gif], tf.string),
          metadata=image_metadata.create_summary_metadata(
              display_name='evaluation/video',
              description=f'env 0\'s first episode(s), {os.path.basename(video_path)}'))
  writer.close()
  return directory


def _gif_size(gif: bytes):
  from PIL import Image  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  with Image.open(io.BytesIO(gif)) as image:
    return image.width, image.height
