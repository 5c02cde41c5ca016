"""Autotuning of launch configurations.

Every tunable kernel (index_select/take/gather, the accumulate ops, the
elementwise ops, upsample, histc) plans its launch from a *point*: the traits
that select its code and the power-of-two buckets of the sizes its launch
depends on. ``tune(op, *args)`` times the heuristic default and every
candidate configuration of the kernels the call launches (CUDA events, the L2
flushed before each run, median), keeps the fastest for those points, and
writes every measurement to the GPU's file in the cache directory:
``tuning/<GPU>-sm<arch>-driver<version>-jitops<version>.tsv``, one line per
(point, configuration), merged under a lock and renamed into place. Later
processes read it when they first plan for that GPU and take the fastest
configuration of each point; measuring a new candidate adds lines and keeps
the others.

``set_autotune(True)`` (or ``JITOPS_AUTOTUNE=1``) tunes a point the first time
a call plans it with no result on record (with fewer repetitions).
"""

import fcntl
import os
import statistics
import tempfile
import threading
import warnings

import numpy as np

from . import _core, _host

HEURISTIC = "heuristic"
_FLUSH_BYTES = 256 << 20  # several times the L2 of an H100 / H200
_warned = set()
_lock = threading.Lock()


def set_autotune(on=True):
    """Tune each (kernel point, GPU) automatically the first time a call plans it."""
    _core.set_autotune(bool(on))


def autotune_enabled():
    return _core.autotune_enabled()


class TuneResult(list):
    """Rows ``{"config", "median_us", "error"}``, fastest first, with the chosen one and the points tuned."""

    def __init__(self, rows, points, chosen, default_us):
        super().__init__(rows)
        self.points = points
        self.chosen = chosen
        self.default_us = default_us
        self.best_us = next((r["median_us"] for r in rows if r["config"] == chosen), None)

    @property
    def speedup(self):
        """Default time / chosen time (1.0 when the heuristic stays)."""
        return self.default_us / self.best_us if self.best_us else None

    def __str__(self):
        lines = [f"{len(self.points)} kernel point(s): " + "; ".join(p["description"] for p in self.points)]
        for r in self:
            mark = "*" if r["config"] == self.chosen else " "
            time = f"{r['median_us']:9.2f} us" if r["median_us"] is not None else f"  failed: {r['error']}"
            lines.append(f"{mark} {r['config']:<40} {time}")
        if self.best_us:
            lines.append(f"chosen: {self.chosen} ({self.speedup:.3f}x the heuristic default)")
        return "\n".join(lines)


def _device_operands(op, args, kwargs):
    """Host arrays become device copies, so that timing measures the kernels alone."""
    args = list(args)
    device = next((_host._device_of(a) for a in list(args) + list(kwargs.values())
                   if a is not None and not _host.is_number(a) and _is_array(a) and not _host._is_host(a)), 0)
    for i, a in enumerate(args):
        if _is_array(a) and _host._is_host(a):
            host, dtype = _host._as_numpy(a, f"args[{i}]", False)
            args[i] = _host.to_device(host, dtype, device)
    for k, a in list(kwargs.items()):
        if _is_array(a) and _host._is_host(a):
            host, dtype = _host._as_numpy(a, k, False)
            kwargs[k] = _host.to_device(host, dtype, device)
    return args, kwargs


def _is_array(obj):
    if obj is None or _host.is_number(obj) or isinstance(obj, (str, bytes, tuple)):
        return False
    try:
        return isinstance(obj, np.ndarray) or _core.array_kind(obj) not in ("host", "virtual")
    except Exception:  # noqa: BLE001 - not an array
        return False


def _written_arrays(op, args, kwargs):
    """The arrays the op modifies in place (restored between runs)."""
    from .elementwise_kernel import ElementwiseKernel
    from .ops import OPS

    name = getattr(op, "__name__", None)
    if callable(getattr(op, "_written", None)):  # a Template: its non-const tensors and pointers
        return [a for a in op._written(args) if _is_array(a)]
    if isinstance(op, ElementwiseKernel):
        return [a for a in args[len(op.in_params):] if _is_array(a)]
    if name in OPS and name.endswith("_") and args:
        return [args[0]]
    return []


def _as_host(result):
    if result is None or isinstance(result, np.ndarray):
        return result
    if isinstance(result, (tuple, list)):
        return [_as_host(r) for r in result]
    if _core.array_kind(result) == "torch":
        return result.detach().float().cpu().numpy() if result.dtype.is_floating_point else result.cpu().numpy()
    if _core.array_kind(result) == "jitops":
        return _host.to_host(result)
    return np.asarray(result.get() if hasattr(result, "get") else result)


def _same(a, b):
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    if a.dtype.kind == "f" or a.dtype.kind == "c":
        return np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-2, atol=1e-2, equal_nan=True)
    return np.array_equal(a, b)


def tune(op, *args, reps=30, warmup=3, only_missing=False, **kwargs):
    """Times the launch configurations of the kernels ``op(*args, **kwargs)`` launches and keeps the fastest.

    ``op`` is a jitops op (or an ``ElementwiseKernel``). Host arrays are copied
    to the GPU once; arrays the op modifies in place are restored before every
    run and left as they were. Each candidate's result is checked against the
    heuristic's. The chosen configuration serves every call whose kernels fall
    in the same points (same traits, sizes in the same powers of two) on this
    GPU, in this process and in later ones. Returns a :class:`TuneResult`.
    """
    from .raw_kernel import _Function

    if isinstance(op, _Function):
        raise TypeError("op: a RawKernel launches with the grid and block its caller gives, so there is nothing "
                        "to tune; write it as a jitops.Template to have its launch planned and tuned")
    args, kwargs = _device_operands(op, args, kwargs)
    first = next((a for a in list(args) + list(kwargs.values()) if _is_array(a)), None)
    if first is None:
        raise TypeError("args: tune needs the op's arrays (got no array argument)")
    device, stream = _core.call_stream(first)
    written = _written_arrays(op, args, kwargs)
    saved = [_core.snapshot(a) for a in written]

    def restore():
        for a, s in zip(written, saved):
            _core.restore(a, s)

    def run(config):
        return _core._tuning_run(lambda: op(*args, **kwargs), config)

    try:
        restore()
        reference, points = run(None)
        _core.synchronize(device)
        reference = _as_host(reference if not written else written)
        if not points:
            return TuneResult([], [], None, None)
        for p in points:
            _core.mark_attempted(device, 0, p["point"])
        families = []
        for p in points:
            family = p["description"].split()[0]
            if family not in families:
                families.append(family)
        candidates = [HEURISTIC]
        if callable(getattr(op, "_tuning_candidates", None)):  # users' kernels say what they may vary
            candidates += [c for c in op._tuning_candidates() if c not in candidates]
        for family in families:
            candidates += [c for c in _core.tuning_candidates(family) if c not in candidates]
        known = _recorded(device) if only_missing else {}
        rows = []
        for config in candidates:
            if only_missing and config != HEURISTIC and all((p["point"], config) in known for p in points):
                rows.append({"config": config, "median_us": min(known[(p["point"], config)] for p in points),
                             "error": None, "from_file": True})
                continue
            forced = None if config == HEURISTIC else config
            try:
                restore()
                got, _ = run(forced)
                _core.synchronize(device)
                if not _same(_as_host(got if not written else written), reference):
                    rows.append({"config": config, "median_us": None, "error": "result differs from the heuristic's"})
                    continue
                times = _core.time_call(lambda: run(forced), restore if written else None, device, stream, reps,
                                        warmup, _FLUSH_BYTES)
                rows.append({"config": config, "median_us": statistics.median(times), "error": None})
            except Exception as exc:  # noqa: BLE001 - a candidate that fails is reported, not fatal
                rows.append({"config": config, "median_us": None, "error": f"{type(exc).__name__}: {exc}"})
    finally:
        restore()
        _core.synchronize(device)
    timed = [r for r in rows if r["median_us"] is not None]
    if not timed:
        return TuneResult(rows, points, None, None)
    best = min(timed, key=lambda r: r["median_us"])
    default_us = next((r["median_us"] for r in timed if r["config"] == HEURISTIC), None)
    for p in points:
        _core.set_tuned(device, 0, p["point"], best["config"])
    _store(device, 0, points, [r for r in timed if not r.get("from_file")])
    rows.sort(key=lambda r: (r["median_us"] is None, r["median_us"] or 0.0))
    return TuneResult(rows, points, best["config"], default_us)


def tuning_file(device=0, arch=0):
    """The file that holds ``device``'s results ("" when the disk cache is off)."""
    return _core.tuning_device(device, arch)["file"]


def _read(path):
    """{(point, config): (median_us, description)} from a tuning file the cache trusts (an untrusted one
    is refused with a warning and counted as rejected: it could choose launches that misbehave)."""
    entries = {}
    trusted, exists, _ = _core.cache_file_trust(path, os.path.dirname(path))
    if not trusted or not exists:
        return entries
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW)) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 3:
                    continue
                try:
                    entries[(fields[0], fields[1])] = (float(fields[2]), fields[3] if len(fields) > 3 else "")
                except ValueError:
                    continue
    except (FileNotFoundError, OSError):
        pass
    return entries


def _recorded(device, arch=0):
    path = tuning_file(device, arch)
    return {k: v[0] for k, v in _read(path).items()} if path else {}


def _store(device, arch, points, rows):
    """Merges measurements into the device's file: under its lock, written to a
    temporary name and renamed, so readers never see half a file."""
    path = tuning_file(device, arch)
    if not path or not rows:
        return
    try:
        file_mode, dir_mode = _core.cache_modes()
        os.makedirs(os.path.dirname(path), mode=dir_mode, exist_ok=True)
        trusted, _, why = _core.cache_file_trust(path, os.path.dirname(path))
        if not trusted:
            raise OSError(why)
        with _lock, open(os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, file_mode)) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = _read(path)
            for p in points:
                for r in rows:
                    entries[(p["point"], r["config"])] = (r["median_us"], p["description"])
            info = _core.tuning_device(device, arch)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tuning-")
            os.fchmod(fd, file_mode)
            with os.fdopen(fd, "w") as f:
                f.write(f"# jitops tuning results v1: {info['name']} {info['arch']} driver {info['driver']}\n")
                f.write("# point\tconfig\tmedian_us\tdescription\n")
                for (point, config), (us, desc) in sorted(entries.items()):
                    f.write(f"{point}\t{config}\t{us:.3f}\t{desc}\n")
            os.replace(tmp, path)
    except OSError as exc:
        _warn_once("store", f"jitops: tuning results stay in memory; the cache directory is not writable ({exc})")


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _autotune(name, args, kwargs):
    """Called by an op after it planned a point with no result while autotuning is on."""
    if "_explain" in kwargs:
        return
    from . import ops

    _autotune_call(getattr(ops, name), name, args, kwargs)


def _autotune_call(op, name, args, kwargs):
    try:
        tune(op, *args, reps=10, warmup=2, only_missing=True, **kwargs)
    except Exception as exc:  # noqa: BLE001 - tuning must never break the call it follows
        _warn_once(("autotune", name), f"jitops: autotuning {name} failed and was skipped ({type(exc).__name__}: {exc})")
