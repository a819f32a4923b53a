"""Audit: replay, disputes, recall and the dice-fairness report."""
