"""What a scheduler is made of: the plan and the part protocols with their declared
parameters (``compose``, ``params``), the runtime estimators that learn from a trace's
history (``estimators``, ``history``, ``history_options``) and the time windows they
learn over (``windows``). Packers and scalers (``stratus.packers``, ``stratus.scalers``)
implement these contracts; the core (``stratus.sim``) knows none of them.
"""
