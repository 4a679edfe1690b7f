"""The simulated cloud's own faults (issue 9; issue 24 item 5): instances that die and
requests the provider cannot fill.

``crash:RATE`` -- every instance, once it is up, dies as a Poisson process of RATE per
instance-hour: its lifetime to a crash is exponential with mean 1/RATE hours. At the crash
its bill stops, and its tasks lose their progress and go back to pending.

``ice:PROB`` -- the provider refuses a launch call with probability PROB (insufficient
capacity, "ICE" on AWS). A policy's acquisitions of one type in one market at one tick are
one launch call, all or nothing (RunInstances with MinCount = their number), with one
draw. The refusal is the call's answer, known when the request is made: no instance, no
bill, no spin-up; the tasks stay pending, in their place, and come back to the policy at
its next tick (it is asked once per tick: asking again for a short type cannot spin at one
instant). ``ice-window:S`` -- a drawn refusal starts a shortage of that instance type (every
market) for S seconds: every call for the type is refused at once meanwhile, without a
draw, and the policies see the type as unavailable (``ClusterView.unavailable_types``;
``acquirable_types`` leaves it out).

Why at the request. EC2 reports insufficient capacity as the error code
``InsufficientInstanceCapacity`` of the launch call itself (RunInstances), and an EC2 Fleet
of type ``instant`` (CreateFleet) returns the instances it could not launch, with their
error codes, in the call's response:

* EC2 API error codes: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
* CreateFleetError, "the instances that could not be launched by the fleet", with an error
  code from the page above; CreateFleet's response carries them only for fleets of type
  ``instant``: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateFleetError.html
* Amazon EC2 User Guide, "Insufficient instance capacity":
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/troubleshooting-launch.html#troubleshooting-launch-capacity

Why one draw per call, not per instance. RunInstances' MinCount: "If you specify a value
that is more capacity than Amazon EC2 can provide in the target Availability Zone, Amazon
EC2 does not launch any instances"
(https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/ec2/aws.sdk.kotlin.services.ec2.model/-run-instances-request/min-count.html).
A shortage is the state of a pool at a moment, which every launch into it at that moment
meets. One draw per instance would make a tick's N launches of a type fail with
probability 1 - (1 - PROB)^N: a policy that rents one instance per task (hundreds per tick)
would find every type short at nearly every tick and drain its queue by about 1/PROB
instances per type per window, so that the same PROB would mean a different cloud for
each policy (on 8,822 synthetic tasks over two hours at ice:0.05, task-per-instance met
1,398,843 refusals so drawn, 2,060 with one draw per call; docs/findings/faults.md).

Why per type. What runs short is the capacity of one instance type in one Availability
Zone: an AWS engineer's advice on the EC2 forum (relayed at
https://shlomoswidler.com/2009/10/17/avoiding-ec2-insufficientinstancecapaci/) is to wait,
to leave the zone open, or to try a different instance type, and AWS's page on the
database analogue
(https://docs.aws.amazon.com/neptune/latest/userguide/insufficientDBInstancesAvailable.html)
says the same of instance classes; Karpenter's AWS provider, on such an error, sets the
offering (capacity type, instance type, zone) aside for three minutes
(``UnavailableOfferingsTTL`` in aws/karpenter-provider-aws, pkg/cache/cache.go). So a
shortage here is of one type, not its family; the replay has one zone; it covers every
market (Karpenter's key has the capacity type too: a replay mostly rents in one market).

Not verified: the text of the error-codes page and of the User Guide section themselves
(only links to them, from the CreateFleetError and Neptune pages, were read), so that
RunInstances returns the error synchronously rests on those pages, on the MinCount text
and on reports of the call's output, not on an AWS sentence read here; how long real
shortages last (S is the user's; Karpenter's three minutes is a client's guess); whether
a pool short for a call of N instances would take a call of fewer (this model: no, within
the tick); whether one size of a family running short makes its other sizes short (this
model: no).

Faults draw from their own random stream (seeded from the replay's seed), so a replay
without faults draws exactly what it drew before they existed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from stratus.base.bounds import MAX_SECONDS
from stratus.base.errors import ConfigError

KEYS = ("crash", "ice", "ice-window")


@dataclass(frozen=True)
class Faults:
    crash_per_hour: float = 0.0  # instance crashes per instance-hour (Poisson)
    ice_prob: float = 0.0  # probability that an acquisition request fails
    ice_window_s: float = 0.0  # a failed type stays unavailable this long (0: no window)

    def __bool__(self) -> bool:
        return self.crash_per_hour > 0 or self.ice_prob > 0

    def spec(self) -> str:
        parts = [f"crash:{self.crash_per_hour:g}", f"ice:{self.ice_prob:g}"]
        if self.ice_window_s:
            parts.append(f"ice-window:{self.ice_window_s:g}")
        return ",".join(parts)

    def validate(self, what: str = "faults") -> None:
        if not (math.isfinite(self.crash_per_hour) and self.crash_per_hour >= 0):
            raise ConfigError(f"{what}: crash takes a rate per instance-hour >= 0, got "
                              f"{self.crash_per_hour!r}")
        if not (0.0 <= self.ice_prob <= 1.0):  # NaN fails too
            raise ConfigError(f"{what}: ice takes a probability in [0, 1], got {self.ice_prob!r}")
        if not (0 <= self.ice_window_s <= MAX_SECONDS):  # NaN fails too
            raise ConfigError(f"{what}: ice-window takes a number of seconds >= 0 and <= "
                              f"{MAX_SECONDS:.0f}, got {self.ice_window_s!r}")


def parse_faults(text: str | None, what: str = "--faults") -> Faults | None:
    """``crash:RATE,ice:PROB[,ice-window:SECONDS]`` (any subset, any order) to Faults;
    None or empty: no faults. Every mistake is one ConfigError naming ``what`` and the part."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        raise ConfigError(f"{what} is empty; give crash:RATE, ice:PROB and/or ice-window:SECONDS")
    seen: dict[str, float] = {}
    for part in text.split(","):
        part = part.strip()
        key, sep, val = part.partition(":")
        key = key.strip().lower()
        if not sep:
            raise ConfigError(f"{what}: {part!r} is not KEY:VALUE (keys: {', '.join(KEYS)})")
        if key not in KEYS:
            raise ConfigError(f"{what}: unknown fault {key!r} in {part!r} (keys: {', '.join(KEYS)})")
        if key in seen:
            raise ConfigError(f"{what}: {key!r} given twice")
        try:
            v = float(val)
        except ValueError:
            raise ConfigError(f"{what}: {key} takes a number, got {val.strip()!r}") from None
        if key == "crash" and not (math.isfinite(v) and v >= 0):
            raise ConfigError(f"{what}: crash takes a rate per instance-hour >= 0 (finite), "
                              f"got {val.strip()!r}")
        if key == "ice" and not 0.0 <= v <= 1.0:
            raise ConfigError(f"{what}: ice takes a probability in [0, 1], got {val.strip()!r}")
        if key == "ice-window" and not 0 < v <= MAX_SECONDS:
            raise ConfigError(f"{what}: ice-window takes a number of seconds > 0 and <= "
                              f"{MAX_SECONDS:.0f}, got {val.strip()!r}")
        seen[key] = v
    if "ice-window" in seen and "ice" not in seen:
        raise ConfigError(f"{what}: ice-window needs ice:PROB (the chance a request fails)")
    return Faults(seen.get("crash", 0.0), seen.get("ice", 0.0), seen.get("ice-window", 0.0))


__all__ = ["Faults", "parse_faults"]
