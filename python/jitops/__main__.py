"""python -m jitops {ptx, bench, info, warmup, cache}."""

import argparse
import sys


def _user_ptx(args):
    """ptx --source FILE.cu --name k [--template T=float,Dims=2,Index=int32_t]: a user's kernel."""
    from . import RawModule, _config
    from .template import _C_TYPES, parse_signature

    if not args.name:
        raise SystemExit("--name: the kernel to compile in --source (got none)")
    try:
        with open(args.source) as f:
            code = f.read()
    except OSError as exc:
        raise SystemExit(f"--source: cannot read {args.source!r} ({exc.strerror})")
    expression = args.name
    if args.template:
        given = {}
        for item in args.template.split(","):
            key, _, value = item.partition("=")
            if not key.strip() or not value.strip():
                raise SystemExit(f"--template: expected NAME=VALUE pairs separated by commas (got {item!r})")
            given[key.strip()] = value.strip()
        try:
            params, _ = parse_signature(code, args.name)
        except ValueError as exc:
            raise SystemExit(f"--source: {exc}")
        names = [p[0] for p in params]
        unknown = set(given) - set(names)
        if unknown:
            raise SystemExit(f"--template: {sorted(unknown)} are not template parameters of {args.name} ({names})")
        missing = [n for n in names if n not in given]
        if missing:
            raise SystemExit(f"--template: give every template parameter of {args.name}; missing {missing}")
        expression = f"{args.name}<{', '.join(given[n] for n in names)}>"
        code = '#include "jitops/tensor.cuh"\n' + code if "jitops::" in code and "jitops/tensor.cuh" not in code \
            else code
    options = tuple(o for o in (args.options or "").split() if o)
    fn = RawModule(code=code, options=options, name_expressions=[expression]).get_function(expression)
    report = fn.explain(arch=_config.parse_arch(args.arch))[0]
    print(report["source"] if args.print_source else report["ptx"])


def _ptx(args):
    import numpy as np

    from . import _config, _core

    if isinstance(args.source, str):
        return _user_ptx(args)
    if args.op is None:
        raise SystemExit("op: expected index_select, take or gather (or --source FILE.cu --name KERNEL)")
    if args.op not in ("index_select", "take", "gather"):
        raise SystemExit(f"op: expected index_select, take or gather (got {args.op!r})")
    try:
        element_bytes = np.dtype(args.dtype).itemsize if args.dtype != "bfloat16" else 2
    except TypeError:
        raise SystemExit(f"--dtype: unknown dtype {args.dtype!r}")
    index_bytes = {"int32": 4, "int64": 8}.get(args.index_dtype)
    if index_bytes is None:
        raise SystemExit(f"--index-dtype: expected int32 or int64 (got {args.index_dtype!r})")
    if args.dims < 1:
        raise SystemExit(f"--dims: expected a positive count of collapsed dimensions (got {args.dims})")
    report = _core.explain_gather_spec(
        unit_bytes=element_bytes,
        index_bytes=index_bytes,
        dims=args.dims if args.dims <= 6 else 0,  # as the planner does (kSpecializedDims, runtime/launch_shape.h)
        offset_bits=args.offset_bits,
        wrap=args.op == "take",
        flat=False,
        arch=_config.parse_arch(args.arch),
    )
    print(report["source"] if args.source or args.print_source else report["ptx"])


def _info(args):
    from . import _core, cache_dir, cache_stats

    print("jitops", __import__("jitops").__version__)
    try:
        print("nvrtc", _core.nvrtc_info())
    except Exception as exc:  # noqa: BLE001 - report, don't fail
        print("nvrtc: unavailable:", exc)
    ok, why = _core.driver_available()
    print("driver:", "available" if ok else why)
    if ok:
        for d in range(_core.device_count()):
            print(f"cuda:{d}", _core.device_info(d))
    print("cache:", cache_dir(), cache_stats())


def _bench(args):
    if args.sweep:
        from .bench.sweep import main as sweep_main

        return sweep_main(args)
    from .bench.runner import main as bench_main

    return bench_main(args)


def _csv(text):
    return [t.strip() for t in text.split(",") if t.strip()]


def _warmup(args):
    from . import _config, cache_dir
    from .bench.progress import Progress
    from .warmup import ALL_OPS, FLOATS, plan, warmup

    ops = _csv(args.ops) if args.ops else list(ALL_OPS)
    dtypes = _csv(args.dtypes) if args.dtypes else list(FLOATS)
    index_dtypes = _csv(args.index_dtypes)
    for d in index_dtypes:
        if d not in ("int32", "int64"):
            raise SystemExit(f"--index-dtypes: expected int32 and/or int64 (got {d!r})")
    try:
        arch = _config.parse_arch(args.arch)
        total = len(plan(ops, dtypes, index_dtypes))
    except ValueError as exc:
        raise SystemExit(str(exc))
    with Progress(total, "warmup") as progress:
        result = warmup(arch, ops, dtypes, index_dtypes, jobs=args.jobs, progress=progress)
    print(f"warmup sm_{arch}: {result['calls']} calls, {result['kernels']} kernels: {result['compiled']} compiled, "
          f"{result['from_disk']} already on disk, {result['in_memory']} in memory; {result['seconds']:.1f} s; "
          f"cache {cache_dir()}")
    for line in result["unsupported"]:
        print("  not supported:", line)
    return 0


def _cache(args):
    import datetime
    import json

    from . import cache_admin, cache_dir

    directory = args.dir or cache_dir()
    if args.action == "info":
        print(json.dumps(cache_admin.info(directory), indent=2))
    elif args.action == "list":
        for e in cache_admin.entries(directory):
            when = datetime.datetime.fromtimestamp(e["last_used"]).strftime("%Y-%m-%d %H:%M:%S")
            print(f"{when}  {e['bytes']:>9}  {e['arch']:<5} {e['kernel']}  ({e['file']})")
    elif args.action == "clear":
        print(f"removed {cache_admin.clear(directory)} files from {directory}")
    elif args.action == "prune":
        if args.max_bytes is None:
            raise SystemExit("prune: --max-bytes is required (e.g. --max-bytes 500M)")
        try:
            limit = cache_admin.parse_size(args.max_bytes)
        except ValueError as exc:
            raise SystemExit(str(exc))
        r = cache_admin.prune(directory, limit)
        print(f"removed {r['removed']} kernels ({r['freed_bytes']} bytes); {r['kept_files']} kept, "
              f"{r['kept_bytes']} bytes")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m jitops")
    sub = parser.add_subparsers(dest="command", required=True)

    ptx = sub.add_parser("ptx", help="print the PTX of one specialization, or of a kernel of yours; needs no GPU")
    ptx.add_argument("op", nargs="?", help="index_select, take or gather (or give --source FILE.cu --name KERNEL)")
    ptx.add_argument("--dtype", default="float32")
    ptx.add_argument("--index-dtype", default="int64")
    ptx.add_argument("--dims", type=int, default=1, help="dimensions after collapsing (7 and up: generic)")
    ptx.add_argument("--arch", default="sm_90")
    ptx.add_argument("--offset-bits", type=int, default=32, choices=(32, 64))
    ptx.add_argument("--source", nargs="?", const=True, default=False, metavar="FILE.cu",
                     help="alone: print the specialized CUDA source instead; with FILE.cu: compile a kernel of yours")
    ptx.add_argument("--name", help="--source FILE.cu: the kernel's name")
    ptx.add_argument("--template", help="--source FILE.cu: its template arguments, e.g. T=float,Dims=2,Index=int32_t")
    ptx.add_argument("--options", help="--source FILE.cu: NVRTC options, space-separated")
    ptx.add_argument("--print-source", action="store_true", help="print the specialized CUDA source instead")
    ptx.set_defaults(fn=_ptx)

    info = sub.add_parser("info", help="NVRTC, driver, devices and cache")
    info.set_defaults(fn=_info)

    bench = sub.add_parser("bench", help="jitops vs PyTorch on the cases of BENCHMARKS.md")
    bench.add_argument("--out", help="write the results as JSON here")
    bench.add_argument("--markdown", help="write the results table as Markdown here")
    bench.add_argument("--filter", default="", help="run only cases whose name contains this")
    bench.add_argument("--reps", type=int, default=100, help="timed runs per case (median reported)")
    bench.add_argument("--no-jit-costs", action="store_true", help="skip compile / load / per-call timings")
    bench.add_argument("--plot", help="draw speedup and %% of copy speed per case into this PNG (needs matplotlib)")
    bench.add_argument("--tune", action="store_true", help="also tune each case (jitops.tune) and time it again")
    bench.add_argument("--tune-reps", type=int, default=20, help="timed runs per candidate when tuning")
    bench.add_argument("--no-checks", action="store_true",
                       help="skip timing the index cases with index checks off (the cost of the default checks)")
    bench.add_argument("--no-training", action="store_true", help="skip the training steps (forward + backward)")
    bench.add_argument("--sweep", action="store_true",
                       help="random realistic cases of every op family instead of the fixed ones (see --seed, --cases)")
    bench.add_argument("--seed", type=int, default=0, help="--sweep: the seed the cases are drawn from")
    bench.add_argument("--cases", type=int, default=10, help="--sweep: cases drawn per op family")
    bench.set_defaults(fn=_bench)

    warm = sub.add_parser("warmup", help="compile the specializations users will hit into the cache; needs no GPU")
    warm.add_argument("--arch", default="sm_90")
    warm.add_argument("--ops", help="comma-separated op names (default: all)")
    warm.add_argument("--dtypes", help="comma-separated dtypes (default: float32,float16,bfloat16)")
    warm.add_argument("--index-dtypes", default="int64,int32")
    warm.add_argument("--jobs", type=int, default=None, help="compiles at once (default: CPU count, at most 8)")
    warm.set_defaults(fn=_warmup)

    cache = sub.add_parser("cache", help="show and manage the disk cache")
    cache.add_argument("action", choices=("info", "list", "clear", "prune"))
    cache.add_argument("--max-bytes", help="prune: keep at most this much (500M, 2G, or bytes)")
    cache.add_argument("--dir", help="the cache directory (default: jitops.cache_dir())")
    cache.set_defaults(fn=_cache)

    args = parser.parse_args(argv)
    return args.fn(args) or 0


if __name__ == "__main__":
    sys.exit(main())
