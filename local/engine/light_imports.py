"""moto's EC2 and Batch models, imported only if something calls them.

moto's SSM model imports ``moto.ec2`` (for SendCommand's instance targets) and the Step
Functions engine's Batch task imports ``moto.batch.utils``, whose package imports the
Batch model and with it EC2, ECS, CloudWatch Logs and IAM. Importing ``moto.ec2`` parses
about 95 JSON files of instance types and the whole EC2 service model to list Regions:
a second of a `chatguard chat` (``python -X importtime``; docs/benchmarks.md, "CLI"). The
local runtime calls neither service.

Both packages' ``__init__`` only re-export their ``models``' backends. `defer()` registers
each package without running that ``__init__`` (its submodules import as usual: the Batch
task's ``moto.batch.utils`` needs no model), and puts a stand-in in the backends' place
that imports the real model the first time anything reads it, so code that does call EC2
or Batch still gets moto's full model. A package already imported, or one whose
``__init__`` does more than that line (another moto), is left to import as usual.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Iterator
from typing import Any

_PACKAGES = {"moto.ec2": "ec2_backends", "moto.batch": "batch_backends"}
_LOCK = threading.Lock()


class DeferredBackends:
    """A module's backends, imported the first time they are read."""

    def __init__(self, module: str, name: str) -> None:
        self._module, self._name = module, name

    @property
    def real(self) -> Any:
        return getattr(importlib.import_module(self._module), self._name)

    def __getitem__(self, key: str) -> Any:
        return self.real[key]

    def __contains__(self, key: object) -> bool:
        return key in self.real

    def __iter__(self) -> Iterator[str]:
        return iter(self.real)

    def __len__(self) -> int:
        return len(self.real)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def defer() -> None:
    with _LOCK:
        for package, backends in _PACKAGES.items():
            if package not in sys.modules:
                _register_unopened(package, backends)


def _register_unopened(package: str, backends: str) -> None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "get_source"):
        return
    source = spec.loader.get_source(package) or ""
    if source.strip() != f"from .models import {backends}  # noqa: F401":
        return  # this moto's package does more at import: import it as usual
    module = importlib.util.module_from_spec(spec)
    models = f"{package}.models"
    setattr(module, backends, DeferredBackends(models, backends))

    def anything_else(name: str) -> Any:  # PEP 562: what the real __init__ would bind
        return getattr(importlib.import_module(models), name)

    module.__getattr__ = anything_else  # type: ignore[method-assign]
    sys.modules[package] = module
    parent, _, child = package.rpartition(".")
    setattr(sys.modules[parent], child, module)
