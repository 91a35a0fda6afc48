"""Helpers the tests share: media makers, fault-injection runs, chart rendering. None of them is a test."""
