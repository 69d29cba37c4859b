"""Test support: builders, strategies and data shared by test modules (no tests here)."""
