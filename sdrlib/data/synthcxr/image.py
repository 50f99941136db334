"""SynthCXR step 3, image: :func:`render_image` draws a radiograph-like picture carrying the findings.

Heart width for cardiomegaly, fluid blunting the costophrenic angle for effusion, a dense blob for
consolidation, ... under patient-level nuisance (rotation, scale, shift, habitus, inspiration,
exposure and noise). A cartoon of the thorax, learnable by a tiny vision model.
"""

from __future__ import annotations

import math
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
    """
    from PIL import Image

    if not isinstance(size, (int, np.integer)) or size < 16:
        raise ValueError(f"image size must be an int >= 16, got {size!r}")
    R = _OVERSAMPLE * int(size)
    # -- patient-level nuisance ---------------------------------------------------------
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

    lin = (np.arange(R, dtype=np.float32) + 0.5) / R * 2.0 - 1.0
    u, v = np.meshgrid(lin, lin)
    c, s = math.cos(rot), math.sin(rot)
    x = (c * (u - dx) + s * (v - dy)) / scale
    y = (-s * (u - dx) + c * (v - dy)) / scale

    img = np.full((R, R), 0.04, dtype=np.float32)
    body = _sig(1.0 - ((x / (0.95 * bw)) ** 2 + ((y - 0.15) / 1.05) ** 2), 0.03)
    neck = _sig(0.2 - np.abs(x), 0.02) * _sig(-0.6 - y, 0.02)
    img = _paint(img, np.maximum(body, neck), 0.42)

    # lungs: ellipses cut by diaphragm domes
    lungs = {}
    for side, sgn in (("right", -1.0), ("left", 1.0)):
        cx, cy, rx, ry = sgn * 0.36 * bw, -0.08, 0.27 * bw, 0.62
        top = (0.36 if side == "right" else 0.41) + insp
        e = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2
        dome = top + 0.35 * ((x - cx) / rx) ** 2
        m_ell = _sig(1.0 - e, 0.05)
        m = m_ell * _sig(dome - y, 0.012)
        lungs[side] = dict(cx=cx, cy=cy, rx=rx, ry=ry, top=top, e=e, m=m, m_ell=m_ell, sgn=sgn)
    lung = np.clip(lungs["right"]["m"] + lungs["left"]["m"], 0, 1)
    img = _paint(img, lung, lung_dark)
    # lung markings and hila
    img += lung * (0.045 * tex_fine + 0.02)
    for side, L in lungs.items():
        img += lung * 0.12 * np.exp(-(((x - L["sgn"] * 0.17) / 0.09) ** 2 + ((y + 0.02) / 0.12) ** 2))

    by = {f.kind: f for f in findings}
    # mediastinum, trachea, spine
    mw = 0.21 if "mediastinum" in by else 0.115
    med = _sig(mw - np.abs(x - 0.01), 0.012) * _sig(0.25 - y, 0.02) * _sig(y + 0.98, 0.02)
    img = _paint(img, med, 0.62)
    trachea = _sig(0.032 - np.abs(x), 0.006) * _sig(-0.3 - y, 0.02)
    img = _paint(img, trachea * med, 0.3)
    img += 0.07 * _sig(0.055 - np.abs(x), 0.01) * body

    # heart: cardiothoracic ratio carries cardiomegaly
    thorax_w = 2 * (0.36 + 0.27) * bw
    # cardiothoracic ratio: normal 0.38-0.50; mild cardiomegaly overlaps the upper normal range
    ctr = float(rng.uniform(0.38, 0.50))
    if "cardiomegaly" in by:
        lo, hi = {"mild": (0.50, 0.56), "moderate": (0.56, 0.62), "severe": (0.62, 0.68)}[
            by["cardiomegaly"].severity or "mild"]
        ctr = float(rng.uniform(lo, hi))
    hw = ctr * thorax_w / 2
    hcx, hcy, hry = 0.35 * hw - 0.04, 0.24 + insp, 0.25 + 0.3 * (ctr - 0.44)
    heart = _sig(1.0 - ((x - hcx) / hw) ** 2 - ((y - hcy) / hry) ** 2, 0.05)
    img = _paint(img, heart, 0.66)

    # ribs and clavicles (fracture: a gap and a step in one rib). All 8 ribs of a side in one
    # pass: the vertical distance to the nearest rib centre line y_k = -0.66 + 0.135 k + 0.28 (|x| - 0.1)^2.
    frac = by.get("fracture")
    ax = np.abs(x)
    t = (y + 0.66 - 0.28 * (ax - 0.1) ** 2) / 0.135
    k_near = np.rint(t)
    rw = max(0.014, 0.8 * 2.0 / R)  # rib half-width, at least 0.8 px
    ribs = np.exp(-(((t - k_near) * 0.135) / rw) ** 2) * ((k_near >= 0) & (k_near <= 7))
    ribs = ribs * _sig(ax - 0.08, 0.02) * _sig(0.72 * bw - ax, 0.02)
    if frac is not None:
        k = 2 + _RIBS.index(frac.location or "6th") % 5
        for side in _sides(frac):
            sgn = lungs[side]["sgn"]
            on_side = (sgn * x > 0) * _sig(ax - 0.08, 0.02) * _sig(0.72 * bw - ax, 0.02)
            y_rib = -0.66 + 0.135 * k + 0.28 * (ax - 0.1) ** 2
            rib = np.exp(-((y - y_rib) / rw) ** 2) * on_side
            xf = sgn * 0.5 * bw
            gap = 1.0 - np.exp(-((x - xf) / (1.3 * rw)) ** 2)
            lateral = _sig(sgn * (x - xf), 0.005)
            stepped = np.exp(-((y - y_rib - 2 * rw) / rw) ** 2) * on_side
            new = (rib * (1 - lateral) + stepped * lateral) * gap
            if frac.detail == "healed":
                new = new + 0.8 * np.exp(-(((x - xf) / 0.03) ** 2 + ((y - y_rib - 0.014) / 0.03) ** 2))
            ribs = ribs - rib + new
    img += 0.085 * ribs * body
    for sgn in (-1.0, 1.0):
        clav = _polyline(x, y, [(sgn * 0.08, -0.70), (sgn * 0.62 * bw, -0.82)], 0.022)
        img += 0.22 * clav * body

    # -- findings ---------------------------------------------------------------------
    if "edema" in by:
        amp = {"mild": 0.09, "moderate": 0.16, "severe": 0.24}[by["edema"].severity or "mild"]
        for side, L in lungs.items():
            haze = np.exp(-(((x - L["sgn"] * 0.2) / 0.22) ** 2 + ((y - 0.02) / 0.3) ** 2))
            img += amp * haze * L["m"] * (0.8 + 0.3 * tex_coarse)
            if by["edema"].severity != "mild":  # Kerley B lines at the lateral bases
                for j in range(4):
                    yk = L["top"] - 0.1 - 0.05 * j
                    xk = L["cx"] + L["sgn"] * (L["rx"] * 0.92)
                    kl = _polyline(x, y, [(xk - L["sgn"] * 0.07, yk), (xk, yk)], 0.007)
                    img += 0.12 * kl * L["m"]
    for f in findings:
        if f.kind in ("consolidation", "opacity"):
            lx, ly, side = _LOBES[f.location or "right lower lobe"]
            L = lungs[side]
            if f.kind == "consolidation":
                blob = np.exp(-(((x - lx) / 0.12) ** 2 + ((y - ly) / 0.10) ** 2))
                img += 0.34 * blob * L["m"] * (0.85 + 0.25 * tex_fine) * (1.0 - 0.6 * heart)
            else:
                blob = np.exp(-(((x - lx) / 0.15) ** 2 + ((y - ly) / 0.13) ** 2))
                img += 0.18 * blob * L["m"] * np.clip(0.6 + 0.9 * tex_coarse + 0.4 * tex_fine, 0, 1.5)
        elif f.kind == "atelectasis":
            for side in _sides(f):
                L = lungs[side]
                y0 = L["top"] - 0.10
                x0 = L["cx"] + L["sgn"] * 0.03
                t = 0.12 * L["sgn"]
                band = np.exp(-(((x - x0) / 0.15) ** 2 + ((y - y0 - t * (x - x0)) / 0.022) ** 2))
                img += 0.30 * band * L["m_ell"] * (1.0 - heart)
        elif f.kind == "nodule":
            lx, ly, side = _LOBES[f.location or "right upper lobe"]
            r = 0.02 + 0.017 * float(f.size_cm or 1.0)
            disc = _sig(r - np.hypot(x - lx, y - ly), 0.006)
            img = _paint(img, disc * lungs[side]["m"], 0.52)
        elif f.kind == "pleural_other":
            for side in _sides(f):
                L = lungs[side]
                rr = np.sqrt(L["e"])
                band = _sig(rr - 0.86, 0.02) * L["m"]
                where = (_sig(L["cy"] - 0.35 - y, 0.04) if f.detail == "apical"
                         else _sig(L["sgn"] * (x - L["cx"]) - 0.1, 0.03))
                img += 0.2 * band * where
    if "effusion" in by:
        f = by["effusion"]
        h = {"small": 0.10, "moderate": 0.26, "large": 0.46}[f.severity or "small"]
        for side in _sides(f):
            L = lungs[side]
            lat = np.clip(L["sgn"] * (x - L["cx"]) / L["rx"], 0, 1)
            y_top = L["top"] + 0.06 - h - 0.12 * lat
            # fluid fills the lung from the base up, hiding the dome and the costophrenic angle
            fluid = _sig(y - y_top, 0.015) * _sig(1.05 - L["e"], 0.04) * _sig(L["top"] + 0.4 - y, 0.02)
            img = _paint(img, fluid * body * (1.0 - heart), 0.5)
    if "pneumothorax" in by:
        f = by["pneumothorax"]
        d = {"small": 0.14, "moderate": 0.24, "large": 0.36}[f.severity or "small"]
        L = lungs[f.side or "right"]
        rr = np.sqrt(L["e"])
        where = {"small": _sig(L["cy"] - 0.1 - y, 0.05), "moderate": _sig(L["cy"] + 0.25 - y, 0.05),
                 "large": np.ones_like(x)}[f.severity or "small"]
        zone = _sig(rr - (1 - d), 0.01) * L["m"] * where
        img = _paint(img, zone, 0.05)
        line = np.exp(-((rr - (1 - d)) / 0.009) ** 2) * L["m"] * where
        img += 0.3 * line

    # -- devices ------------------------------------------------------------------------
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

    # -- exposure, noise, downsample -----------------------------------------------------
    img = np.clip(img, 0.0, 1.0) ** gamma
    img = np.clip(img * contrast + bright, 0.0, 1.0)
    img = img + rng.normal(0.0, noise, size=img.shape).astype(np.float32)
    img8 = np.clip(img * 255.0 + 0.5, 0, 255).astype(np.uint8)
    small = Image.fromarray(img8, mode="L").resize((size, size), Image.BOX)
    return np.asarray(small, dtype=np.uint8)
