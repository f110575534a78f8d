"""gpunet's Python client: submit jobs with inputs, follow the team feed, wait, download outputs, read charges.

Standard library only. See README.md.
"""
from . import types
from .client import Downloaded, GpunetClient, GpunetError, IntegrityError, UploadedBlob, WaitTimeout

__all__ = ["GpunetClient", "GpunetError", "IntegrityError", "WaitTimeout", "UploadedBlob", "Downloaded", "types"]
__version__ = "0.1.0"
