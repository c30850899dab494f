"""The indexes of the host-state cache (:mod:`host_manager`): the uuid
of every compute node in memory by its name, the compute node of every
child provider, and what the hosts have of the Placement model beyond
what every host has (the resource classes beyond VCPU, MEMORY_MB and
DISK_GB that some provider of the tree has room for, and the traits of
the tree), with the answers to the requests that asked for them since
the index last changed. The index shares the host manager's lock: every
method but :meth:`HostIndex.having` is called under it.
"""

_BASE = frozenset(('VCPU', 'MEMORY_MB', 'DISK_GB'))


def name_key(host, nodename):
    """The key of a compute node in the index of names: its host alone
    when the node is named as its host (most are), else both."""
    return host if nodename == host else (host, nodename)


def _model_keys(state):
    """The keys of ``HostIndex._by_key`` a host is under."""
    keys = {('trait', name) for name in state.tree_traits()}
    keys.update(('rc', rc) for rc in state.tree_classes() if rc not in _BASE)
    return frozenset(keys)


class HostIndex:
    """The indexes of the hosts in memory of one host manager."""

    def __init__(self, lock):
        self._lock = lock
        # {name_key(host, node): uuid} of every host in memory.
        self._names = {}
        # {child provider uuid: its compute node's uuid}.
        self._child_roots = {}
        # What the hosts have of the Placement model beyond what every
        # host has: {('rc', class) or ('trait', name): {host state,
        # ...}} of the classes beyond VCPU, MEMORY_MB and DISK_GB that
        # some provider of the tree has room for, and the traits of the
        # tree; and {uuid: those keys} of the hosts that have any. A
        # request asking for them starts from the hosts that have them
        # all, not from every host.
        self._by_key = {}
        self._keys = {}
        # {keys asked: hosts having them all} of the requests since the
        # index last changed: device requests ask the same keys again
        # and again, and the index changes only with what hosts have.
        self._having = {}

    def uuid_of(self, name):
        """The uuid of the compute node ``(host, node)`` in memory, if
        any."""
        return self._names.get(name_key(*name))

    def name(self, uuid, host, nodename):
        """The compute node ``(host, nodename)`` is the host ``uuid``."""
        self._names[name_key(host, nodename)] = uuid

    def root_of(self, uuid):
        """The uuid of the compute node whose tree holds the provider
        ``uuid`` (``uuid`` itself unless it is a known child)."""
        return self._child_roots.get(uuid, uuid)

    def set_children(self, state, children):
        """Give ``state`` the providers below it, and index what it
        has."""
        for child in state.children:
            self._child_roots.pop(child.uuid, None)
        state.children = tuple(children)
        for child in state.children:
            self._child_roots[child.uuid] = state.uuid
        self.reindex(state)

    def reindex(self, state):
        """File the host under what it has of the model."""
        keys = _model_keys(state)
        old = self._keys.get(state.uuid, frozenset())
        if keys == old:
            return
        self._unindex(state, old - keys)
        for key in keys - old:
            self._by_key.setdefault(key, set()).add(state)
        self._having.clear()
        if keys:
            self._keys[state.uuid] = keys
        else:
            self._keys.pop(state.uuid, None)

    def _unindex(self, state, keys):
        if keys:
            self._having.clear()
        for key in keys:
            hosts = self._by_key.get(key)
            if hosts is not None:
                hosts.discard(state)
                if not hosts:
                    del self._by_key[key]

    def forget(self, uuid, state):
        """Drop the host ``uuid`` (its ``state``) from every index."""
        for child in state.children:
            self._child_roots.pop(child.uuid, None)
        self._unindex(state, self._keys.pop(uuid, ()))
        key = name_key(state.host, state.nodename)
        if self._names.get(key) == uuid:
            del self._names[key]

    def having(self, classes, traits):
        """The hosts (a tuple) some provider of whose tree has room for
        each of ``classes`` (beyond VCPU, MEMORY_MB and DISK_GB) and
        whose tree has every trait of ``traits``; None when neither is
        asked (every host). Takes the lock itself."""
        keys = [('rc', rc) for rc in classes if rc not in _BASE]
        keys += [('trait', name) for name in traits]
        if not keys:
            return None
        keys = frozenset(keys)
        with self._lock:
            found = self._having.get(keys)
            if found is None:
                sets = [self._by_key.get(key, set()) for key in keys]
                sets.sort(key=len)
                found = tuple(sets[0].intersection(*sets[1:]))
                if len(self._having) >= 64:
                    self._having.clear()
                self._having[keys] = found
            return found
