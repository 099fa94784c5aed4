"""Evaluation of results folders: measures, breakdowns, planner regret, comparisons, reports."""
