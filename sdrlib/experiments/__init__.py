"""Experiment-level helpers that the notebooks share: candidates on disk, the post-training runs and their
evaluation, headline and significance tables, the distance-fidelity study.

Above training, selection and pruning; below plots and the runner. Import the modules directly
(``from sdrlib.experiments import candidates``); nothing heavy is imported here.
"""
