"""Shared cloud clusters (paper 004): provisioning policies over the reserved-pool engine,
socialist and capitalist chargeback, user defection and flying solo."""
