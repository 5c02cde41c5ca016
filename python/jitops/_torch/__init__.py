"""PyTorch integration: jitops' ops as torch.ops.jitops.* custom ops with
autograd and fake implementations, the plain jitops.<op> names routed to
them when a tensor needs autograd or tracing (fastcall.h), and torch.compile
tracing the plain names through them (dynamo.py).

Nothing here is imported until PyTorch is: jitops.__init__ arms hooks that
install this when torch (custom ops) and torch._dynamo (compile) are loaded.
"""

import threading

_lock = threading.Lock()
_installed = False


def install():
    """Registers the custom ops and their autograd formulas (once)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        from . import gradients, library  # noqa: F401 - defining the ops registers them

        gradients.register()
        _installed = True
