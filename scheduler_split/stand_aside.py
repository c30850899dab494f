"""A service process whose database does not answer stands aside: it
stops taking the messages of the queues it shares with its peers, so
that they go to a process that can do them.

Every process of a conductor or of the scheduler consumes the one queue
of its topic, and RabbitMQ hands each message to one of them. A process
cut from its database (its link to the Galera nodes and their HAProxies
lost, its own bus still up) would take its share of the messages and
fail each: a boot ends in ERROR, a select answers no host, while its
peers on the other controllers had the database all along. So a
service watches the databases it works on (:meth:`Watch.check`, every
:data:`CHECK_INTERVAL` seconds, a ``SELECT 1`` that does not wait for
an outage, bounded by :data:`LOOK_TIMEOUT`): once :data:`DOWN_AFTER`
looks in a row failed over :data:`DOWN_FOR` seconds, each of its
listeners whose queue another listener consumes (the broker's count of
consumers, :func:`brokers.consumers`) stops consuming, and what the
process has in hand stops waiting for the database
(``outage.stand_aside``): a call answers DatabaseUnavailable at once,
and its caller tries again, which a peer takes; the work of a cast is
re-driven as any lost cast is. It takes messages again with the first
look that the database answers.

A process never leaves a queue without a consumer: one the broker
counts no other consumer on keeps it, and a process standing aside
whose queue has no consumer left takes it again. When every process
lost the database (Galera down), one of them keeps taking the messages
and answers its callers with the outage at once, rather than leaving
them to wait for ``rpc_response_timeout``. Two processes that look at
the same moment could leave together: each waits a random part of a
second and counts again before it leaves. The in-memory bus counts the
listeners of its process: the all-in-one runs one of each, which never
stands aside.
"""

import logging
import random
import threading
import time

from scheduler_split import brokers
from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split import rpc

LOG = logging.getLogger(__name__)

# Seconds between two looks at the databases.
CHECK_INTERVAL = 1
# Seconds a look may take: a database that answers a SELECT 1 later
# than that is as good as away for the work that waits on it.
LOOK_TIMEOUT = 2
# How many looks in a row must fail, and for how many seconds, before
# the process stands aside: a database away for a restart or a
# fail-over (HAProxy moves to the next Galera node within about 6 s) is
# waited out as before, by every process alike.
DOWN_AFTER = 2
DOWN_FOR = 10
# Seconds a count of a queue's consumers may take.
COUNT_TIMEOUT = 3
# Seconds between two counts of the consumers of a queue a listener
# left, to see whether any is left.
RECOUNT_INTERVAL = 5


class Watch:
    """The databases ``urls`` of ``service`` (a Service), and which of
    its listeners stand aside."""

    def __init__(self, service, urls, look=engines.look,
                 count=brokers.consumers, pause=random.random,
                 down_for=DOWN_FOR):
        """``look(url)`` raises unless a database answers;
        ``count(url, exchange, topic, timeout)`` counts the consumers of
        a queue (None if it cannot); ``pause()`` is the seconds to wait
        before counting again."""
        self.service = service
        self.urls = [url for url in urls if url]
        self._look = look
        self._count = count
        self._pause = pause
        self._failures = 0
        self._failing_since = None
        self.down_for = down_for
        self._why = None
        # url -> the thread of a look that outlived LOOK_TIMEOUT.
        self._hanging = {}
        # listener aside -> when its queue's consumers were last counted.
        self._counted = {}
        # The listeners standing aside.
        self.aside = set()
        self._lock = threading.Lock()

    def _answers(self):
        """None if every database answers within LOOK_TIMEOUT, else why
        not. A look still running then (a cut link) is left to end on
        its own, and counts as failed until it did."""
        for url in self.urls:
            hanging = self._hanging.get(url)
            if hanging is not None and hanging.is_alive():
                return 'its last look at it has not ended'
            found = []
            thread = threading.Thread(target=self._run, args=(url, found),
                                      daemon=True, name='database-look')
            thread.start()
            thread.join(LOOK_TIMEOUT)
            if thread.is_alive():
                self._hanging[url] = thread
                return 'it did not answer within %s seconds' % LOOK_TIMEOUT
            self._hanging.pop(url, None)
            if found:
                return found[0]
        return None

    def _run(self, url, found):
        try:
            self._look(url)
        except Exception as exc:
            found.append(outage.reason(exc) if outage.is_database_outage(exc)
                         else 'its database cannot be used: %s' % exc)

    def _consumers(self, listener):
        return self._count(rpc.url_of(listener.transport), rpc.EXCHANGE,
                           listener.topic, COUNT_TIMEOUT)

    def check(self):
        """Periodic: look at the databases; stand aside or take part
        again as the module's doc says."""
        with self._lock:
            why = self._answers()
            if why is None:
                self._failures = 0
                self._failing_since = None
                # Waiting for the database is right again, whatever its
                # bus does with the listeners taken back below.
                outage.stand_aside(self, False)
                for listener in list(self.aside):
                    self._take_part(listener, 'its database answers again')
                return
            now = time.monotonic()
            self._failures += 1
            if self._failing_since is None:
                self._failing_since = now
            if self._failures < DOWN_AFTER or \
                    now - self._failing_since < self.down_for:
                return
            self._why = why
            for listener in self.service.listeners():
                if listener in self.aside:
                    # Counted every RECOUNT_INTERVAL: each count is a new
                    # connection to every broker.
                    if now < self._counted.get(listener, 0) + \
                            RECOUNT_INTERVAL:
                        continue
                    self._counted[listener] = now
                    if self._consumers(listener) == 0:
                        self._take_part(
                            listener, 'no other process consumes its queue; '
                            'it answers with the outage meanwhile')
                elif self._others(listener):
                    self._stand_aside(listener)
            # What this process has in hand gives up waiting for the
            # database while its peers take the work.
            outage.stand_aside(self, bool(self.aside))

    def _others(self, listener):
        """Whether another process consumes the queue of ``listener``
        (counted twice, a random part of a second apart)."""
        counted = self._consumers(listener)
        if counted is None or counted < 2:
            return False
        time.sleep(self._pause())
        counted = self._consumers(listener)
        return counted is not None and counted >= 2

    def _stand_aside(self, listener):
        if not self.service.stand_aside(listener):
            return
        self.aside.add(listener)
        self._counted[listener] = time.monotonic()
        # INFO: the outage itself is the process's one WARNING of it.
        LOG.info('%s cannot reach its database (%s): it stops taking '
                 'messages of %s, which its peers take, until the database '
                 'answers', self.service.name, self._why, listener.topic)

    def _take_part(self, listener, why):
        try:
            taken = self.service.take_part(listener)
        except Exception as exc:
            # Its bus did not take the new listener: it stays aside, and
            # the next look tries again.
            LOG.warning('%s cannot take messages of %s again (%s); trying '
                        'again', self.service.name, listener.topic,
                        outage.describe(exc))
            return
        self.aside.discard(listener)
        if taken:
            LOG.info('%s takes messages of %s again: %s',
                     self.service.name, listener.topic, why)
