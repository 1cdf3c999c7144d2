"""Unit tests: pure logic and in-memory twins; no database, no subprocess (see conftest.py)."""
