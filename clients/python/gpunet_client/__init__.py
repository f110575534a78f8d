"""gpunet's Python client: submit jobs with inputs, follow the team feed, wait, download outputs, read charges.

Standard library only. See README.md.
"""
from . import types
from .client import END_WITHOUT_JOB_ENDED_S, Downloaded, GpunetClient, GpunetError, IntegrityError, UploadedBlob, WaitTimeout

__all__ = ["GpunetClient", "GpunetError", "IntegrityError", "WaitTimeout", "UploadedBlob", "Downloaded", "END_WITHOUT_JOB_ENDED_S", "types"]
__version__ = "0.1.0"
