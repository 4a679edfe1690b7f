"""The checks of a replay config's commitment fields (``addons_for`` calls
``check_commitments`` before it builds the add-ons): reserved instances, their discount,
a savings plan, a waiting policy (which needs reserved instances to wait for)."""

from __future__ import annotations

from stratus.base.errors import ConfigError
from stratus.commitments.gate import Waiting
from stratus.commitments.reserved import check_discount, check_reserved
from stratus.commitments.savings import check_plan


def check_commitments(cfg) -> None:
    check_reserved(cfg.reserved, cfg.catalog, "ReplayConfig.reserved")
    check_discount(cfg.reserved_discount, "ReplayConfig.reserved_discount")
    check_plan(cfg.savings_plan, "ReplayConfig.savings_plan")
    if cfg.waiting is not None:
        if not isinstance(cfg.waiting, Waiting):
            raise ConfigError(f"ReplayConfig.waiting takes a Waiting object, got "
                              f"{cfg.waiting!r} (stratus.commitments.gate.parse_waiting "
                              f"reads POLICY[:b=,t=])")
        if not cfg.reserved:
            raise ConfigError("a waiting policy (--waiting) needs reserved instances to "
                              "wait for (--reserved TYPE:COUNT)")


__all__ = ["check_commitments"]
