# CoMeta service image. Same install as the README (pip install .); runs as an unprivileged user.
# Not built in CI: the development machines have a Docker client but no engine.
FROM python:3.11-slim AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# CPU wheel of torch by default; a GPU image passes --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

WORKDIR /srv/cometa
COPY pyproject.toml README.md ./
COPY app ./app
COPY llm ./llm
COPY retrieval ./retrieval
COPY segmentation ./segmentation
COPY prompts ./prompts
COPY eval ./eval
RUN pip install "torch==2.13.0" --index-url "${TORCH_INDEX}" \
 && pip install . \
 && useradd --system --uid 10001 --create-home --home-dir /home/cometa cometa

USER cometa
# Resolve the offline models and build the bundled corpus's dense index at build time, not on first request.
RUN HF_HUB_OFFLINE=1 cometa index build --offline

# Until /ask exists the image serves the NCBI-compatible local E-utilities server.
ENV COMETA_LOCAL_SERVER__HOST=0.0.0.0 COMETA_LOCAL_SERVER__PORT=8088
EXPOSE 8088
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8088/entrez/eutils/einfo.fcgi', timeout=4); sys.exit(0)"
CMD ["cometa", "eutils", "serve"]
