"""``python -m tests.training.teardown transduce-args...`` (under torchrun): run the transduce
command line and print how many DistributedDataParallel objects are alive when the process
group is destroyed. Automatic garbage collection is off, so that what frees them is the
code, not the collector's timing."""

import gc
import sys

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from transduce.cli.main import main

if __name__ == "__main__":
    gc.disable()
    alive = []
    destroy = dist.destroy_process_group

    def counted(*args, **kwargs):
        alive.append(sum(isinstance(o, DistributedDataParallel) for o in gc.get_objects()))
        return destroy(*args, **kwargs)

    dist.destroy_process_group = counted
    code = main(sys.argv[1:])
    print(f"DistributedDataParallel alive at teardown: {alive}", flush=True)
    sys.exit(code)
