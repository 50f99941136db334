"""Experiment-level helpers that the notebooks share (above training, selection and pruning; below plots
and the runner), one module per question:

Do set distances read reports as a clinician would? (notebook 02)

- :mod:`.text_distances`   distances between report texts (split, embedded, labelled, then measured);
- :mod:`.fidelity`         how well each distance setting tracks label disagreement;
- :mod:`.battery`          real-language report pairs ordered by what a radiologist would sign, scored by every reward;
- :mod:`.distances_tour`   notebook 02's report pair, link table, edit-test facts and conclusion sentences.

Does the SFT start read the image? (notebook 03)

- :mod:`.sft_start`        per-label Findings F1 beside an image-blind guesser and a supervised ceiling;
- :mod:`.sft_summary`      how varied the sampled reports are, and notebook 03's conclusion sentences.
- :mod:`.synthcxr_visibility` how visibly SynthCXR's images carry each finding (pixel ceilings, each finding's signal).

Does GRPO with a set-distance reward write better reports? (notebook 04 and the study)

- :mod:`.posttrain`        every GRPO run of a profile trained and scored, headline and reward tables;
- :mod:`.scoring`          every system's test generations scored, side by side in worker processes when it pays;
- :mod:`.workers`          the worker processes that run GRPO runs, generations and scoring side by side;
- :mod:`.audit`            what each reward pays for edited and degenerate reports;
- :mod:`.reward_choice`    the recall reward's setting, chosen on validation studies;
- :mod:`.decomposition`    what a drop in clinical accuracy is made of (length, truncation, stated findings);
- :mod:`.grpo_report`      notebook 04's ``results/headline.md``;
- :mod:`.study`            the GRPO study sized to see an effect of the paper's size (runs, evidence, pilot, size,
  command line).

Does choosing or pruning candidates help? (notebooks 05 and 06)

- :mod:`.candidates`       candidate reports of each policy on disk (JSONL cache), policy folders;
- :mod:`.pruning_checks`   pruning vs random, survivor vs standard best-of-K, collapsed candidates.

What does a run show, and does it match the paper? (notebook 07, README, docs/results.md)

- :mod:`.tables`           paired-bootstrap comparison tables, one way for every notebook;
- :mod:`.conclusions`      conclusions that hold across machines and seeds, and a check that survives another machine;
- :mod:`.claims`           the "Expected results" block of docs/results.md written from result tables, and its check;
- :mod:`.paper_values`     the paper's GRPO numbers and its metrics' names beside ours;
- :mod:`.paper_comparison` each reproduced claim of the paper beside this run's number and verdict;
- :mod:`.figures`          notebook 07's checks of the figures (palette share, what is there).

Command lines: ``python -m sdrlib.experiments.study`` (the GRPO study) and ``python -m
sdrlib.experiments.claims`` (the "Expected results" block of docs/results.md).

Import the modules directly (``from sdrlib.experiments import candidates``); nothing heavy is imported here.
"""
