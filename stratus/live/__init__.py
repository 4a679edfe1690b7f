"""The live driver: the simulator's schedulers against a real cloud API (EC2) and a
Kubernetes cluster (``stratus live``). Needs the extra ``live`` (boto3, kubernetes,
tenacity). The loop (stratus.live.loop) keeps the engine's own state (stratus.live.mirror)
from what it observes; the policy sees the engine's view and its decisions pass the
engine's checks. docs/guides/live.md is the runbook."""
