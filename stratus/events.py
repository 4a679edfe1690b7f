"""The replay's event kinds, numbered in their processing order at equal timestamps:
price change, task finish, migration done, revocation, crash (an instance lost to the
cloud's own fault, stratus.faults), instance ready; under a waiting policy
(stratus.waiting_gate) the reserved queue's turn once every finish of the instant is in, a
queued task's departure for the cloud, and a task's arrival (the pool simulator's order:
finishes, then departures, then arrivals); scheduling tick. A crash is thus seen by a tick
at the same instant, and a task that finishes at a tick frees its room for that tick. A
request refused for insufficient capacity is no event: the refusal is the request's answer
(stratus.faults)."""

(EV_PRICE, EV_FINISH, EV_MIGRATED, EV_REVOKE, EV_CRASH, EV_READY, EV_DRAIN, EV_DEPART,
 EV_ARRIVE, EV_TICK) = range(10)
KINDS = ("price", "finish", "migrated", "revoke", "crash", "ready", "drain", "depart",
         "arrive", "tick")

__all__ = ["EV_ARRIVE", "EV_CRASH", "EV_DEPART", "EV_DRAIN", "EV_FINISH", "EV_MIGRATED",
           "EV_PRICE", "EV_READY", "EV_REVOKE", "EV_TICK", "KINDS"]
