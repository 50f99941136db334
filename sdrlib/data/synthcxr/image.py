"""SynthCXR step 3, image: :func:`render_image` draws a radiograph-like picture carrying the findings.

Heart width for cardiomegaly, fluid blunting the costophrenic angle for effusion, a dense blob for
consolidation, ... under patient-level nuisance (rotation, scale, shift, habitus, inspiration,
exposure and noise). A cartoon of the thorax, learnable by a tiny vision model.

Scale: anatomy is drawn on a ``[-1, 1]`` grid where the thorax is about 1.26 units wide, so one unit is about
22 cm and, at 96 px, one pixel about 4.6 mm. Each finding is drawn as visibly as a radiologist sees it on a
full-resolution radiograph, which at 96 px means a finding spans several pixels: small nodules are drawn larger
than their stated size (a floor), and a rib fracture shows with the signs that make it visible (a displaced break
with an extrapleural haematoma when acute, callus when healed). Sizes and densities are stated where each
finding is drawn (densities: added grey level on a 0-1 scale before exposure, where lung is 0.10-0.18 and soft
tissue 0.42).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from sdrlib.data.synthcxr.findings import _LOBES, _RIBS, Finding

__all__ = ["render_image"]

_OVERSAMPLE = 1  # drawn at this multiple of the output size, then box-downsampled (2: ~2.5x slower)


def _sig(x: np.ndarray, w: float) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(x / w))


def _texture(rng: np.random.Generator, n: int, res: int) -> np.ndarray:
    """Smooth noise in [-1, 1]-ish: an n x n Gaussian grid upsampled bicubically to res x res."""
    from PIL import Image

    g = rng.standard_normal((n, n)).astype(np.float32)
    up = np.asarray(Image.fromarray(g, mode="F").resize((res, res), Image.BICUBIC), dtype=np.float32)
    return up / (np.abs(up).max() + 1e-6)


def _polyline(x: np.ndarray, y: np.ndarray, pts: Sequence[tuple[float, float]], width: float) -> np.ndarray:
    """Soft mask of a polyline of ``width`` (anatomical units) over grid coordinates x, y.

    The width is floored at 0.8 pixel so that thin lines survive small images.
    """
    width = max(width, 0.8 * 2.0 / x.shape[0])
    d = np.full(x.shape, np.inf, dtype=np.float32)
    for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:]):
        vx, vy = x1 - x0, y1 - y0
        L2 = vx * vx + vy * vy
        t = np.clip(((x - x0) * vx + (y - y0) * vy) / L2, 0.0, 1.0)
        d = np.minimum(d, np.hypot(x - x0 - t * vx, y - y0 - t * vy))
    return np.exp(-(d / width) ** 2)


def _sides(f: Finding) -> list[str]:
    """Sides an image finding is drawn on."""
    return ["right", "left"] if f.side == "bilateral" else [f.side or "right"]


def _paint(img: np.ndarray, mask: np.ndarray, value: float) -> np.ndarray:
    return img * (1.0 - mask) + value * mask


@dataclass(frozen=True)
class _Nuisance:
    """Patient-level nuisance of one image, drawn by :func:`_draw_nuisance` (angles in radians, lengths in the
    anatomical units of the ``[-1, 1]`` grid; ``tex_fine`` / ``tex_coarse``: smooth noise, shape (R, R))."""

    rot: float
    scale: float
    dx: float
    dy: float
    bw: float  # body habitus (thorax width)
    insp: float  # inspiration: diaphragm height
    gamma: float
    contrast: float
    bright: float
    noise: float
    lung_dark: float
    tex_fine: np.ndarray
    tex_coarse: np.ndarray


def _draw_nuisance(rng: np.random.Generator, R: int) -> _Nuisance:
    """The nuisance draws, in the order the image has always drawn them (the first draws of ``rng`` here)."""
    rot = math.radians(float(np.clip(rng.normal(0, 3.0), -7, 7)))
    scale = float(rng.uniform(0.90, 1.07))
    dx, dy = (float(v) for v in rng.uniform(-0.04, 0.04, size=2))
    bw = float(rng.uniform(0.90, 1.08))  # body habitus (thorax width)
    insp = float(rng.uniform(-0.05, 0.05))  # inspiration: diaphragm height
    gamma = float(rng.uniform(0.8, 1.25))
    contrast = float(rng.uniform(0.85, 1.15))
    bright = float(rng.uniform(-0.05, 0.05))
    # pixel noise, scaled so that the final (downsampled) image has std 0.008-0.022
    noise = float(rng.uniform(0.008, 0.022)) * _OVERSAMPLE
    lung_dark = float(rng.uniform(0.10, 0.18))
    tex_fine = _texture(rng, 22, R)
    tex_coarse = _texture(rng, 7, R)
    return _Nuisance(rot, scale, dx, dy, bw, insp, gamma, contrast, bright, noise, lung_dark, tex_fine, tex_coarse)


def _grid(R: int, nz: _Nuisance) -> tuple[np.ndarray, np.ndarray]:
    """Anatomical coordinates ``(x, y)`` of the pixel centres, each shape (R, R): the ``[-1, 1]`` grid shifted,
    rotated and scaled by the patient's pose."""
    lin = (np.arange(R, dtype=np.float32) + 0.5) / R * 2.0 - 1.0
    u, v = np.meshgrid(lin, lin)
    c, s = math.cos(nz.rot), math.sin(nz.rot)
    x = (c * (u - nz.dx) + s * (v - nz.dy)) / nz.scale
    y = (-s * (u - nz.dx) + c * (v - nz.dy)) / nz.scale
    return x, y


def _lungs(x: np.ndarray, y: np.ndarray, bw: float, insp: float) -> dict[str, dict]:
    """Per side (``right``, ``left``): the lung's ellipse, its dome and masks (``m``: cut by the diaphragm dome,
    ``m_ell``: the whole ellipse), shape (R, R) each, and its centre, radii, dome top and sign."""
    lungs = {}
    for side, sgn in (("right", -1.0), ("left", 1.0)):
        cx, cy, rx, ry = sgn * 0.36 * bw, -0.08, 0.27 * bw, 0.62
        top = (0.36 if side == "right" else 0.41) + insp
        e = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2
        dome = top + 0.35 * ((x - cx) / rx) ** 2
        m_ell = _sig(1.0 - e, 0.05)
        m = m_ell * _sig(dome - y, 0.012)
        lungs[side] = dict(cx=cx, cy=cy, rx=rx, ry=ry, top=top, e=e, m=m, m_ell=m_ell, sgn=sgn)
    return lungs


def _draw_chest(x: np.ndarray, y: np.ndarray, nz: _Nuisance, lungs: dict[str, dict], widened: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(img, body)``: the body, lungs with markings and hila, mediastinum (``widened``), trachea and spine."""
    img = np.full(x.shape, 0.04, dtype=np.float32)
    body = _sig(1.0 - ((x / (0.95 * nz.bw)) ** 2 + ((y - 0.15) / 1.05) ** 2), 0.03)
    neck = _sig(0.2 - np.abs(x), 0.02) * _sig(-0.6 - y, 0.02)
    img = _paint(img, np.maximum(body, neck), 0.42)
    # lungs: ellipses cut by diaphragm domes
    lung = np.clip(lungs["right"]["m"] + lungs["left"]["m"], 0, 1)
    img = _paint(img, lung, nz.lung_dark)
    # lung markings and hila
    img += lung * (0.045 * nz.tex_fine + 0.02)
    for side, L in lungs.items():
        img += lung * 0.12 * np.exp(-(((x - L["sgn"] * 0.17) / 0.09) ** 2 + ((y + 0.02) / 0.12) ** 2))
    # mediastinum, trachea, spine
    mw = 0.21 if widened else 0.115
    med = _sig(mw - np.abs(x - 0.01), 0.012) * _sig(0.25 - y, 0.02) * _sig(y + 0.98, 0.02)
    img = _paint(img, med, 0.62)
    trachea = _sig(0.032 - np.abs(x), 0.006) * _sig(-0.3 - y, 0.02)
    img = _paint(img, trachea * med, 0.3)
    img += 0.07 * _sig(0.055 - np.abs(x), 0.01) * body
    return img, body


def _draw_heart(img: np.ndarray, x: np.ndarray, y: np.ndarray, nz: _Nuisance, cardiomegaly: Finding | None,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(img, heart)``: the heart drawn (one draw of ``rng``: the cardiothoracic ratio) and its mask (R, R)."""
    thorax_w = 2 * (0.36 + 0.27) * nz.bw
    # cardiothoracic ratio: normal 0.38-0.50; mild cardiomegaly overlaps the upper normal range
    ctr = float(rng.uniform(0.38, 0.50))
    if cardiomegaly is not None:
        lo, hi = {"mild": (0.50, 0.56), "moderate": (0.56, 0.62), "severe": (0.62, 0.68)}[
            cardiomegaly.severity or "mild"]
        ctr = float(rng.uniform(lo, hi))
    hw = ctr * thorax_w / 2
    hcx, hcy, hry = 0.35 * hw - 0.04, 0.24 + nz.insp, 0.25 + 0.3 * (ctr - 0.44)
    heart = _sig(1.0 - ((x - hcx) / hw) ** 2 - ((y - hcy) / hry) ** 2, 0.05)
    img = _paint(img, heart, 0.66)
    return img, heart


#: where a rib fracture is drawn: along its rib, at ``x = +-_FRACTURE_X * bw`` (the lateral arc)
_FRACTURE_X = 0.5
#: an acute fracture's displacement in rib half-widths (about 0.8 px each at 96 px): the lateral fragment's step
#: down and the lucent gap between the fragments
_ACUTE_STEP, _ACUTE_GAP = 2.5, 2.4


def _fractured_ribs(ribs: np.ndarray, x: np.ndarray, y: np.ndarray, frac: Finding, bw: float, rw: float,
                    lungs: dict[str, dict]) -> tuple[np.ndarray, np.ndarray]:
    """``(ribs, soft)``: ``ribs`` (rib units: 1 is a rib's density) with the fractured rib of ``frac`` redrawn on
    each of its sides, and the soft-tissue density the fracture adds (image units, shape of ``x``; zero if healed).

    Site: rib ``k = 2 + `` the location's index in ``_RIBS`` (the 4th to 9th rib are the 3rd to 8th of the 8 ribs
    drawn, top to bottom), where it crosses ``x = +-0.5 bw``, the lateral arc where most rib fractures are seen.
    Sizes at 96 px, where a rib is about 6 mm tall (FWHM; ``rw`` 0.017, 0.8 px) and a pixel about 4.6 mm:
    acute, a displaced break, the fragments ``_ACUTE_GAP`` rib half-widths apart (a lucent gap of about 2 px, 9 mm)
    and the lateral one stepped down by ``_ACUTE_STEP`` half-widths (a cortical step-off of about 2 px, more than a
    rib's height), with an extrapleural haematoma: a lenticular soft-tissue density (0.25) against the inner chest
    wall at the fracture's level, at most a quarter of the lung's half-width thick (about 1.5 cm, 3 px) and about
    3.5 cm long (FWHM), tapering into the wall. Healed: the old break bridged by callus, a fusiform bony density
    three times a rib's, about 2 cm along the rib and twice its height (FWHM about 4 x 3 px), over a residual step
    of one half-width.
    """
    ax = np.abs(x)
    k = 2 + _RIBS.index(frac.location or "6th")
    healed = frac.detail == "healed"
    step, gap = (1.0, 0.0) if healed else (_ACUTE_STEP, _ACUTE_GAP)
    soft = np.zeros_like(x)
    for side in _sides(frac):
        L = lungs[side]
        sgn = L["sgn"]
        on_side = (sgn * x > 0) * _sig(ax - 0.08, 0.02) * _sig(0.72 * bw - ax, 0.02)
        y_rib = -0.66 + 0.135 * k + 0.28 * (ax - 0.1) ** 2
        rib = np.exp(-((y - y_rib) / rw) ** 2) * on_side
        u = sgn * (x - sgn * _FRACTURE_X * bw)  # along the rib from the break, positive laterally
        medial = rib * _sig(-u - 0.5 * gap * rw, 0.004)
        lateral = np.exp(-((y - y_rib - step * rw) / rw) ** 2) * on_side * _sig(u - 0.5 * gap * rw, 0.004)
        new = medial + lateral
        if healed:
            new = new + 3.0 * np.exp(-((u / 0.055) ** 2 + ((y - y_rib - 0.5 * step * rw) / (2.2 * rw)) ** 2))
        else:
            y_h = -0.66 + 0.135 * k + 0.28 * (_FRACTURE_X * bw - 0.1) ** 2
            t = 0.25 * np.exp(-((y - y_h) / 0.09) ** 2)  # the haematoma's thickness, in lung radii
            lens = _sig(np.sqrt(L["e"]) - (1.0 - t), 0.012) * _sig(t - 0.02, 0.005)
            soft = soft + 0.25 * lens * _sig(sgn * (x - L["cx"]), 0.03) * L["m"]
        ribs = ribs - rib + new
    return ribs, soft


def _draw_ribs(img: np.ndarray, x: np.ndarray, y: np.ndarray, bw: float, body: np.ndarray, frac: Finding | None,
               lungs: dict[str, dict]) -> np.ndarray:
    """Ribs and clavicles (a fracture: a displaced break or a callus in one rib, :func:`_fractured_ribs`)."""
    # All 8 ribs of a side in one pass: the vertical distance to the nearest rib centre line
    # y_k = -0.66 + 0.135 k + 0.28 (|x| - 0.1)^2.
    ax = np.abs(x)
    t = (y + 0.66 - 0.28 * (ax - 0.1) ** 2) / 0.135
    k_near = np.rint(t)
    rw = max(0.014, 0.8 * 2.0 / x.shape[0])  # rib half-width, at least 0.8 px
    ribs = np.exp(-(((t - k_near) * 0.135) / rw) ** 2) * ((k_near >= 0) & (k_near <= 7))
    ribs = ribs * _sig(ax - 0.08, 0.02) * _sig(0.72 * bw - ax, 0.02)
    soft = 0.0
    if frac is not None:
        ribs, soft = _fractured_ribs(ribs, x, y, frac, bw, rw, lungs)
    img += (0.085 * ribs + soft) * body
    for sgn in (-1.0, 1.0):
        clav = _polyline(x, y, [(sgn * 0.08, -0.70), (sgn * 0.62 * bw, -0.82)], 0.022)
        img += 0.22 * clav * body
    return img


def _draw_edema(img: np.ndarray, x: np.ndarray, y: np.ndarray, edema: Finding, lungs: dict[str, dict],
                tex_coarse: np.ndarray) -> np.ndarray:
    """Perihilar haze, and Kerley B lines at the lateral bases unless mild."""
    amp = {"mild": 0.09, "moderate": 0.16, "severe": 0.24}[edema.severity or "mild"]
    for side, L in lungs.items():
        haze = np.exp(-(((x - L["sgn"] * 0.2) / 0.22) ** 2 + ((y - 0.02) / 0.3) ** 2))
        img += amp * haze * L["m"] * (0.8 + 0.3 * tex_coarse)
        if edema.severity != "mild":  # Kerley B lines at the lateral bases
            for j in range(4):
                yk = L["top"] - 0.1 - 0.05 * j
                xk = L["cx"] + L["sgn"] * (L["rx"] * 0.92)
                kl = _polyline(x, y, [(xk - L["sgn"] * 0.07, yk), (xk, yk)], 0.007)
                img += 0.12 * kl * L["m"]
    return img


def _draw_atelectasis(img: np.ndarray, x: np.ndarray, y: np.ndarray, f: Finding, lungs: dict[str, dict],
                      heart: np.ndarray, nz: _Nuisance, effusion: Finding | None) -> np.ndarray:
    """Atelectasis at each of its bases, drawn as the report words it.

    Stated by type (linear, plate-like, subsegmental, mild): a band about 5.5 cm long and 8 mm thick (FWHM; 12 x
    2 px at 96 px) 0.10 above the dome, tilted down laterally, density 0.30. Hedged ("basilar opacity, likely
    atelectasis", which the labeler reads as Lung Opacity and uncertain Atelectasis): what makes a reader hedge, a
    patchy ill-defined basilar opacity instead of a crisp band, about 6 x 2.4 cm (FWHM; 13 x 5 px), density 0.28
    x a mottle of 0.45-1.3 (mean 0.8). Compressive (beside a moderate or large effusion): the collapsed lung as a
    hazy density about 1.5 cm thick (FWHM, 3 px) along the fluid's meniscus, density 0.22 (the fluid, drawn
    later, covers what lies below the meniscus; without an effusion on that side, the band).
    """
    for side in _sides(f):
        L = lungs[side]
        x0 = L["cx"] + L["sgn"] * 0.03
        if f.detail == "compressive" and effusion is not None and side in _sides(effusion):
            y_men = _fluid_top(L, x, effusion)
            zone = np.exp(-((y - y_men + 0.04) / 0.04) ** 2) * _sig(L["sgn"] * (x - L["cx"]) + 0.8 * L["rx"], 0.03)
            img += 0.22 * zone * L["m_ell"] * (1.0 - heart) * (0.85 + 0.3 * nz.tex_fine)
        elif f.hedged:
            y0 = L["top"] - 0.09
            patch = np.exp(-(((x - x0) / 0.16) ** 2 + ((y - y0) / 0.065) ** 2))
            mottle = np.clip(0.8 + 0.35 * nz.tex_coarse + 0.25 * nz.tex_fine, 0.45, 1.3)
            img += 0.28 * patch * L["m_ell"] * (1.0 - heart) * mottle
        else:
            y0 = L["top"] - 0.10
            t = 0.12 * L["sgn"]
            band = np.exp(-(((x - x0) / 0.15) ** 2 + ((y - y0 - t * (x - x0)) / 0.022) ** 2))
            img += 0.30 * band * L["m_ell"] * (1.0 - heart)
    return img


def _draw_lung_finding(img: np.ndarray, x: np.ndarray, y: np.ndarray, f: Finding, lungs: dict[str, dict],
                       heart: np.ndarray, nz: _Nuisance, effusion: Finding | None = None) -> np.ndarray:
    """One consolidation, opacity, atelectasis (:func:`_draw_atelectasis`; ``effusion``: the study's, for a
    compressive one), nodule or pleural thickening (other kinds: ``img`` unchanged). Sizes are FWHM at 96 px.

    Consolidation: a dense blob (0.34) about 4.4 x 3.7 cm (10 x 8 px) at its lobe, fainter over the heart.
    Opacity: a larger (5.5 x 4.8 cm, 12 x 10 px), less dense, mottled area at its lobe, density 0.26 x a mottle of
    0.45-1.3 (mean 0.8): always visible, hazier than a consolidation. Nodule or mass: a disc with a sharp margin
    at its lobe's centre, radius ``0.04 + 0.015 size_cm`` units (a 6 mm nodule drawn about 2 cm across, 4.7 px,
    so that it spans more than a pixel or two; a 5 cm mass at its true size, 11 px across), adding density 0.32
    (0.16 over the heart) to what lies behind it. Pleural thickening: a band along the apex or the lateral wall.
    """
    if f.kind in ("consolidation", "opacity"):
        lx, ly, side = _LOBES[f.location or "right lower lobe"]
        L = lungs[side]
        if f.kind == "consolidation":
            blob = np.exp(-(((x - lx) / 0.12) ** 2 + ((y - ly) / 0.10) ** 2))
            img += 0.34 * blob * L["m"] * (0.85 + 0.25 * nz.tex_fine) * (1.0 - 0.6 * heart)
        else:
            blob = np.exp(-(((x - lx) / 0.15) ** 2 + ((y - ly) / 0.13) ** 2))
            img += 0.26 * blob * L["m"] * np.clip(0.8 + 0.35 * nz.tex_coarse + 0.25 * nz.tex_fine, 0.45, 1.3)
    elif f.kind == "atelectasis":
        img = _draw_atelectasis(img, x, y, f, lungs, heart, nz, effusion)
    elif f.kind == "nodule":
        lx, ly, side = _LOBES[f.location or "right upper lobe"]
        r = 0.04 + 0.015 * float(f.size_cm or 1.0)
        disc = _sig(r - np.hypot(x - lx, y - ly), 0.006)
        img += 0.32 * disc * lungs[side]["m"] * (1.0 - 0.5 * heart)
    elif f.kind == "pleural_other":
        for side in _sides(f):
            L = lungs[side]
            rr = np.sqrt(L["e"])
            band = _sig(rr - 0.86, 0.02) * L["m"]
            where = (_sig(L["cy"] - 0.35 - y, 0.04) if f.detail == "apical"
                     else _sig(L["sgn"] * (x - L["cx"]) - 0.1, 0.03))
            img += 0.2 * band * where
    return img


#: an effusion's height above the base by size, in anatomical units
_EFFUSION_H = {"small": 0.10, "moderate": 0.26, "large": 0.46}


def _fluid_top(L: dict, x: np.ndarray, f: Finding) -> np.ndarray:
    """The effusion ``f``'s meniscus on lung ``L``: its height y over x (higher laterally), shape of ``x``."""
    lat = np.clip(L["sgn"] * (x - L["cx"]) / L["rx"], 0, 1)
    return L["top"] + 0.06 - _EFFUSION_H[f.severity or "small"] - 0.12 * lat


def _draw_effusion(img: np.ndarray, x: np.ndarray, y: np.ndarray, f: Finding, lungs: dict[str, dict],
                   body: np.ndarray, heart: np.ndarray) -> np.ndarray:
    """Fluid filling each side's lung from the base up, hiding the dome and the costophrenic angle."""
    for side in _sides(f):
        L = lungs[side]
        y_top = _fluid_top(L, x, f)
        # fluid fills the lung from the base up, hiding the dome and the costophrenic angle
        fluid = _sig(y - y_top, 0.015) * _sig(1.05 - L["e"], 0.04) * _sig(L["top"] + 0.4 - y, 0.02)
        img = _paint(img, fluid * body * (1.0 - heart), 0.5)
    return img


def _draw_pneumothorax(img: np.ndarray, x: np.ndarray, y: np.ndarray, f: Finding, lungs: dict[str, dict]
                       ) -> np.ndarray:
    """A dark rim without lung markings and a bright pleural line, reaching lower the larger it is."""
    d = {"small": 0.14, "moderate": 0.24, "large": 0.36}[f.severity or "small"]
    L = lungs[f.side or "right"]
    rr = np.sqrt(L["e"])
    where = {"small": _sig(L["cy"] - 0.1 - y, 0.05), "moderate": _sig(L["cy"] + 0.25 - y, 0.05),
             "large": np.ones_like(x)}[f.severity or "small"]
    zone = _sig(rr - (1 - d), 0.01) * L["m"] * where
    img = _paint(img, zone, 0.05)
    line = np.exp(-((rr - (1 - d)) / 0.009) ** 2) * L["m"] * where
    img += 0.3 * line
    return img


def _draw_findings(img: np.ndarray, x: np.ndarray, y: np.ndarray, findings: Sequence[Finding],
                   by: dict[str, Finding], lungs: dict[str, dict], body: np.ndarray, heart: np.ndarray,
                   nz: _Nuisance) -> np.ndarray:
    """Every finding but cardiomegaly, mediastinum and fracture (drawn with the anatomy): edema, then the lung
    findings in the order given, then effusion, then pneumothorax."""
    if "edema" in by:
        img = _draw_edema(img, x, y, by["edema"], lungs, nz.tex_coarse)
    for f in findings:
        img = _draw_lung_finding(img, x, y, f, lungs, heart, nz, by.get("effusion"))
    if "effusion" in by:
        img = _draw_effusion(img, x, y, by["effusion"], lungs, body, heart)
    if "pneumothorax" in by:
        img = _draw_pneumothorax(img, x, y, by["pneumothorax"], lungs)
    return img


def _draw_devices(img: np.ndarray, x: np.ndarray, y: np.ndarray, devices: Sequence[str], by: dict[str, Finding],
                  lungs: dict[str, dict]) -> np.ndarray:
    """Bright lines for tubes and lines, a box for a pacemaker (a chest tube on the pneumothorax's side)."""
    dev_val = 0.95
    if "ett" in devices:
        img = _paint(img, _polyline(x, y, [(0.0, -1.1), (0.0, -0.40)], 0.011), dev_val)
    if "enteric" in devices:
        img = _paint(img, _polyline(x, y, [(0.03, -1.1), (0.02, -0.3), (0.05, 0.3), (0.25, 0.55), (0.36, 0.6)],
                                    0.009), dev_val)
    if "cvc" in devices:
        img = _paint(img, _polyline(x, y, [(-0.24, -0.98), (-0.13, -0.62), (-0.07, -0.36), (-0.05, -0.14)],
                                    0.009), dev_val)
    if "pacer" in devices:
        box = _sig(0.08 - np.abs(x - 0.52), 0.006) * _sig(0.05 - np.abs(y + 0.64), 0.006)
        img = _paint(img, box, 1.0)
        img = _paint(img, _polyline(x, y, [(0.46, -0.62), (0.2, -0.52), (0.0, -0.28), (-0.06, 0.08), (0.02, 0.36)],
                                    0.008), dev_val)
        img = _paint(img, _polyline(x, y, [(0.46, -0.6), (0.14, -0.44), (-0.08, -0.12)], 0.008), dev_val)
    if "chest_tube" in devices:
        side = by["pneumothorax"].side if "pneumothorax" in by else "right"
        sg = lungs[side or "right"]["sgn"]
        img = _paint(img, _polyline(x, y, [(sg * 0.85, 0.3), (sg * 0.58, 0.05), (sg * 0.38, -0.5)], 0.014), dev_val)
    return img


def _expose(img: np.ndarray, nz: _Nuisance, rng: np.random.Generator, size: int) -> np.ndarray:
    """Exposure (gamma, contrast, brightness), pixel noise (the last draws of ``rng``), 8 bits, box-downsampled
    to ``size`` x ``size``: the uint8 image."""
    from PIL import Image

    img = np.clip(img, 0.0, 1.0) ** nz.gamma
    img = np.clip(img * nz.contrast + nz.bright, 0.0, 1.0)
    img = img + rng.normal(0.0, nz.noise, size=img.shape).astype(np.float32)
    img8 = np.clip(img * 255.0 + 0.5, 0, 255).astype(np.uint8)
    small = Image.fromarray(img8, mode="L").resize((size, size), Image.BOX)
    return np.asarray(small, dtype=np.uint8)


def render_image(findings: Sequence[Finding], devices: Sequence[str], rng: np.random.Generator,
                 size: int = 96) -> np.ndarray:
    """Render one frontal radiograph-like image.

    Parameters
    ----------
    findings, devices : what the image must show (see module docstring).
    rng : numpy Generator; all nuisance and texture randomness comes from it.
    size : int, side in pixels (drawn at ``_OVERSAMPLE`` x and box-downsampled).

    Returns
    -------
    numpy.ndarray, shape (size, size), uint8. Image left is the patient's right.

    Drawn in this order (each step a helper; ``rng`` is drawn by the nuisance, the heart and the noise, in
    that order): pose and exposure nuisance, chest (body, lungs, mediastinum), heart, ribs and clavicles,
    findings, devices, exposure and noise.
    """
    if not isinstance(size, (int, np.integer)) or size < 16:
        raise ValueError(f"image size must be an int >= 16, got {size!r}")
    R = _OVERSAMPLE * int(size)
    nz = _draw_nuisance(rng, R)
    x, y = _grid(R, nz)
    lungs = _lungs(x, y, nz.bw, nz.insp)
    by = {f.kind: f for f in findings}
    img, body = _draw_chest(x, y, nz, lungs, "mediastinum" in by)
    img, heart = _draw_heart(img, x, y, nz, by.get("cardiomegaly"), rng)
    img = _draw_ribs(img, x, y, nz.bw, body, by.get("fracture"), lungs)
    img = _draw_findings(img, x, y, findings, by, lungs, body, heart, nz)
    img = _draw_devices(img, x, y, devices, by, lungs)
    return _expose(img, nz, rng, size)
