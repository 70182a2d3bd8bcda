"""The API routes, one module per group of resource families, each exporting ``OPS``.
:data:`ALL_OPS` is the one route table (the router and /openapi.json are built from it); its
order numbers the OpenAPI operation ids.
"""

from __future__ import annotations

from practiceflow.sandbox.routes import billing, entities, onboarding, webhook_subscriptions
from practiceflow.sandbox.routes.common import Op

ALL_OPS: list[Op] = [*entities.OPS, *billing.OPS, *onboarding.OPS, *webhook_subscriptions.OPS]
