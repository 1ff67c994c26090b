# Vibe Studio images.
#   CPU (default target):  docker build --target cpu -t vibestudio:cpu .
#                          docker run --rm -it -v vibestudio:/data vibestudio:cpu vibestudio users add NAME --role admin
#                          docker run -p 7860:7860 -v vibestudio:/data vibestudio:cpu
#   GPU (CUDA + vLLM):     docker build --target gpu -t vibestudio:gpu .
#                          docker run --gpus all -p 7860:7860 -v vibestudio:/data vibestudio:gpu
# The data directory (SQLite database, snapshots, jobs, checkpoints) is the volume at /data.
# The server listens on 0.0.0.0, so it needs a user first (login is then required), or VIBESTUDIO_AUTH=off on a
# trusted network. See docs/deployment.md (PostgreSQL, secrets, backups).

ARG PYTHON_VERSION=3.11

# ---------------------------------------------------------------------------------------------------------------
# What both images install: pyproject, the README it names and every package, at /app (copied from here, so the
# list is written once).
FROM scratch AS source
WORKDIR /app
COPY pyproject.toml README.md ./
COPY common ./common
COPY textfeatures ./textfeatures
COPY db ./db
COPY accounts ./accounts
COPY arena ./arena
COPY standings ./standings
COPY annotation ./annotation
COPY training ./training
COPY studio ./studio
# vibestudio/ links each folder above: the one import root the wheel installs (docs/architecture.md).
COPY vibestudio ./vibestudio

# ---------------------------------------------------------------------------------------------------------------
FROM python:${PYTHON_VERSION}-slim-bookworm AS cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    GRADIO_ANALYTICS_ENABLED=False \
    VIBESTUDIO_HOME=/data \
    VIBESTUDIO_HOST=0.0.0.0 \
    VIBESTUDIO_PORT=7860
# build tools for llama-cpp-python (compiled from source), a portable AVX2 build
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=source /app ./
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" \
    && CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF" \
       pip install "llama-cpp-python[server]==0.3.36" \
    && pip install . \
    && apt-get purge -y build-essential cmake git && apt-get autoremove -y
RUN useradd --create-home --uid 1000 studio && mkdir -p /data && chown studio /data
USER studio
VOLUME ["/data"]
EXPOSE 7860
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/', timeout=4)"
CMD ["vibestudio", "serve"]

# ---------------------------------------------------------------------------------------------------------------
FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 AS gpu
ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    GRADIO_ANALYTICS_ENABLED=False \
    VIBESTUDIO_HOME=/data \
    VIBESTUDIO_HOST=0.0.0.0 \
    VIBESTUDIO_PORT=7860
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev build-essential cmake git \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /app
COPY --from=source /app ./
# vLLM brings its matching CUDA torch; llama.cpp stays a CPU build (the GPU path is vLLM / transformers).
RUN pip install ".[vllm]" \
    && CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF" pip install "llama-cpp-python[server]==0.3.36"
RUN useradd --create-home --uid 1000 studio && mkdir -p /data && chown studio /data
USER studio
VOLUME ["/data"]
EXPOSE 7860
CMD ["vibestudio", "serve"]
