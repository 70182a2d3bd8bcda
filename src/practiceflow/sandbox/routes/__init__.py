"""The API routes of the sandbox, one module per group of resource families.

Each module exports ``OPS``: the operations it serves, with what the OpenAPI document says
about them. :data:`ALL_OPS` is the one route table (the router and /openapi.json are both
built from it); its order numbers the OpenAPI operation ids.
"""

from __future__ import annotations

from practiceflow.sandbox.routes import billing, entities, onboarding, webhook_subscriptions
from practiceflow.sandbox.routes.common import Op

ALL_OPS: list[Op] = [*entities.OPS, *billing.OPS, *onboarding.OPS, *webhook_subscriptions.OPS]
