"""reelgen's inference service: one daemon per GPU holding the models, fed by CPU workers
through shared memory.

Importing this package (or its client) never imports torch; only the daemon and the model registry do.
"""

from core.daemon_settings import DaemonSettings
from gpu_service.client import InferenceClient
from gpu_service.priority import PriorityKey

__all__ = ["DaemonSettings", "InferenceClient", "PriorityKey"]
