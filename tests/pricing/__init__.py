"""Tests of stratus.pricing (pricing/): catalogs, price books, spot histories."""
