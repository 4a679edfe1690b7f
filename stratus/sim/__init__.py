"""The simulation core: the kernel (clock and event heap), the engine core's state machine
and its replay driver, the task book, the cloud, the accounting, the decision applier, the
cluster view, the result and the configuration's one resolution.

It imports nothing of the project above ``stratus.base``, ``stratus.pricing`` and
``stratus.traces`` (tests/project/test_layers.py): policies, commitments and applications
build on it, and reach it through its public seams (``hooks.AddOn``, ``view.ClusterView``,
``decisions.Decisions``).
"""
