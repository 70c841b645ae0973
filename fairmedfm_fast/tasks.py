"""Many tasks in one call: :func:`evaluate_tasks`.

A public path kept as a thin module; the work is in ``_backends/tasks.py``.
"""
from ._backends.tasks import PER_TASK as PER_TASK
from ._backends.tasks import combine as combine
from ._backends.tasks import evaluate_tasks

__all__ = ["evaluate_tasks"]
