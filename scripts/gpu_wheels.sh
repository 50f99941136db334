#!/usr/bin/env bash
# The wheels benchmarks/gpu_check.py needs on a GPU machine without a package registry, downloaded here into .whl/ (git-ignored).
#
#   scripts/gpu_wheels.sh            # -> .whl/, prints each wheel, the total size and what was left out
#   scripts/gpu_wheels.sh DIR        # another folder
#
# That machine runs Python 3.12 on manylinux x86_64 with torch, transformers, tokenizers, accelerate, peft,
# numpy, numba(-cuda), sentence-transformers, pandas, pyarrow, ... but no package registry and none of the
# packages below; the files that travel with one command may total 64 MiB, so only what the check imports
# and the machine lacks is fetched (--no-deps, exact versions), not torch, transformers or numpy. The
# parts' imports were listed with a dry run; Unsloth's own were read from its code: xformers,
# bitsandbytes, torchao, cut_cross_entropy, tyro, msgspec, hf_transfer and diffusers are optional at
# run time (16-bit LoRA, no 4-bit loading, no vLLM) and large, so they stay out; so are pydantic, structlog,
# json5 and nest-asyncio (imported only by unsloth_cli / Unsloth Studio, or inside try/except: unsloth_zoo's
# __init__ silences a pydantic warning if pydantic is there) and defusedxml (nltk's XML corpora, unused);
# the script prints every requirement it leaves out (unsloth 2026.10.9 + radgraph 0.1.18: 15 wheels, 34.6 MiB). POT is not needed: the GPU check never imports `ot` (the reference solvers
# load only with sdrlib.distances.set_distance), and its wheel alone is 31 MiB.
#
# What must already be on that machine (not shipped; gpu_check.py's install part names any requirement of the
# shipped wheels that nothing there satisfies): CPython 3.12, a CUDA build of torch (2.13.0 is the gpu pin),
# transformers 5.17.0 (the newest unsloth 2026.10.9 accepts, and the core pin), tokenizers, accelerate, peft,
# numpy, numba + numba-cuda, sentence-transformers, pandas, pyarrow, scipy, h5py, pyyaml and the rest of HAS below.
#
# Versions: read from pyproject.toml, so the wheels follow the pins: the gpu extra's trl (1.15.0, the newest
# unsloth 2026.10.9 accepts), datasets and unsloth; the core's evaluate, bert-score, pysbd and nltk; the dev
# extra's radgraph (sdist-only: built here, once, to its pure-Python wheel) for gpu_check.py's RadGraph part.
# Their own unpinned requirements that the machine lacks come at the versions of the cpu lock
# (scripts/setup.sh's .venv) or, for datasets 4.8.5's caps, the newest it accepts. vLLM is not shipped: no release
# installs beside the gpu pins (docs/install.md, Installing for a GPU), and its wheel alone is far over the limit.
set -euo pipefail
cd "$(dirname "$0")/.."

DEST="${1:-.whl}"
LIMIT_MIB=64
PY="${SDR_PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3

pin() {  # pin GROUP NAME: "name==version" as pyproject.toml pins it in GROUP (core, cpu, gpu, dev)
  "$PY" - "$1" "$2" <<'PYEOF'
import re, sys, tomllib
proj = tomllib.load(open("pyproject.toml", "rb"))["project"]
group, name = sys.argv[1], sys.argv[2]
reqs = proj["dependencies"] if group == "core" else proj["optional-dependencies"][group]
canon = lambda n: re.sub(r"[-_.]+", "-", n).lower()
hits = [r for r in reqs if canon(r.split("==")[0]) == canon(name)]
if not hits:
    sys.exit(f"gpu_wheels: pyproject.toml's {group} pins no {name}")
print(hits[0])
PYEOF
}

UNSLOTH="$(pin gpu unsloth)"
WHEELS=(
  "$UNSLOTH"                            # part (b): the paper profile's GPU path (FastVisionModel + LoRA)
  "unsloth_zoo==${UNSLOTH#*==}"         # Unsloth's patches and kernels (released with it, same version)
  "$(pin gpu trl)"                      # part (b): SFTTrainer / GRPOTrainer, the newest Unsloth accepts
  "$(pin gpu datasets)"                 # TRL's datasets (and evaluate's); < 5 for Unsloth
  "fsspec==2026.2.0"                    # datasets 4.8.5 requires fsspec <= 2026.2.0; the machine's may be newer
  "dill==0.4.1"                         # datasets' serialisation (< 0.4.2 for datasets 4.8.5)
  "multiprocess==0.70.19"               # datasets' workers (< 0.70.20 for datasets 4.8.5)
  "$(pin core evaluate)"                # part (c): sdrlib's metrics run as local evaluate modules
  "$(pin core bert-score)"              # part (c): BERTScore
  "$(pin core pysbd)"                   # sdrlib.reports.split_sentences (the GRPO reward's sentence split)
  "$(pin core nltk)"                    # radgraph's and sdrlib.metrics' tokenisation
  "appdirs==1.4.4"                      # radgraph (versions of the cpu lock)
  "jsonpickle==4.1.4"                   # radgraph
  "dotmap==1.3.30"                      # radgraph
)
SDIST_ONLY=("$(pin dev radgraph)")      # part (d): RadGraph F1's code; no wheel on PyPI, a pure-Python build

PLATFORMS=()
for n in $(seq 17 28); do PLATFORMS+=(--platform "manylinux_2_${n}_x86_64"); done
PLATFORMS+=(--platform manylinux2014_x86_64)

rm -rf "$DEST"
mkdir -p "$DEST"
# pip without this machine's configuration (its local indexes and wheel folder are for Python 3.11)
env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null \
  "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp --abi cp312 "${PLATFORMS[@]}" -d "$DEST" "${WHEELS[@]}"

env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null \
  "$PY" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$DEST" "${SDIST_ONLY[@]}"
for w in "$DEST"/*.whl; do  # what was built must install on CPython 3.12
  case "$w" in *-py3-none-any.whl|*-py2.py3-none-any.whl|*-py312-*|*-cp312-*|*-abi3-*) ;;
    *) echo "gpu_wheels: $w is not a wheel for CPython 3.12" >&2; exit 1 ;; esac
done

"$PY" - "$DEST" "$LIMIT_MIB" <<'EOF'
import re, sys, zipfile
from pathlib import Path

try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement

# the GPU machine: CPython 3.12 on Linux x86_64; no extras
TARGET = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux", "platform_system": "Linux",
          "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
          "platform_python_implementation": "CPython", "extra": ""}

dest, limit = Path(sys.argv[1]), float(sys.argv[2])
# what the GPU machine has (a CUDA image with the scientific stack; see HAS), and what this script ships
HAS = set("""absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx
huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jaxlib jaxtyping jinja2 joblib
kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown
markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch
mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-ml-py onnx onnxruntime
opencv-python-headless optax opt-einsum orbax-checkpoint packaging pandas pathspec patsy peft pillow pip
pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing
pyproject-hooks pytest python-dateutil pytorch-lightning pyyaml regex requests rich safetensors
scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools
shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard threadpoolctl tifffile
tiktoken timm tokenizers toolz torch torchaudio torchmetrics torchvision tqdm transformers triton typer
typing-extensions typing-inspect urllib3 uvloop werkzeug wheel wrapt xarray xxhash yarl zipp""".split())
canon = lambda n: re.sub(r"[-_.]+", "-", n).lower()
files = sorted(dest.glob("*.whl"))
shipped, left = {}, {}
for f in files:
    with zipfile.ZipFile(f) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8", "replace")
    name = re.search(r"^Name: (.+)$", text, re.M).group(1).strip()
    shipped[canon(name)] = f
    for line in re.findall(r"^Requires-Dist: (.+)$", text, re.M):
        req = Requirement(line.strip())
        if req.marker is not None and not req.marker.evaluate(TARGET):
            continue
        left.setdefault(canon(req.name), set()).add(name)
total = sum(f.stat().st_size for f in files)
for f in files:
    print(f"  {f.stat().st_size / 2**20:6.1f} MiB  {f.name}")
missing = {r: by for r, by in left.items() if r not in shipped and r not in HAS}
print(f"gpu_wheels: {len(files)} wheels, {total / 2**20:.1f} MiB in {dest}/ (limit {limit:.0f} MiB with the repository)")
if missing:
    print("gpu_wheels: required by these wheels, neither shipped nor on the GPU machine (optional at run time "
          "for the check; gpu_check.py reports any that is missing there):")
    for r in sorted(missing):
        print(f"    {r}  (by {', '.join(sorted(missing[r]))})")
if total / 2**20 > limit:
    sys.exit(f"gpu_wheels: {total / 2**20:.1f} MiB is over the {limit:.0f} MiB that may travel with one command")
EOF
