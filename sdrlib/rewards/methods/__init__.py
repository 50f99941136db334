"""Reward methods, one module each; every module registers its :class:`sdrlib.rewards.spec.RewardMethod`.

The registry imports the modules here on its first read, in the order of
:data:`sdrlib.rewards.spec.BUILTIN_METHODS`, so a new method is one new module (its name grammar, settings, reward,
TRL functions, label, run-key settings and, when it needs one, its trainer) and its line there, with nothing else to
edit: the profile section ``grpo.<name>``, the
reward-name validation, training and the notebooks' labels all come from the registry.

- :mod:`~sdrlib.rewards.methods.sft`       ``"sft"``: no GRPO (the SFT policy evaluated as is)
- :mod:`~sdrlib.rewards.methods.fmt`       ``"fmt"``: R_fmt alone
- :mod:`~sdrlib.rewards.methods.control`   ``"const"`` / ``"noise"`` (ours): controls without signal (drift control)
- :mod:`~sdrlib.rewards.methods.exact`     ``"exact"``: R_fmt + R_exact
- :mod:`~sdrlib.rewards.methods.distance`  any :mod:`sdrlib.distances` setting: R_fmt + R_sem
- :mod:`~sdrlib.rewards.methods.gcarl`     ``"gcarl"``: G-CARL's R_fact + R_check
- :mod:`~sdrlib.rewards.methods.recall`    ``"chamfer_recall_<alpha>"`` (ours): recall-weighted negation-aware Chamfer
- :mod:`~sdrlib.rewards.methods.editgrpo`  ``"editgrpo*"``: EditGRPO's composite clinical reward and its edits

Example: the built-in methods (a plugin's are listed too) and the method each name belongs to:

>>> from sdrlib.rewards import method_of, registered_methods
>>> sorted(m.name for m in registered_methods() if type(m).__module__.startswith("sdrlib.rewards.methods."))
['chamfer_recall', 'const', 'distance', 'editgrpo', 'exact', 'fmt', 'gcarl', 'noise', 'sft']
>>> [method_of(n) for n in ("chamfer", "sinkhorn_0.1", "chamfer_recall_0.75", "editgrpo_tau0.3")]
['distance', 'distance', 'chamfer_recall', 'editgrpo']
"""
