"""python -m jitops {ptx, bench, info}."""

import argparse
import sys


def _ptx(args):
    import numpy as np

    from . import _config, _core

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
        dims=args.dims if args.dims <= 3 else 0,
        offset_bits=args.offset_bits,
        wrap=args.op == "take",
        flat=False,
        arch=_config.parse_arch(args.arch),
    )
    print(report["source"] if args.source else report["ptx"])


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
    from .bench.runner import main as bench_main

    return bench_main(args)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m jitops")
    sub = parser.add_subparsers(dest="command", required=True)

    ptx = sub.add_parser("ptx", help="print the PTX (or --source) of one specialization; needs no GPU")
    ptx.add_argument("op")
    ptx.add_argument("--dtype", default="float32")
    ptx.add_argument("--index-dtype", default="int64")
    ptx.add_argument("--dims", type=int, default=1, help="dimensions after collapsing (4 and up: generic)")
    ptx.add_argument("--arch", default="sm_90")
    ptx.add_argument("--offset-bits", type=int, default=32, choices=(32, 64))
    ptx.add_argument("--source", action="store_true", help="print the specialized CUDA source instead")
    ptx.set_defaults(fn=_ptx)

    info = sub.add_parser("info", help="NVRTC, driver, devices and cache")
    info.set_defaults(fn=_info)

    bench = sub.add_parser("bench", help="jitops vs PyTorch on the cases of BENCHMARKS.md")
    bench.add_argument("--out", help="write the results as JSON here")
    bench.add_argument("--markdown", help="write the results table as Markdown here")
    bench.add_argument("--filter", default="", help="run only cases whose name contains this")
    bench.add_argument("--reps", type=int, default=100, help="timed runs per case (median reported)")
    bench.add_argument("--no-jit-costs", action="store_true", help="skip compile / load / per-call timings")
    bench.set_defaults(fn=_bench)

    args = parser.parse_args(argv)
    return args.fn(args) or 0


if __name__ == "__main__":
    sys.exit(main())
