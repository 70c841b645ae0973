"""Progress of long work, the one way the package shows it: a tqdm bar on stderr (or in a notebook).

``progress=None`` (the default of every option that takes it) shows a bar only on a terminal or
in a notebook, and only once the work has run for about two seconds; ``True`` shows it on stderr
at once, whatever stderr is; ``False`` shows nothing. Nothing is ever written to stdout.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

#: With ``progress=None``, a bar appears only after this many seconds of work.
DELAY = 2.0


def check(progress: Any) -> bool | None:
    """``progress`` validated: None, True or False."""
    if progress is None or isinstance(progress, bool):
        return progress
    raise ValueError(f"progress must be None (a bar on a terminal or in a notebook for long work), True or "
                     f"False; got {progress!r}")


def _notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        return type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except Exception:  # any odd IPython state: no notebook
        return False


def _terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """A bar of ``total`` steps (or, with ``total=None``, a line with the elapsed time), or nothing.

    Use as a context manager; :meth:`update` may be called from any thread. ``prefix`` starts the
    description (the command line passes its name).
    """

    def __init__(self, total: int | None, desc: str, progress: bool | None = None, unit: str = "it"):
        self._bar = None
        self._lock = threading.Lock()
        self._ticker: threading.Event | None = None
        progress = check(progress)
        if progress is False or total == 0:
            return
        notebook = progress is None and _notebook()
        if progress is None and not (notebook or _terminal()):
            return
        if notebook:
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
        delay = DELAY
        options: dict[str, Any] = {"desc": desc, "unit": unit, "delay": 0.0 if progress else delay,
                                   "dynamic_ncols": True, "leave": progress is True}
        if not notebook:
            options["file"] = sys.stderr
        if total is None:  # a step without a count: its name and the time so far, refreshed
            options["bar_format"] = "{desc} ... {elapsed}"
        self._bar = tqdm(total=total, **options)
        if total is None:
            self._ticker = threading.Event()
            threading.Thread(target=self._tick, args=(0.0 if progress else delay,), daemon=True).start()

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def _tick(self, delay: float) -> None:
        ticker = self._ticker
        if ticker.wait(delay):
            return
        while True:
            with self._lock:
                if self._bar is None:
                    return
                self._bar.refresh()
            if ticker.wait(1.0):
                return

    def update(self, steps: int = 1) -> None:
        if self._bar is not None:
            with self._lock:
                self._bar.update(steps)

    def grow(self, steps: int) -> None:
        """Add ``steps`` to the bar's total (work found to be larger than announced)."""
        if self._bar is not None and steps and self._bar.total is not None:
            with self._lock:
                self._bar.total += steps
                self._bar.refresh()

    def close(self) -> None:
        if self._ticker is not None:
            self._ticker.set()
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info) -> bool:
        self.close()
        return False
