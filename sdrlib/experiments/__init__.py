"""Experiment-level helpers that the notebooks share (above training, selection and pruning; below plots
and the runner):

- :mod:`.candidates`      candidate reports of each policy on disk (JSONL cache), policy folders;
- :mod:`.posttrain`       every GRPO run of a profile trained and scored, headline and reward tables;
- :mod:`.tables`          paired-bootstrap comparison tables, one way for every notebook;
- :mod:`.fidelity`        how well each distance setting tracks label disagreement (notebook 02);
- :mod:`.text_distances`  distances between report texts (split, embedded, labelled, then measured).

Command lines: ``python -m sdrlib.experiments.study_cli`` (the GRPO study) and ``python -m
sdrlib.experiments.claims`` (the "Expected results" block of docs/results.md).

Import the modules directly (``from sdrlib.experiments import candidates``); nothing heavy is imported here.
"""
