"""Named cost models: bills of a trace that need no engine (see stratus.app.schedulers)."""

from __future__ import annotations

from stratus.app.schedulers import register_cost_model


@register_cost_model("fargate", "AWS Fargate (§4.3): every task its own Fargate task from "
                     "submit, billed per second at its rounded-up 2018 size and May 2018 prices")
def fargate():
    from stratus.fargate import FargateCostModel

    return FargateCostModel()
