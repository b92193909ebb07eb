"""tutti under torchft (https://github.com/pytorch/torchft): a process group
its Manager reconfigures at every quorum, as torchft's own Gloo and NCCL ones.

    from tutti_torch.torchft import ProcessGroupTutti
    manager = torchft.Manager(pg=ProcessGroupTutti(), ...)

Each quorum gets a new tutti communicator over the store prefix torchft gives
it; an abort (a replica failed) revokes the old one, so a call waiting for
the dead replica ends at once (tuttiCommRevoke).
"""
from datetime import timedelta

from torch.distributed import ProcessGroup as BaseProcessGroup
from torchft.process_group import ProcessGroupWrapper

from . import _C, _group_of


class ProcessGroupTutti(ProcessGroupWrapper):
    def __init__(self, timeout: timedelta = timedelta(seconds=60)) -> None:
        super().__init__(timeout=timeout)

    def _create_pg(self, store, rank: int, world_size: int) -> BaseProcessGroup:
        return _group_of(_C.create_process_group(store, rank, world_size, self._timeout), store)

    def getBackendName(self) -> str:
        return "torchft-tutti"
