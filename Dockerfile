# CoMeta service image. Same install as the README (pip install .); runs as an unprivileged user.
FROM python:3.11-slim AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /srv/cometa
COPY pyproject.toml README.md ./
COPY app ./app
COPY retrieval ./retrieval
COPY segmentation ./segmentation
COPY prompts ./prompts
COPY eval ./eval
RUN pip install . && useradd --system --uid 10001 --home-dir /srv/cometa cometa

USER cometa
# Until /ask exists the image serves the NCBI-compatible local E-utilities server.
ENV COMETA_LOCAL_SERVER__HOST=0.0.0.0 COMETA_LOCAL_SERVER__PORT=8088
EXPOSE 8088
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8088/entrez/eutils/einfo.fcgi', timeout=4); sys.exit(0)"
CMD ["cometa", "eutils", "serve"]
