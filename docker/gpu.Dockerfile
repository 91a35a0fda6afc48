# syntax=docker/dockerfile:1.7
# The GPU image: the inference daemon (`reelgen gpu-daemon`), one per GPU, with a CUDA build of torch. The CUDA
# runtime libraries come inside torch's wheels (the nvidia-* packages); the node's NVIDIA container toolkit mounts
# the driver. Build from the repository root:
#   docker build -f docker/gpu.Dockerfile -t ghcr.io/example/reelgen-gpu:0.1.0 .
ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/reelgen
# the CUDA build, pinned and installed before the package so "torch>=2.4" keeps it
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128
RUN /opt/reelgen/bin/pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
# NVML bindings: the daemon's GPU utilisation gauge reads them (gpu_service/daemon.py)
RUN /opt/reelgen/bin/pip install nvidia-ml-py
WORKDIR /src
COPY pyproject.toml README.md ./
COPY reelgen reelgen
COPY jobs jobs
COPY workers workers
COPY gpu_service gpu_service
COPY storage storage
COPY monitoring monitoring
RUN /opt/reelgen/bin/pip install .
# the text detector (gpu_service/models/text_detect.py): rapidocr's wheel carries the ONNX model; it is installed
# without its dependencies (its opencv pin would replace ours), and onnxruntime gives way to the CUDA build
ARG RAPIDOCR_VERSION=1.4.4
RUN /opt/reelgen/bin/pip install --no-deps "rapidocr-onnxruntime==${RAPIDOCR_VERSION}" \
 && /opt/reelgen/bin/pip uninstall -y onnxruntime \
 && /opt/reelgen/bin/pip install onnxruntime-gpu

FROM python:${PYTHON_VERSION}-slim-bookworm
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
