"""Stand-ins for what the conductor's tasks reach over the bus: the
scheduler library and the computes of a cell.

Each records what it was asked, in order, so that a test reads which
hosts were tried, and what was claimed, handed over or released.
"""

import oslo_messaging as messaging

from scheduler_split import exception


class Scheduler:
    """The scheduler library, with scripted answers.

    ``answers``: what each ``select_destinations`` answers in turn, a
    list of host lists, or raises (an exception), or a function called
    first (what happens meanwhile) that returns one of those. ``full``:
    hosts whose claim the scheduler refuses; ``unreachable``: hosts
    whose claim the scheduler never answers (a timeout, as the claim may
    have been written: it is); ``refused_late``: hosts whose claim it
    refuses after writing it (a claim run again after a lost commit,
    refused the second time). ``held`` says which host
    each consumer (an instance, a migration) holds, as the scheduler's
    claims would have it; ``calls`` what it was asked.
    """

    def __init__(self, *answers, full=()):
        self.answers = list(answers)
        self.full = set(full)
        self.unreachable = set()
        self.refused_late = set()
        self.held = {}
        self.calls = []
        # What list_consumers raises (a scheduler too old to answer).
        self.listing_error = None
        self.specs = []

    def select_destinations(self, ctx, request_spec, instance_uuids,
                            return_alternates=True, num_alternates=0):
        self.calls.append(('select', list(instance_uuids)))
        self.specs.append(request_spec)
        answer = self.answers.pop(0)
        if callable(answer):
            answer = answer()
        if isinstance(answer, Exception):
            raise answer
        for uuid, host_list in zip(instance_uuids, answer):
            self.held[uuid] = host_list[0].service_host
        if not return_alternates:
            answer = [host_list[:1] for host_list in answer]
        return answer

    def claim_resources(self, ctx, selection, instance_uuid):
        self.calls.append(('claim', selection.service_host))
        return self._claim(selection.service_host, instance_uuid)

    def _claim(self, host, consumer):
        if host in self.full:
            return False
        self.held[consumer] = host
        if host in self.unreachable:
            raise messaging.MessagingTimeout('claim_resources')
        return host not in self.refused_late

    def check_rebuild(self, ctx, request_spec, host, node=None,
                      claim=False):
        # A claim of the server's own host, as a rebuild in ERROR (or a
        # build going back to it) makes it.
        self.calls.append(('claim_own', host))
        if claim and not self._claim(host, request_spec.instance_uuid):
            raise exception.NoValidHost(reason='%s is full' % host)
        return True

    def release_resources(self, ctx, consumer):
        self.calls.append(('release', consumer))
        self.held.pop(consumer, None)
        return True

    try_release_resources = release_resources

    def list_consumers(self, ctx, older_than, marker=None, limit=500):
        self.calls.append(('list', marker))
        if self.listing_error is not None:
            raise self.listing_error
        return sorted(c for c in self.held if marker is None or c > marker)[
            :limit]

    def move_claim_to_migration(self, ctx, instance_uuid, migration_uuid):
        self.calls.append(('hold_by_migration', instance_uuid))
        self._move(instance_uuid, migration_uuid)

    def revert_claim_from_migration(self, ctx, migration_uuid,
                                    instance_uuid):
        self.calls.append(('give_back_to_instance', instance_uuid))
        self._move(migration_uuid, instance_uuid)

    def _move(self, source, target):
        # As the scheduler's claims do: what the source held replaces
        # what the target held; a source holding nothing changes nothing.
        if source in self.held:
            self.held[target] = self.held.pop(source)

    def tried(self):
        """The hosts claimed or asked to claim, in order."""
        return [host for call, host in self.calls
                if call in ('claim', 'claim_own')]


class Computes:
    """The computes of every cell, as the tasks' compute clients see
    them. ``sent`` is every cast and call, ``(method, host)`` in order,
    and ``args`` what went with each; ``refusing`` are hosts whose
    ``pre_live_migration`` answers that they cannot; ``unreachable`` are
    methods whose send fails as a bus that lost the message makes it."""

    def __init__(self, refusing=(), unreachable=()):
        self.refusing = set(refusing)
        self.unreachable = set(unreachable)
        self.sent = []
        self.args = []
        self.cells = []

    def for_cell(self, cell):
        self.cells.append(cell.name)
        return self

    def uploads_images(self):
        """Computes of this release upload their servers' images."""
        return True

    def _send(self, method, host, **args):
        self.sent.append((method, host))
        self.args.append(args)
        if method in self.unreachable:
            raise messaging.MessageDeliveryFailure('the bus lost it')

    def build_and_run_instance(self, ctx, host, node, instance, request_spec,
                               host_list, retry):
        self._send('build_and_run_instance', host, node=node,
                   alternates=[s.service_host for s in host_list],
                   attempts=retry.num_attempts, tried=list(retry.hosts))

    def prep_resize(self, ctx, host, instance, migration, flavor,
                    request_spec, host_list, retry):
        self._send('prep_resize', host, flavor=flavor.flavorid,
                   alternates=[s.service_host for s in host_list],
                   attempts=retry.num_attempts, tried=list(retry.hosts))

    def pre_live_migration(self, ctx, host, instance, migration,
                           timeout=None):
        self._send('pre_live_migration', host)
        if host in self.refusing:
            raise exception.SchedulerSplitException(
                '%s has no room for it' % host)
        return True

    def live_migration(self, ctx, host, instance, migration):
        self._send('live_migration', host, dest=migration.dest_compute)

    def rebuild_instance(self, ctx, host, instance, migration):
        self._send('rebuild_instance', host)

    def rebuild_in_place(self, ctx, host, instance, orig_image_ref,
                         preserve_ephemeral=False):
        self._send('rebuild_in_place', host, image=instance.image_ref,
                   orig_image_ref=orig_image_ref,
                   preserve_ephemeral=preserve_ephemeral)

    def terminate_instance(self, ctx, host, instance):
        self._send('terminate_instance', host, uuid=instance.uuid)

    def shelve_offload_instance(self, ctx, host, instance):
        self._send('shelve_offload_instance', host, uuid=instance.uuid)

    def unshelve_instance(self, ctx, host, instance, request_spec=None,
                          host_list=None, retry=None, node=None):
        self._send('unshelve_instance', host, uuid=instance.uuid,
                   node=node, request_spec=request_spec,
                   alternates=[s.service_host for s in host_list or []],
                   tried=list(retry.hosts) if retry else None)
