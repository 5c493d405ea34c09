"""Standard-library modules that Twisted imports and our commands never use, loaded on first use.

``twisted.python.compat`` (imported by every Twisted module, through
``twisted.python.failure``) keeps a deprecated alias of ``http.cookiejar``, and
so imports it, and with it ``urllib.request``, ``http.client`` and the
``email`` package: about 60 M instructions and 30 modules, a fifth of what the
dealer imports after its port line, for a name nothing of ours reads. Before
the first Twisted import, :func:`defer_unused_stdlib` puts such modules in
``sys.modules`` as the standard library's lazy modules
(``importlib.util.LazyLoader``, the documented recipe): the import binds the
module, and it is executed when an attribute of it is first read, or when a
plain ``import http.cookiejar`` reads its spec, by whoever does so. Nothing
changes for a caller that does use one, with one caveat of Python 3.11's lazy
modules (later versions lock the load): threads that read a lazy module's
attributes for the first time *at the same moment* can see an ``AttributeError``.
Nothing in the dealer's process reads these modules (its worker threads load
numba, which does not import them), so none race; a plugin that imports one in a
thread should import it on the main thread first.

>>> import sys
>>> defer_unused_stdlib()
>>> "http.cookiejar" in sys.modules
True
"""

from __future__ import annotations

import importlib.util
import sys

#: Imported by Twisted at start-up, never used by our commands (see the module).
UNUSED_BY_US: tuple[str, ...] = ("http.cookiejar",)


def defer_unused_stdlib(names: tuple[str, ...] = UNUSED_BY_US) -> None:
    """Register each module of ``names`` not yet imported as a lazy module (idempotent)."""
    for name in names:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            continue
        loader = importlib.util.LazyLoader(spec.loader)
        spec.loader = loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loader.exec_module(module)
        parent, _, child = name.rpartition(".")
        if parent:  # as an import binds a submodule in its package
            setattr(sys.modules[parent], child, module)
