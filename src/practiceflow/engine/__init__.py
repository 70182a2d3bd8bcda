"""Running one action: validate input, check, render, send (or describe), map, validate.

:func:`run_action` is the whole contract; :class:`ActionResult` is what it returns. The
engine knows no endpoint: everything specific lives in the action's YAML module and in the
named checks and hooks of :mod:`practiceflow.hooks`.
"""

from __future__ import annotations

from practiceflow.engine.run import ActionResult, run_action, validate_input

__all__ = ["ActionResult", "run_action", "validate_input"]
