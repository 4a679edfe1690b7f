"""Tests of stratus.scalers (scalers/), with the schedulers they make (Stratus, Fleet,
Karpenter, HotSpot, SCloud)."""
