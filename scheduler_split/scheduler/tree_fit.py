"""Where one instance's request lands in one provider tree.

A compute node is the root of a tree: its own inventory (VCPU,
MEMORY_MB, DISK_GB, PCPU...) and children below it (a physical GPU's
VGPUs, a PCI device of a custom class, a NIC's bandwidth). A request
(:class:`~scheduler_split.objects.resource_request.ResourceRequest`) is
placed on it as Placement places it:

* each amount of the unnumbered group comes from one provider of the
  tree, and different classes may come from different providers; its
  required traits must be among the traits of the providers it takes
  from (the root's, if it takes from none), its forbidden traits on none
  of them;
* a numbered group takes all of its amounts from one provider that has
  every required trait of the group and none of its forbidden ones; a
  numbered group that asks no resources names such a provider all the
  same;
* with ``group_policy=isolate`` the numbered groups that ask resources
  take from different providers.

The same function decides in the scheduler's memory (which hosts can
take the request) and in a claim's transaction (which providers the
claim writes), so that both agree. The search is bounded
(``MAX_STEPS``): a tree with many children and a request with many
groups costs at most that many steps, and finds nothing past them.
"""

MAX_STEPS = 2000


class Provider:
    """One provider of a tree as a placement sees it: its uuid, its
    traits (a set) and what is free of each class (``free(rc)``). The
    host states (``host_state.HostState`` and ``ChildState``) are
    placed on as they are; a claim makes these of the rows it reads.
    """

    __slots__ = ('uuid', 'traits', 'amounts')

    def __init__(self, uuid, traits, amounts):
        self.uuid = uuid
        self.traits = traits
        # {class: amount free}
        self.amounts = amounts

    def free(self, rc):
        return self.amounts.get(rc, 0)


def place(providers, request):
    """``{provider uuid: {class: amount}}`` of ``request`` on the tree
    ``providers`` (a sequence of :class:`Provider` or of host states,
    the root first), or None if it does not fit. Zero amounts are left
    out. A request of the unnumbered group alone asking one class (a
    device request on its own) is placed without the search."""
    if len(request.groups) == 1 and sum(
            1 for n in request.unnumbered.resources.values() if n) == 1:
        return place_one(providers, request)
    return search(providers, request)


def search(providers, request):
    """:func:`place`, by a bounded search over every group and amount.
    """
    unnumbered = request.unnumbered
    numbered = request.numbered()
    isolate = request.group_policy == 'isolate'
    # The steps: each numbered group, then each amount of the unnumbered
    # group, scarcest class first so that a dead end shows early.
    items = [('group', group) for group in numbered]
    amounts = [(rc, amount) for rc, amount in unnumbered.resources.items()
               if amount]
    amounts.sort(key=lambda item: sum(
        1 for p in providers if p.free(item[0]) >= item[1]))
    items += [('amount', item) for item in amounts]
    taken = [{} for _ in providers]
    # Providers the unnumbered group takes from; those of the numbered
    # groups that ask resources (for isolate).
    unnumbered_on = []
    isolated_on = set()
    steps = [0]

    def room(index, rc, amount):
        return providers[index].free(rc) - \
            taken[index].get(rc, 0) >= amount

    def take(index, resources, sign):
        for rc, amount in resources.items():
            if amount:
                taken[index][rc] = taken[index].get(rc, 0) + sign * amount

    def unnumbered_traits_hold():
        on = set(unnumbered_on) or {0}
        if request.root_used:
            on.add(0)
        have = set()
        for index in on:
            have |= providers[index].traits
        if not unnumbered.required <= have:
            return False
        return not any(unnumbered.forbidden & providers[index].traits
                       for index in on)

    def search(position):
        steps[0] += 1
        if steps[0] > MAX_STEPS:
            return False
        if position == len(items):
            return unnumbered_traits_hold()
        kind, item = items[position]
        for index, provider in enumerate(providers):
            if kind == 'group':
                group = item
                wants = {rc: n for rc, n in group.resources.items() if n}
                if wants and isolate and index in isolated_on:
                    continue
                if not group.required <= provider.traits or \
                        group.forbidden & provider.traits:
                    continue
                if not all(room(index, rc, n) for rc, n in wants.items()):
                    continue
                take(index, wants, 1)
                if wants and isolate:
                    isolated_on.add(index)
                if search(position + 1):
                    return True
                take(index, wants, -1)
                if wants and isolate:
                    isolated_on.discard(index)
            else:
                rc, amount = item
                if unnumbered.forbidden & provider.traits:
                    continue
                if not room(index, rc, amount):
                    continue
                take(index, {rc: amount}, 1)
                unnumbered_on.append(index)
                if search(position + 1):
                    return True
                unnumbered_on.pop()
                take(index, {rc: amount}, -1)
            if steps[0] > MAX_STEPS:
                return False
        return False

    if not search(0):
        return None
    return {providers[index].uuid: {rc: n for rc, n in amounts.items()
                                    if n}
            for index, amounts in enumerate(taken)
            if any(amounts.values())}


def place_one(providers, request):
    """:func:`search` of a request of the unnumbered group alone asking
    one class: the one provider with room for it whose traits (with the
    root's, if the group uses it) meet the group's; the first such in
    the order of ``providers``. Exact, and without the search."""
    group = request.unnumbered
    [(rc, amount)] = [(rc, n) for rc, n in group.resources.items() if n]
    root_traits = providers[0].traits if request.root_used else frozenset()
    if group.forbidden & root_traits:
        return None
    for provider in providers:
        if provider.free(rc) < amount or \
                group.forbidden & provider.traits:
            continue
        if group.required <= (provider.traits | root_traits):
            return {provider.uuid: {rc: amount}}
    return None


def totals(allocation):
    """``{class: amount}`` of an allocation over a tree, every provider
    together."""
    result = {}
    for resources in allocation.values():
        for rc, amount in resources.items():
            result[rc] = result.get(rc, 0) + amount
    return result
