"""Arms jitops' PyTorch integration (jitops._torch) without importing PyTorch:
the custom ops are registered once torch is imported, the torch.compile
polyfills once torch._dynamo is (torch.compile imports it). Either runs at
once when the module is already loaded."""

import importlib.abc
import importlib.util
import sys


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `callback` right after module `name` has been executed."""

    def __init__(self, name, callback):
        self.name, self.callback, self.busy = name, callback, False

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module, finder = spec.loader.exec_module, self

        def exec_then_callback(module):
            exec_module(module)
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            finder.callback()

        spec.loader.exec_module = exec_then_callback
        return spec


def _install_ops():
    from ._torch import install

    install()


def _install_compile():
    from ._torch import dynamo

    dynamo.register()


def arm():
    for name, callback in (("torch", _install_ops), ("torch._dynamo", _install_compile)):
        if name in sys.modules:
            callback()
        else:
            sys.meta_path.insert(0, _AfterImport(name, callback))
