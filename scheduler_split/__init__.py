"""scheduler-split: a compute control plane with a split scheduler.

The concurrency mode is chosen here, before anything else of the project
or of oslo.* is imported: eventlet when SCHEDULER_SPLIT_EVENTLET=1 (the
standard library is monkey patched first), native threads otherwise.
"""

from scheduler_split import monkey_patch as _monkey_patch

_monkey_patch.patch()
