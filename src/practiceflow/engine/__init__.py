"""Running one action (:func:`run_action`, returning an :class:`ActionResult`). The engine knows
no endpoint: all that is specific lives in the YAML modules and :mod:`practiceflow.hooks`.
"""

from __future__ import annotations

from practiceflow.engine.run import ActionResult, run_action, validate_input

__all__ = ["ActionResult", "run_action", "validate_input"]
