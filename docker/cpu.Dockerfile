# syntax=docker/dockerfile:1.7
# The CPU image: Celery worker, dispatcher, beat and Flower, each a `reelgen` subcommand (CMD picks one; the Helm
# chart passes it as args). Build from the repository root:
#   docker build -f docker/cpu.Dockerfile -t ghcr.io/example/reelgen:0.1.0 .
# The base image, pinned to a patch release (the Python the tests ran on); a release build pins it by digest:
#   --build-arg PYTHON_IMAGE=python:3.11.7-slim-bookworm@sha256:...
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/reelgen
# torch first, from PyTorch's CPU index and pinned, without dependencies: the lock pins those, and the
# package's "torch>=2.4" then leaves it alone instead of pulling a multi-GB CUDA build.
ARG TORCH_VERSION=2.13.0
RUN /opt/reelgen/bin/pip install --no-deps "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu
WORKDIR /src
# exactly the locked versions, checked against their hashes (make lock writes the file)
COPY requirements.lock ./
RUN /opt/reelgen/bin/pip install --require-hashes --no-deps -r requirements.lock
COPY pyproject.toml README.md ./
COPY core core
COPY reelgen reelgen
COPY jobs jobs
COPY workers workers
COPY gpu_service gpu_service
COPY storage storage
COPY monitoring monitoring
COPY devtools devtools
RUN /opt/reelgen/bin/pip install --no-deps --no-build-isolation . && /opt/reelgen/bin/pip check

FROM ${PYTHON_IMAGE}
# a fixed numeric uid/gid: the chart's runAsUser names the same one, and runAsNonRoot can verify it
RUN groupadd --gid 10001 reelgen \
 && useradd --uid 10001 --gid 10001 --home-dir /home/reelgen --create-home --shell /usr/sbin/nologin reelgen
COPY --from=build /opt/reelgen /opt/reelgen
ENV PATH=/opt/reelgen/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    REELGEN_STATE_DIR=/var/lib/reelgen
RUN install -d -o 10001 -g 10001 /var/lib/reelgen /var/cache/reelgen /var/run/reelgen /var/run/reelgen-metrics
USER 10001:10001
WORKDIR /home/reelgen
# 9100: /metrics of every reelgen process; 5555: Flower
EXPOSE 9100 5555
ENTRYPOINT ["reelgen"]
CMD ["worker"]
