# Every console script imports this package first: the eventlet switch has
# to act before anything imports threading, socket or time.
from scheduler_split import monkey_patch

monkey_patch.patch()
