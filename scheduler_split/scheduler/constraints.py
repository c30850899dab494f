"""What narrows the hosts of a request before and beside the filters,
and what a request that found no host says: the labels and tests of
what it asks of the Placement model (traits, classes beyond the
filters', isolated groups, the whole tree), the hosts the host manager's
index holds for it, and the fault and the log line of a request no host
took (:mod:`manager`)."""

from scheduler_split.objects import resource_request


# The labels of what a request asks of the Placement model (traits,
# classes beyond the filters' VCPU, MEMORY_MB and DISK_GB, isolated
# groups) start so: a request no host has them for says which.
MODEL = 'no host has '
# The label of the hosts left once those of the cells whose database does
# not answer are out (:mod:`cell_health`), before the cells' names.
CELLS_DOWN = 'cells that answer, not '


def model_part(request):
    """What ``request`` asks of the Placement model beyond the filters:
    the same request without the unnumbered group's VCPU, MEMORY_MB and
    DISK_GB (which the resource filters check); None if that is
    nothing."""
    beyond = {rc: amount for rc, amount in request.unnumbered.resources.items()
              if amount and rc not in resource_request.STANDARD_BASE}
    if not (beyond or request.placed_by_groups()):
        return None
    part = resource_request.ResourceRequest.from_primitive(
        request.to_primitive())
    part.unnumbered.resources = beyond
    part.root_used = request.root_used or any(
        request.unnumbered.resources.get(rc)
        for rc in resource_request.STANDARD_BASE)
    return part


def model_constraints(request, indexed=False):
    """``(label, test of a host)`` of what ``request`` (a
    ``ResourceRequest``) asks of a host's provider tree beyond the
    filters: its traits, the resource classes the resource filters do
    not check, numbered groups ``group_policy=isolate`` puts on
    providers of their own, and last, all of it together as Placement
    would place it (:func:`tree_fit.place`). ``indexed``: the hosts
    were narrowed to those whose trees have the traits already."""
    part = model_part(request)
    if part is None:
        return
    required = request.required_traits()
    forbidden = request.unnumbered.forbidden
    if required and not indexed:
        yield (MODEL + 'the traits %s' % ', '.join(sorted(required)),
               lambda h: required <= h.tree_traits())
    if forbidden:
        yield (MODEL + 'none of the traits %s' % ', '.join(
            sorted(forbidden)), lambda h: not (forbidden & h.traits))
    beyond = {rc: amount for rc, amount in request.totals().items()
              if rc not in resource_request.STANDARD_BASE}
    if beyond:
        yield (MODEL + 'room for %s' % ', '.join(
            '%s=%d' % item for item in sorted(beyond.items())),
            lambda h: all(h.tree_room(rc) >= amount
                          for rc, amount in beyond.items()))
    isolated = request.isolated_groups()
    if isolated > 1:
        yield (MODEL + 'a provider of its own for each of %d request '
               'groups (group_policy=isolate)' % isolated,
               lambda h: len(h.children) + 1 >= isolated)
    yield (MODEL + 'providers that together fit %s' % part.describe(),
           lambda h: h.place(part) is not None)


def indexed(host_manager, request):
    """The hosts whose trees have every class beyond VCPU, MEMORY_MB
    and DISK_GB and every trait the request asks (a superset of those
    that fit it), from the host manager's index; None to look at every
    host."""
    classes = [rc for rc in request.totals()
               if rc not in resource_request.STANDARD_BASE]
    return host_manager.having(classes, request.required_traits())


def no_host_reason(record):
    """The fault of a request that found no host: as Nova's, and
    which part of what it asks of the Placement model no host had,
    if one did."""
    reason = 'There are not enough hosts available.'
    emptied = next((label for label, left in record.constraints
                    if not left), '')
    if emptied.startswith(MODEL):
        reason += ' No host has %s.' % emptied[len(MODEL):]
    elif emptied.startswith(CELLS_DOWN):
        names = emptied[len(CELLS_DOWN):]
        reason += (' Cells %s cannot be reached (their database or bus).'
                   if ', ' in names else
                   ' Cell %s cannot be reached (its database or bus).'
                   ) % names
    return reason


def why_no_host(record, spec_obj):
    """What the request and each filter left of the hosts, for the
    log of a request that found none; ``record`` is the pass that
    looked at every host.

    Every host that passed the filters was refused its claim, which
    brought its state up to date: the first filter that refuses it
    now takes it, and what no filter refuses reads as "every claim
    refused"."""
    late = [0] * len(record.filters)
    for host in record.passed:
        for index, host_filter in enumerate(record.filters):
            if not host_filter.filter_all([host], spec_obj):
                late[index] += 1
                break
    steps = ['%d hosts known' % record.known]
    steps += ['%s: %d' % step for step in record.constraints]
    left = record.looked - sum(record.stage_removed)
    for (name, removed), refused in zip(record.counts(), late):
        left -= removed + refused
        steps.append('%s: %d' % (name, left))
        if not left:
            break
    else:
        steps.append('every claim refused')
    return ', '.join(steps)
