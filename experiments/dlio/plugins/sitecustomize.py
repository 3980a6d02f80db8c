"""Run by every Python interpreter that DLIO's runs start (this folder is their PYTHONPATH,
:mod:`experiments.dlio.runner`): DLIO 2.0's TensorBoard profiler module, and TensorFlow with it,
loaded when that profiler is first asked for instead of when DLIO starts.

DLIO's ``profiler_factory`` imports ``profiler.tf_profiler`` at load, and that module imports
TensorFlow, whatever profiler the run uses: 3.2 of the 4.5 s that ``import dlio_benchmark.main``
took on the idle 2-core reference box, several times that under the tracer of a traced pass
(every file TensorFlow's import opens and reads is a traced call; docs/statistics.md, "The traced
comparison's cost"). The PyTorch runs (UNET3D, DLRM, RetinaNet; ``profiling: false``, profiler
``none``) never use it. Here ``TFProfiler`` stands in for DLIO's class and loads DLIO's own module
on first use (``profiler: tensorboard``); a TensorFlow run (BERT) still imports TensorFlow through
its framework, reader and data loader, as before. Nothing DLIO reads, writes or times changes:
only what its interpreter imports before its first epoch. It imports only the standard library.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import sys

DEFERRED = "dlio_benchmark.profiler.tf_profiler"


def _dlio_module():
    """DLIO's own ``tf_profiler`` (importing TensorFlow), put where the stand-in was."""
    parent = importlib.import_module(DEFERRED.rsplit(".", 1)[0])
    spec = importlib.machinery.PathFinder.find_spec(DEFERRED, parent.__path__)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[DEFERRED] = mod
    spec.loader.exec_module(mod)
    return mod


class TFProfiler:
    """DLIO's ``TFProfiler``, loaded (with TensorFlow) by its first ``get_instance``."""

    @staticmethod
    def get_instance():
        return _dlio_module().TFProfiler.get_instance()


class _Deferred(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        return importlib.util.spec_from_loader(name, self) if name == DEFERRED else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.TFProfiler = TFProfiler


sys.meta_path.insert(0, _Deferred())
