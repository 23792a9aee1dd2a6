"""Hyperparameter search (`zoo tune`): a search space (space.py), Optuna studies (study.py)
whose trials are ordinary zoo runs (trials.py), and the equal-budget comparison they end
with (search.py, report.py). Optuna is imported only when a search runs."""
