# syntax=docker/dockerfile:1.7
# The GPU image: the inference daemon (`reelgen gpu-daemon`), one per GPU, with a CUDA build of torch. The CUDA
# runtime libraries come inside torch's wheels (the nvidia-* packages); the node's NVIDIA container toolkit mounts
# the driver. Build from the repository root:
#   docker build -f docker/gpu.Dockerfile -t ghcr.io/example/reelgen-gpu:0.1.0 .
# The base image, pinned to a patch release (the Python the tests ran on); a release build pins it by digest:
#   --build-arg PYTHON_IMAGE=python:3.11.7-slim-bookworm@sha256:...
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/reelgen
# the CUDA build, pinned and installed first with the CUDA libraries it pins exactly (nvidia-*); the package's
# "torch>=2.4" then keeps it
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128
RUN /opt/reelgen/bin/pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
WORKDIR /src
# exactly the locked versions, checked against their hashes (make lock writes the file)
COPY requirements.lock ./
RUN /opt/reelgen/bin/pip install --require-hashes --no-deps -r requirements.lock
# NVML bindings: the daemon's GPU utilisation gauge reads them (gpu_service/device.py)
ARG NVIDIA_ML_PY_VERSION=13.615.71
RUN /opt/reelgen/bin/pip install --no-deps "nvidia-ml-py==${NVIDIA_ML_PY_VERSION}"
COPY pyproject.toml README.md ./
COPY core core
COPY reelgen reelgen
COPY jobs jobs
COPY workers workers
COPY gpu_service gpu_service
COPY storage storage
COPY monitoring monitoring
COPY devtools devtools
RUN /opt/reelgen/bin/pip install --no-deps --no-build-isolation .
# The text detector on the GPU: onnxruntime's CUDA build in place of the lock's CPU build (both install the same
# `onnxruntime` module, so one must go), pinned; its dependencies are the CPU build's, already locked. `pip check`
# here reports that one swap (reelgen asks for onnxruntime) and nothing else.
ARG ONNXRUNTIME_GPU_VERSION=1.31.1
RUN /opt/reelgen/bin/pip uninstall -y onnxruntime \
 && /opt/reelgen/bin/pip install --no-deps "onnxruntime-gpu==${ONNXRUNTIME_GPU_VERSION}"

FROM ${PYTHON_IMAGE}
RUN groupadd --gid 10001 reelgen \
 && useradd --uid 10001 --gid 10001 --home-dir /home/reelgen --create-home --shell /usr/sbin/nologin reelgen
COPY --from=build /opt/reelgen /opt/reelgen
# what the NVIDIA container runtime reads to expose the GPU and the driver's compute libraries
ENV PATH=/opt/reelgen/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    OMP_WAIT_POLICY=PASSIVE
RUN install -d -o 10001 -g 10001 /var/run/reelgen-daemon
USER 10001:10001
WORKDIR /home/reelgen
# 9101: the daemon's /metrics
EXPOSE 9101
ENTRYPOINT ["reelgen"]
CMD ["gpu-daemon"]
