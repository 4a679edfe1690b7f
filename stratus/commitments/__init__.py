"""Commitments: what a replay may have paid for ahead, as engine add-ons (stratus.sim.hooks).

- ``reserved``: reserved instances (``--reserved``), their rates and what ran where;
- ``savings``: a savings plan (``--savings-plan``), its parsing and its bill;
- ``gate``: a waiting policy at the door of the reserved instances (``--waiting``);
- ``addons``: the three as add-ons, and ``addons_for(cfg)``;
- ``check``: the checks of a config's commitment fields.
"""
