"""Rendering env 0's first episodes to an MP4 file (the `video` extra: imageio with
imageio-ffmpeg, whose wheel carries its own ffmpeg binary)."""
import importlib.util
import os
from typing import Optional

import numpy as np

INSTALL_HINT = ("pip install 'seed-rl[video]' (imageio and imageio-ffmpeg; scripts/venv.sh "
                'installs it)')


class VideoUnavailable(RuntimeError):
  """The video extra is not installed, or the env cannot render frames."""


def check_available() -> None:
  """Raises VideoUnavailable unless imageio and its ffmpeg plugin are installed."""
  missing = [name for name in ('imageio', 'imageio_ffmpeg')
             if importlib.util.find_spec(name) is None]
  if missing:
    raise VideoUnavailable(f'--video needs the video extra ({", ".join(missing)} not '
                           f'installed); {INSTALL_HINT}')


class EpisodeRecorder:
  """Collects env 0's frames while its episode index is below `num_episodes`, then
  writes them as one MP4 at the env's render_fps."""

  def __init__(self, env, path: str, num_episodes: int):
    if env.render_mode != 'rgb_array':
      raise VideoUnavailable(f'the env renders {env.render_mode!r}, not rgb_array frames')
    self._env = env
    self._path = path
    self._num_episodes = num_episodes
    self._writer = None
    self.frames = 0

  def on_frame(self, episode_index: int) -> None:
    if episode_index >= self._num_episodes:
      return
    try:
      frame = _even_sized(np.asarray(self._env.render()))
    except Exception as e:  # pylint: disable=broad-except
      # MuJoCo, say, with no OpenGL here: its own error type, raised at the first frame.
      raise VideoUnavailable(
          f'--video: the env cannot render a frame ({type(e).__name__}: '
          f'{(str(e).splitlines() or [""])[0]}); MuJoCo envs need MUJOCO_GL=egl or osmesa '
          'with that library installed') from e
    if self._writer is None:
      import imageio  # pylint: disable=g-import-not-at-top
      os.makedirs(os.path.dirname(os.path.abspath(self._path)), exist_ok=True)
      # One frame per env step: real time is the emulator's rate over the action repeat.
      fps = ((self._env.metadata.get('render_fps') or 30) /
             getattr(self._env, 'frames_per_step', 1))
      # Frames as they are (no scaling to imageio's 16-pixel blocks): even-sized,
      # which is all libx264's yuv420p needs.
      self._writer = imageio.get_writer(self._path, fps=fps, codec='libx264',
                                        macro_block_size=1)
    self._writer.append_data(frame)
    self.frames += 1

  def close(self) -> Optional[str]:
    """Finishes the file; returns its path, or None if no frame was recorded."""
    if self._writer is None:
      return None
    self._writer.close()
    return self._path


def _even_sized(frame: np.ndarray) -> np.ndarray:
  """`frame` [H, W, 3], its last row or column repeated where H or W is odd."""
  pad = ((0, frame.shape[0] % 2), (0, frame.shape[1] % 2)) + ((0, 0),) * (frame.ndim - 2)
  return np.pad(frame, pad, mode='edge') if any(p[1] for p in pad) else frame
