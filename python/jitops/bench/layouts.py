"""Operands of sweep cases as plain descriptions: shape, dtype and strides over a
storage, so one drawn case becomes either PyTorch tensors (on the GPU) or
jitops.VirtualArray stand-ins (to plan and explain it with no GPU).

A layout is worked out arithmetically: contiguous, dims stored in another order
(transposed, channels_last), a dim sliced with a step, or dims broadcast
(stride 0). Values are drawn on the device at build time from a seed.
"""

from dataclasses import dataclass, field
from typing import Optional, Tuple

ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
            "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8, "complex128": 16}

LAYOUTS = ("contiguous", "transposed", "sliced", "channels_last", "expanded")


def _product(values):
    out = 1
    for v in values:
        out *= v
    return out


def strides_for_order(shape, order):
    """Strides of a dense array whose dims are stored outermost-first in `order`."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return strides


@dataclass
class Dense:
    """An array of `shape` and `dtype` viewing `storage` elements at `strides` from `offset`."""

    shape: Tuple[int, ...]
    dtype: str
    strides: Tuple[int, ...]
    storage: int
    offset: int = 0
    layout: str = "contiguous"
    values: str = "normal"  # normal | near_one | positive | small_int

    @property
    def itemsize(self):
        return ITEMSIZE[self.dtype]

    @property
    def numel(self):
        return _product(self.shape)

    @property
    def distinct_bytes(self):
        """Bytes of the distinct elements (a broadcast dim counts once)."""
        return _product(s for s, st in zip(self.shape, self.strides) if st != 0) * self.itemsize

    def contiguous_run(self, after_dim=-1):
        """Elements in the innermost run that is dense in memory, counting only dims after `after_dim`."""
        run, expected = 1, 1
        for d in range(len(self.shape) - 1, after_dim, -1):
            if self.shape[d] == 1:
                continue
            if self.strides[d] != expected:
                break
            run *= self.shape[d]
            expected *= self.shape[d]
        return run

    def describe(self):
        dims = "x".join(str(s) for s in self.shape) or "scalar"
        tag = "" if self.layout == "contiguous" else f" {self.layout}"
        return f"{self.dtype}({dims}){tag}"

    def virtual(self):
        import jitops

        return jitops.VirtualArray(list(self.shape), self.dtype, list(self.strides), 256 + self.offset * self.itemsize)


def dense(shape, dtype, layout="contiguous", rng=None, values="normal"):
    """A Dense of `layout`; `rng` (numpy Generator) picks the order, sliced dim and step, broadcast dims."""
    shape = tuple(int(s) for s in shape)
    n = len(shape)
    if layout == "transposed" and n >= 2:
        order = list(range(n))
        while order == list(range(n)):
            order = [int(v) for v in rng.permutation(n)]
        return Dense(shape, dtype, tuple(strides_for_order(shape, order)), max(_product(shape), 1), 0, layout, values)
    if layout == "channels_last" and n == 4:
        return Dense(shape, dtype, tuple(strides_for_order(shape, [0, 2, 3, 1])), max(_product(shape), 1), 0, layout,
                     values)
    if layout == "sliced" and n >= 1:
        d = int(rng.integers(0, n))
        step = int(rng.choice([2, 3]))
        start = int(rng.integers(0, step))
        base = list(shape)
        base[d] = shape[d] * step + start
        base_strides = strides_for_order(base, list(range(n)))
        strides = list(base_strides)
        strides[d] *= step
        return Dense(shape, dtype, tuple(strides), max(_product(base), 1), start * base_strides[d], layout, values)
    if layout == "expanded" and n >= 1:
        # Dims of size > 1 broadcast from size 1 (at least one, not all when there are several).
        candidates = [d for d in range(n) if shape[d] > 1]
        if candidates:
            k = int(rng.integers(1, max(2, len(candidates))))
            broadcast = set(int(v) for v in rng.choice(candidates, size=min(k, len(candidates)), replace=False))
            kept = [1 if d in broadcast else shape[d] for d in range(n)]
            strides = strides_for_order(kept, list(range(n)))
            strides = tuple(0 if d in broadcast else strides[d] for d in range(n))
            return Dense(shape, dtype, strides, max(_product(kept), 1), 0, layout, values)
    return Dense(shape, dtype, tuple(strides_for_order(shape, list(range(n)))), max(_product(shape), 1), 0,
                 "contiguous", values)


@dataclass
class Index:
    """An index array: values in [low, high) drawn as `kind` (random, sorted, repeated, unique), over a
    storage viewed at `strides` (stride 0 where an index is broadcast, as scatter's expanded (n, 1) rows)."""

    shape: Tuple[int, ...]
    dtype: str
    high: int
    kind: str = "random"
    low: int = 0
    strides: Optional[Tuple[int, ...]] = None
    storage: Optional[int] = None

    def __post_init__(self):
        if self.strides is None:
            self.strides = tuple(strides_for_order(self.shape, list(range(len(self.shape)))))
            self.storage = max(_product(self.shape), 1)

    @property
    def numel(self):
        return _product(self.shape)

    @property
    def itemsize(self):
        return ITEMSIZE[self.dtype]

    @property
    def distinct_bytes(self):
        return _product(s for s, st in zip(self.shape, self.strides) if st != 0) * self.itemsize

    def describe(self):
        dims = "x".join(str(s) for s in self.shape) or "scalar"
        expanded = " expanded" if 0 in self.strides and self.numel > 1 else ""
        return f"{self.dtype}({dims}){expanded} {self.kind}"

    def virtual(self):
        import jitops

        return jitops.VirtualArray(list(self.shape), self.dtype, list(self.strides))


def expanded_rows(n, width, dtype, high, kind="random"):
    """An (n, width) index whose rows repeat one value: an (n, 1) index expanded, as GNN scatters pass it."""
    return Index((n, width), dtype, high, kind, strides=(1, 0), storage=max(n, 1))


@dataclass
class Number:
    """A Python number argument (kept as is by both backends)."""

    value: object

    def describe(self):
        return repr(self.value)


@dataclass
class Built:
    """A case's operands made real: `values` maps names to tensors or numbers; `fresh(name)` makes a new
    copy of an operand in the same layout (for in-place ops, which must start from the same values)."""

    values: dict
    storages: dict = field(default_factory=dict)

    def fresh(self, name, spec):
        import torch

        storage = self.storages[name].clone()
        return torch.as_strided(storage, spec.shape, spec.strides, spec.offset)


def _random_storage(torch, spec, device, generator):
    n = spec.storage
    dtype = getattr(torch, spec.dtype)
    if spec.dtype == "bool":
        return torch.randint(0, 2, (n,), device=device, generator=generator).bool()
    if spec.dtype.startswith("complex"):
        return torch.randn(n, dtype=dtype, device=device, generator=generator)
    if spec.dtype.startswith(("int", "uint")):
        low, high = (0, 200) if spec.dtype.startswith("uint") else (-100, 100)
        if spec.values in ("small_int", "near_one"):
            low, high = (1, 4)
        return torch.randint(low, high, (n,), device=device, generator=generator).to(dtype)
    x = torch.randn(n, device=device, generator=generator)
    if spec.values == "near_one":
        x = 1 + 0.05 * x
    elif spec.values == "positive":
        x = x.abs() + 0.5
    return x.to(dtype)


def _index_storage(torch, spec, device, generator):
    n = spec.storage
    span = max(spec.high - spec.low, 1)
    if spec.kind == "unique":
        values = torch.randperm(span, device=device, generator=generator)[:n]
    elif spec.kind == "repeated":  # a few hot values: many duplicates
        pool = torch.randint(0, span, (max(1, min(8, span)),), device=device, generator=generator)
        values = pool[torch.randint(0, pool.numel(), (n,), device=device, generator=generator)]
    else:
        values = torch.randint(0, span, (n,), device=device, generator=generator)
        if spec.kind == "sorted":
            values = values.sort().values
    return (values + spec.low).to(getattr(torch, spec.dtype))


def build_torch(torch, operands, device, seed):
    """Tensors for `operands` (name -> Dense, Index or Number), drawn from `seed`."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    built = Built({})
    for name, spec in operands.items():
        if isinstance(spec, Number):
            built.values[name] = spec.value
            continue
        make = _index_storage if isinstance(spec, Index) else _random_storage
        storage = make(torch, spec, device, generator)
        built.storages[name] = storage
        offset = spec.offset if isinstance(spec, Dense) else 0
        built.values[name] = torch.as_strided(storage, spec.shape, spec.strides, offset)
    return built


def build_virtual(operands):
    """jitops.VirtualArray stand-ins for `operands` (numbers as they are), for explain() with no GPU."""
    return {name: spec.value if isinstance(spec, Number) else spec.virtual() for name, spec in operands.items()}
