"""unroll_torso_dtype='auto': bfloat16 only where the learner's device multiplies it."""
import pytest

from seed.agents.common import native_bfloat16
from seed.agents.r2d2 import config as r2d2_config

# The flags lines of two CPUs, shortened: an AVX2-only AMD EPYC (bfloat16 emulated, the
# train step 2.8x slower) and a Sapphire Rapids Xeon (AMX).
AVX2_ONLY = 'fpu vme sse4_1 sse4_2 avx avx2 fma sha_ni vaes'
AMX = 'fpu sse4_2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8'


@pytest.mark.parametrize('flags, gpus, dtype, why', [
    (AVX2_ONLY.split(), [], 'float32', 'CPU without amx_bf16, avx512_bf16, bf16'),
    (AMX.split(), [], 'bfloat16', 'CPU with amx_bf16, avx512_bf16'),
    ('fp asimd bf16 sve'.split(), [], 'bfloat16', 'CPU with bf16'),  # Arm's Features
    (None, [], 'float32', 'CPU flags unknown'),
    # The GPU runs the unrolls whatever the CPU has.
    (AMX.split(), [(7, 0)], 'float32', 'GPU of compute capability 7.0'),
    (AVX2_ONLY.split(), [(9, 0), (7, 5)], 'bfloat16', 'GPU of compute capability 9.0'),
])
def test_auto_takes_bfloat16_where_the_device_has_it(flags, gpus, dtype, why):
  got, reason = native_bfloat16.torso_dtype_for(flags, gpus)
  assert got == dtype
  assert reason.startswith(why)


def test_cpu_flags_are_read_from_the_first_processor(tmp_path):
  cpuinfo = tmp_path / 'cpuinfo'
  cpuinfo.write_text(f'processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: {AVX2_ONLY}\n\n'
                     f'processor\t: 1\nflags\t\t: {AMX}\n')
  assert native_bfloat16.cpu_flags(str(cpuinfo)) == frozenset(AVX2_ONLY.split())
  assert native_bfloat16.cpu_flags(str(tmp_path / 'absent')) is None
  (tmp_path / 'empty').write_text('processor\t: 0\n')
  assert native_bfloat16.cpu_flags(str(tmp_path / 'empty')) is None


def test_a_concrete_dtype_is_kept_and_auto_becomes_one():
  assert native_bfloat16.resolve_torso_dtype('bfloat16') == 'bfloat16'
  assert native_bfloat16.resolve_torso_dtype('float32') == 'float32'
  assert native_bfloat16.resolve_torso_dtype('auto') in ('float32', 'bfloat16')


def test_bfloat16_asked_where_it_is_emulated_is_kept_with_a_warning(monkeypatch):
  warnings = []
  monkeypatch.setattr(native_bfloat16.logging, 'warning', lambda *a: warnings.append(a[1]))
  monkeypatch.setattr(native_bfloat16, 'gpu_compute_capabilities', lambda: [])
  for flags, warned in ((AVX2_ONLY, True), (AMX, False)):
    warnings.clear()
    monkeypatch.setattr(native_bfloat16, 'cpu_flags', lambda f=flags: frozenset(f.split()))
    assert native_bfloat16.resolve_torso_dtype('bfloat16') == 'bfloat16'
    assert bool(warnings) == warned
  text = native_bfloat16.emulated_bfloat16_warning('CPU without avx512_bf16')
  for words in ('CPU without avx512_bf16', 'emulated', '2.8x', '40 frames/s', "'auto'",
                'Going on in bfloat16'):
    assert words in text


def test_the_configs_accept_auto_and_name_it_among_the_choices():
  assert r2d2_config.R2D2Config(unroll_torso_dtype='auto').unroll_torso_dtype == 'auto'
  with pytest.raises(ValueError, match="accepted: one of 'float32', 'bfloat16', 'auto'"):
    r2d2_config.R2D2Config(unroll_torso_dtype='fp16')
