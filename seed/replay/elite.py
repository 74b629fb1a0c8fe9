"""Selection logic of elite replay and attentive replay, in NumPy.

Elite replay: each stored unroll keeps the behaviour network's feature vectors,
one per step ([T, F]; for V-trace, the policy logits). To sample n unrolls, the
replay draws about lambda * n candidates, re-encodes them with the current
network, and `select`s n of them by the distance between new and stored features
(`unroll_distances`): a small distance means the unroll is still close to
on-policy. lambda anneals from `lambda_batch_multiplier` down to 1
(`lambda_at`), where there are exactly n candidates and sampling is plain
uniform.

Attentive replay (Sun et al., 2020, "Attentive Experience Replay"): the distance
of a candidate is instead to the states the actors see now, all under the current
network (`attentive_distances`), so the learner trains on what is relevant to
where the policy currently is.

Strategies of `select` (order = candidates sorted by distance, stable):
  1: the n lowest distances.
  2: order split into n strides (np.array_split); the lowest distance of each,
     which spreads the batch over the whole distance range.
  3: the n first by (times sampled, distance): the least-sampled first, so no
     close unroll is replayed again and again while others wait.
  4: like 2, but in each stride the least-sampled one (ties: lower distance).

Everything here is pure: features, distances and counts in, indices out. The
replay container owns the storage, the candidate draw and the counts.
"""
import numpy as np

DISTANCES = ('ln_norm', 'cosine', 'kl')
STRATEGIES = (1, 2, 3, 4)

# Elements of one [block, N, T, F] broadcast in attentive ln_norm: bounds its
# memory (32 MiB of float64) whatever the number of references.
_BLOCK_ELEMENTS = 1 << 22


def _is_int(value) -> bool:
  return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_number(value) -> bool:
  return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def check_distance(distance: str) -> None:
  """Raises ValueError unless `distance` is one of DISTANCES."""
  if not isinstance(distance, str) or distance not in DISTANCES:
    raise ValueError(f'distance = {distance!r}; accepted: one of '
                     + ', '.join(repr(d) for d in DISTANCES) + '.')


def check_strategy(strategy: int) -> None:
  """Raises ValueError unless `strategy` is one of STRATEGIES (an int, not a bool)."""
  if not _is_int(strategy) or strategy not in STRATEGIES:
    raise ValueError(f'strategy = {strategy!r}; accepted: one of '
                     + ', '.join(str(s) for s in STRATEGIES) + '.')


def _check_p(distance: str, p: float) -> None:
  # p only means something to ln_norm; other distances ignore it.
  if distance == 'ln_norm' and not (_is_number(p) and p >= 1):
    raise ValueError(f'p = {p!r}; accepted: a number >= 1 (np.inf for the max norm).')


def _features(name: str, array, ndim: int, layout: str) -> np.ndarray:
  array = np.asarray(array, np.float64)
  if array.ndim != ndim or min(array.shape[1:]) < 1:
    raise ValueError(f'{name} has shape {array.shape}; accepted: {layout} with '
                     'every axis but the first >= 1.')
  return array


def _log_softmax(logits: np.ndarray) -> np.ndarray:
  # Shifting by the max keeps exp() from overflowing; the result is unchanged.
  shifted = logits - logits.max(axis=-1, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def unroll_distances(current, stored, distance: str, p: float = 2.0) -> np.ndarray:
  """Distance between the features of N unrolls now and as stored when acted.

  Args:
    current: [N, T, F] features of the unrolls under the current network.
    stored: [N, T, F] features of the same unrolls as stored.
    distance: 'ln_norm': the p-norm of the flattened difference; 'cosine':
      1 - cosine similarity of the flattened vectors, in [0, 2] (a zero vector
      counts as distance 1: it has no direction); 'kl': sum over the T steps of
      KL(softmax(current) || softmax(stored)), the features read as logits.
    p: the norm's order for 'ln_norm', >= 1 (np.inf: the max norm).

  Returns:
    float64 [N]. NaN features give NaN distances, which `select` ranks last.
  """
  check_distance(distance)
  _check_p(distance, p)
  current = _features('current', current, 3, '[N, T, F]')
  stored = _features('stored', stored, 3, '[N, T, F]')
  if current.shape != stored.shape:
    raise ValueError(f'current has shape {current.shape} and stored {stored.shape}; '
                     'accepted: the same [N, T, F] shape for both.')
  num_unrolls = current.shape[0]
  if distance == 'ln_norm':
    difference = (current - stored).reshape(num_unrolls, -1)
    return np.linalg.norm(difference, ord=p, axis=1)
  if distance == 'cosine':
    return _cosine_distance(
        np.einsum('ntf,ntf->n', current, stored),
        np.linalg.norm(current.reshape(num_unrolls, -1), axis=1),
        np.linalg.norm(stored.reshape(num_unrolls, -1), axis=1))
  log_p = _log_softmax(current)
  log_q = _log_softmax(stored)
  kl_per_step = (np.exp(log_p) * (log_p - log_q)).sum(axis=-1)
  # KL >= 0; rounding can leave -1e-17 where the distributions are equal.
  return np.maximum(kl_per_step, 0.0).sum(axis=1)


def _cosine_distance(dot, norm_a, norm_b) -> np.ndarray:
  """1 - dot / (norm_a * norm_b), broadcast; 1 where either norm is 0."""
  norms = norm_a * norm_b
  with np.errstate(invalid='ignore', divide='ignore'):
    similarity = np.where(norms > 0, dot / norms, 0.0)
  # |similarity| <= 1 in exact arithmetic; rounding may step just outside.
  return 1.0 - np.clip(similarity, -1.0, 1.0)


def attentive_distances(candidates, references, distance: str, p: float = 2.0) -> np.ndarray:
  """Distance of each candidate unroll to its nearest state the actors see now.

  For candidate i: min over r of unroll_distances(candidates[i], references[r]
  repeated over the T steps), both under the current network.

  Args:
    candidates: [N, T, F] features of the candidate unrolls.
    references: [R, F] features of the states the actors see now, R >= 1.
    distance: one of DISTANCES (see unroll_distances); for 'kl' the candidate is
      the first argument: KL(softmax(candidate_t) || softmax(reference)).
    p: the norm's order for 'ln_norm', >= 1.

  Returns:
    float64 [N].
  """
  check_distance(distance)
  _check_p(distance, p)
  candidates = _features('candidates', candidates, 3, '[N, T, F]')
  references = _features('references', references, 2, '[R, F]')
  if references.shape[0] < 1 or references.shape[1] != candidates.shape[2]:
    raise ValueError(f'references has shape {references.shape} and candidates '
                     f'{candidates.shape}; accepted: [R, F] with R >= 1 and the '
                     'candidates\' F.')
  num_unrolls, num_steps, _ = candidates.shape
  # Cosine and KL are linear in the per-step sums, so all N x R pairs come from
  # one matrix product instead of a broadcast over [N, R, T, F].
  if distance == 'cosine':
    dot = candidates.sum(axis=1) @ references.T  # [N, R]
    candidate_norm = np.linalg.norm(candidates.reshape(num_unrolls, -1), axis=1)
    # The reference repeated T times has norm sqrt(T) |reference|.
    reference_norm = np.sqrt(num_steps) * np.linalg.norm(references, axis=1)
    pairwise = _cosine_distance(dot, candidate_norm[:, None], reference_norm[None, :])
  elif distance == 'kl':
    log_p = _log_softmax(candidates)
    probs = np.exp(log_p)
    # sum_t KL(p_t || q) = sum_t sum_f p_tf log p_tf - sum_f (sum_t p_tf) log q_f.
    neg_entropy = (probs * log_p).sum(axis=(1, 2))  # [N]
    pairwise = np.maximum(neg_entropy[:, None] - probs.sum(axis=1) @ _log_softmax(references).T,
                          0.0)
  else:
    return _nearest_ln_norm(candidates, references, p)
  return pairwise.min(axis=1)


def _nearest_ln_norm(candidates: np.ndarray, references: np.ndarray, p: float) -> np.ndarray:
  """min over references of the p-norm of (candidate - reference per step), [N]."""
  num_unrolls = candidates.shape[0]
  nearest = np.full(num_unrolls, np.inf)
  # No product form for a general p: broadcast a block of references at a time.
  block = max(1, _BLOCK_ELEMENTS // max(1, candidates.size))
  for start in range(0, references.shape[0], block):
    chunk = references[start:start + block]  # [B, F]
    difference = candidates[None] - chunk[:, None, None, :]  # [B, N, T, F]
    norms = np.linalg.norm(difference.reshape(len(chunk), num_unrolls, -1), ord=p, axis=2)
    nearest = np.minimum(nearest, norms.min(axis=0))
  return nearest


def lambda_at(train_step: int, lambda_batch_multiplier: float, alfa_annealing_factor: float,
              annealing_steps: int) -> float:
  """Candidate multiplier lambda at `train_step`, annealed linearly to 1.

  lambda = max(1, l0 - (l0 - 1) * train_step / (alfa * annealing_steps)): it
  reaches 1 after alfa * annealing_steps learner steps and stays there.
  """
  if not (_is_int(train_step) and train_step >= 0):
    raise ValueError(f'train_step = {train_step!r}; accepted: an int >= 0.')
  if not (_is_number(lambda_batch_multiplier) and lambda_batch_multiplier >= 1):
    raise ValueError(f'lambda_batch_multiplier = {lambda_batch_multiplier!r}; '
                     'accepted: a number >= 1.')
  if not (_is_number(alfa_annealing_factor) and alfa_annealing_factor > 0):
    raise ValueError(f'alfa_annealing_factor = {alfa_annealing_factor!r}; '
                     'accepted: a number > 0.')
  if not (_is_int(annealing_steps) and annealing_steps >= 1):
    raise ValueError(f'annealing_steps = {annealing_steps!r}; accepted: an int >= 1.')
  start = float(lambda_batch_multiplier)
  progress = train_step / (alfa_annealing_factor * annealing_steps)
  return max(1.0, start - (start - 1.0) * progress)


def candidate_count(share: int, lam: float) -> int:
  """Candidates to draw for a share of `share` unrolls: max(share, int(lam * share)).

  int() truncates, as the original does: lam = 1.4, share = 45 gives 62, since
  1.4 * 45 is 62.99999999999999 in floating point.
  """
  if not (_is_int(share) and share >= 0):
    raise ValueError(f'share = {share!r}; accepted: an int >= 0.')
  if not (_is_number(lam) and 1 <= lam < np.inf):
    raise ValueError(f'lam = {lam!r}; accepted: a finite number >= 1 (see lambda_at).')
  return max(int(share), int(lam * share))


def select(distances, times_sampled, n: int, strategy: int) -> np.ndarray:
  """Picks n of M candidates by distance and sampling count (strategies 1-4).

  Args:
    distances: [M] float, smaller = preferred. NaN ranks after every number.
    times_sampled: [M] int, how often each candidate was sampled before.
    n: how many to pick, 0 <= n <= M.
    strategy: one of STRATEGIES (module docstring).

  Returns:
    int64 [n], distinct positions in 0..M-1, deterministic (stable sorts: ties
    keep candidate order). Strategies 1 and 3 list them best first; 2 and 4 one
    per stride, from the closest stride to the farthest.
  """
  check_strategy(strategy)
  distances = np.asarray(distances, np.float64)
  times_sampled = np.asarray(times_sampled)
  if distances.ndim != 1:
    raise ValueError(f'distances has shape {distances.shape}; accepted: [M].')
  if times_sampled.shape != distances.shape or not (
      times_sampled.dtype.kind in 'iu' or times_sampled.size == 0):
    raise ValueError(f'times_sampled has shape {times_sampled.shape} dtype '
                     f'{times_sampled.dtype}; accepted: integers of the distances\' '
                     f'shape {distances.shape}.')
  num_candidates = distances.shape[0]
  if not (_is_int(n) and 0 <= n <= num_candidates):
    raise ValueError(f'n = {n!r}; accepted: an int in [0, {num_candidates}] (the '
                     'number of candidates).')
  if n == 0:
    return np.zeros(0, np.int64)
  order = np.argsort(distances, kind='stable')
  if strategy == 1:
    chosen = order[:n]
  elif strategy == 3:
    # A stable sort by count of the distance order sorts by (count, distance).
    chosen = order[np.argsort(times_sampled[order], kind='stable')][:n]
  else:
    strides = np.array_split(order, n)  # n >= 1 and n <= M: none is empty.
    if strategy == 2:
      chosen = np.array([stride[0] for stride in strides])
    else:
      # argmin takes the first minimum: within a stride, the lower distance.
      chosen = np.array([stride[np.argmin(times_sampled[stride])] for stride in strides])
  return chosen.astype(np.int64)
