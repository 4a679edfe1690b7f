"""The application layer: names resolved where the user speaks (registry, CLI, compare,
sensitivity, reports). The core (``stratus.*`` outside this package) never imports it."""
