"""The replay's event kinds, numbered in their processing order at equal timestamps:
price change, task finish, migration done, revocation, crash (an instance lost to the
cloud's own fault, stratus.sim.faults), instance ready; under a waiting policy
(stratus.commitments.gate) an AJW-T timer running out (the task leaves at the tick at or
after it, ``ReservedGate.due``); scheduling tick. A crash is thus seen by a tick at the
same instant, a task that finishes at a tick frees its room for that tick, and a timer
that runs out at a tick is seen by it. Arrivals and the reserved queue's turn are no
events: both happen at ticks (the engine's one clock). A request refused for
insufficient capacity is no event: the refusal is the request's answer
(stratus.sim.faults)."""

(EV_PRICE, EV_FINISH, EV_MIGRATED, EV_REVOKE, EV_CRASH, EV_READY, EV_DEPART,
 EV_TICK) = range(8)
KINDS = ("price", "finish", "migrated", "revoke", "crash", "ready", "depart", "tick")


def add_handler(handlers: list, kind: int, handler) -> None:
    """Put ``handler`` in a kernel's table (a list indexed by kind) for events of ``kind``:
    one handler per kind, kinds non-negative. Both kernels' ``on`` (stratus.sim.kernel,
    stratus.sim.ckernel)."""
    if kind < 0:
        raise ValueError(f"event kinds are non-negative integers, got {kind}")
    while len(handlers) <= kind:
        handlers.append(None)
    if handlers[kind] is not None:
        raise ValueError(f"event kind {kind} already has a handler")
    handlers[kind] = handler

__all__ = ["EV_CRASH", "EV_DEPART", "EV_FINISH", "EV_MIGRATED", "EV_PRICE", "EV_READY",
           "EV_REVOKE", "EV_TICK", "KINDS", "add_handler"]
