"""SynthCXR: a deterministic synthetic chest X-ray dataset (image, report, CheXpert labels).

Each study is drawn from a seeded generator in three steps:

1. **Findings** (``sample_findings``): a clinical scenario (normal, heart failure,
   pneumonia, atelectasis, effusion, cardiomegaly, nodule/mass, pneumothorax, rib
   fracture, nonspecific opacity, pleural thickening, widened mediastinum, ICU
   patient with lines and tubes) with laterality, severity and location, plus an
   occasional incidental finding. Prevalence is tuned so that about half of the
   studies are normal and the rest split into single- and multi-finding studies,
   like the strata of the paper's appendix F.
2. **Report** (``write_report``): a grammar of paraphrases. A per-report
   ``ReaderStyle`` (terse vs verbose, preferred synonyms, comparison with a prior
   study, normal-template family, where lines and tubes go) is drawn first; each
   finding is stated with severity/size, location and laterality phrases and, for
   readers who compare, "new since" / "unchanged" / "again noted" / "increased";
   anatomical slots (heart, mediastinum, lungs, pleura, bones, ...) add pertinent
   negatives and normal statements; incidental remarks and clinical context add
   real vocabulary. Findings of about 4-5 sentences in anatomical order, an
   Impression of 1-3 sentences. Some findings are hedged ("may
   represent", "cannot be excluded"), which makes their label uncertain (-1);
   some one-sided findings get a pertinent negative on the other side ("No left
   pleural effusion."), some unchanged ones a "no new X" (no label), at rates
   near real reports (``report.py``'s docstring; measured by ``language.py``).
   Every sentence template carries the CheXpert labels it expresses, so the study
   labels are exactly what a perfect CheXpert labeler would read from the report.
3. **Image** (``render_image``): a grayscale radiograph-like picture whose pixels
   carry the findings (heart width for cardiomegaly, fluid level blunting the
   costophrenic angle for effusion, a dense blob for consolidation, a larger hazier
   area for a lung opacity, a band for atelectasis (a patchy basilar opacity where
   the report hedges it as one, a density along the meniscus where an effusion
   compresses the lung), perihilar haze for edema, a sharp-margined round density
   for a nodule or mass, a dark rim without lung markings and a pleural line for
   pneumothorax, a displaced rib break with an extrapleural haematoma for an acute
   fracture and a callus for a healed one, bright lines for tubes and a box for a
   pacemaker), under patient-level nuisance: rotation, scale, shift, body habitus,
   inspiration, exposure (gamma, contrast) and noise. Each finding is drawn as
   visibly as a radiologist sees it, which at 96 px means over several pixels
   (``image.py``'s docstrings state each one's size and density; how well a pixel
   classifier reads each label: ``docs/evidence/synthcxr_visibility/``).

Same seed -> same bytes: every study has its own ``numpy`` generator seeded from
``(seed, split, index)``, so the first studies of a larger dataset equal those of
a smaller one, and PNG and Parquet writers get identical inputs.

Left out: lateral views, prior images (comparisons are words only), comparison sections, anatomy beyond a
cartoon of the thorax; the images are meant to be learnable by a tiny vision model,
not to look like real radiographs.

Example::

    study = generate_study(seed=0, split="train", index=0, image_size=96)
    study.findings, study.impression, study.labels, study.image.shape  # (96, 96) uint8

Layout: :mod:`~sdrlib.data.synthcxr.findings` (types, step 1), :mod:`~sdrlib.data.synthcxr.report`
(step 2), :mod:`~sdrlib.data.synthcxr.image` (step 3), :mod:`~sdrlib.data.synthcxr.dataset`
(studies, the folder on disk), :mod:`~sdrlib.data.synthcxr.language` (rates of real report language read from the
text); this package re-exports the public names of the first four.
"""

from __future__ import annotations

from sdrlib.data.synthcxr.dataset import (GENERATOR_VERSION, SPLITS, dataset_dir, ensure_dataset, generate_dataset,
                                          generate_report, generate_study, read_manifest)
from sdrlib.data.synthcxr.findings import DEVICES, KINDS, Finding, Study, sample_findings
from sdrlib.data.synthcxr.image import render_image
from sdrlib.data.synthcxr.report import ReaderStyle, write_report

__all__ = [
    "GENERATOR_VERSION",
    "SPLITS",
    "Finding",
    "Study",
    "sample_findings",
    "write_report",
    "ReaderStyle",
    "generate_report",
    "render_image",
    "generate_study",
    "generate_dataset",
    "dataset_dir",
    "ensure_dataset",
    "read_manifest",
    "KINDS",
    "DEVICES",
]
