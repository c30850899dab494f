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
    traits (a set) and what is free of each class (``{class: amount}``).
    """

    __slots__ = ('uuid', 'traits', 'free')

    def __init__(self, uuid, traits, free):
        self.uuid = uuid
        self.traits = traits
        self.free = free


def place(providers, request):
    """``{provider uuid: {class: amount}}`` of ``request`` on the tree
    ``providers`` (a list of :class:`Provider`, the root first), or None
    if it does not fit. Zero amounts are left out."""
    unnumbered = request.unnumbered
    numbered = request.numbered()
    isolate = request.group_policy == 'isolate'
    # The steps: each numbered group, then each amount of the unnumbered
    # group, scarcest class first so that a dead end shows early.
    items = [('group', group) for group in numbered]
    amounts = [(rc, amount) for rc, amount in unnumbered.resources.items()
               if amount]
    amounts.sort(key=lambda item: sum(
        1 for p in providers if p.free.get(item[0], 0) >= item[1]))
    items += [('amount', item) for item in amounts]
    taken = [{} for _ in providers]
    # Providers the unnumbered group takes from; those of the numbered
    # groups that ask resources (for isolate).
    unnumbered_on = []
    isolated_on = set()
    steps = [0]

    def room(index, rc, amount):
        return providers[index].free.get(rc, 0) - \
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
    """:func:`place` of a request of the unnumbered group alone asking
    one class: the one provider with room for it whose traits (with the
    root's, if the group uses it) meet the group's; the first such in
    the order of ``providers``. Exact, and without the search."""
    group = request.unnumbered
    [(rc, amount)] = [(rc, n) for rc, n in group.resources.items() if n]
    root_traits = providers[0].traits if request.root_used else frozenset()
    if group.forbidden & root_traits:
        return None
    for provider in providers:
        if provider.free.get(rc, 0) < amount or \
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
