"""The GRPO study (``configs/study.yaml``, from the SFT start that reads the image; ``configs/study_blind_start.yaml``,
the study on record in docs/evidence/study/): do set-distance rewards beat SFT and R_exact, with the power to see it?

- :mod:`.runs`      the study's runs (SFT once, every reward at every seed, extra draws, a second SFT start),
  resumable, and its comparison table;
- :mod:`.families`  the table's families by role (primary: the paper's questions; secondary: other metrics;
  controls: R_fmt and the noise reward, :data:`~.families.CONTROLS`, vs SFT and each reward vs them), the answer
  and the Markdown tables;
- :mod:`.behaviour` what each configuration's Findings state: the reading table and per-label precision and recall;
- :mod:`.stability` the verdicts under other resampling seeds, and the differences between two SFT starts;
- :mod:`.evidence`  the evidence files (one gzip JSON per run and draw), their keys, reading, writing and checks;
- :mod:`.pilot`     the pilot (does the policy move, and how far, per step bucket) and the setup choices, read on
  validation studies;
- :mod:`.size`      how many seeds and test studies see an effect of the paper's size;
- :mod:`.cli`       the command line, ``python -m sdrlib.experiments.study pilot | choose | run | status | table``
  (:mod:`.__main__`).

Import the modules directly (``from sdrlib.experiments.study import runs``); nothing is imported here, so the
command line prints its help without loading the training stack.
"""
