"""Exceptions with a message and the HTTP status the API answers with."""

import logging


def describe(exc):
    """What a user should read about ``exc``."""
    if isinstance(exc, SchedulerSplitException):
        return exc.format_message()
    return str(exc) or type(exc).__name__


def _own_class(exc):
    """The class of this module ``exc`` is, also when it crossed the bus
    (oslo.messaging raises a subclass made for the remote error)."""
    return next((cls for cls in type(exc).__mro__
                 if cls.__module__ == __name__), None)


def is_overtaken(exc):
    """Whether ``exc`` says someone else acted first (:data:`OVERTAKEN`,
    or the plain ``Conflict`` of a guarded save that found its record
    moved on; its subclasses name other conflicts)."""
    return isinstance(exc, OVERTAKEN) or _own_class(exc) is Conflict


def is_expected(exc):
    """Whether ``exc`` is an outcome the code expects and handles by name
    (:func:`is_overtaken`, :data:`EXPECTED_OUTCOMES`) rather than a
    bug."""
    return is_overtaken(exc) or isinstance(exc, EXPECTED_OUTCOMES)


def log_failure(log, exc, msg, *args, **kwargs):
    """Log on ``log`` that ``msg % args`` failed with ``exc``.

    An expected outcome is one line without a traceback that ends with
    its reason: INFO when someone else acted first
    (:func:`is_overtaken`), WARNING otherwise. Anything else is a bug:
    ERROR with its traceback. ``kwargs`` go to the logger (``extra``,
    say).
    """
    # The record names the caller's line, not this one.
    kwargs.setdefault('stacklevel', 2)
    if not is_expected(exc):
        log.error(msg, *args, exc_info=exc, **kwargs)
        return
    level = logging.INFO if is_overtaken(exc) else logging.WARNING
    log.log(level, msg + ': %s', *args, describe(exc), **kwargs)


class SchedulerSplitException(Exception):
    msg_fmt = 'An unknown error occurred.'
    code = 500

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def format_message(self):
        return self.message


class Invalid(SchedulerSplitException):
    msg_fmt = 'Invalid input: %(reason)s'
    code = 400


class MoveLost(SchedulerSplitException):
    msg_fmt = ('No service advanced the %(kind)s of instance '
               '%(instance_uuid)s (%(status)s) within [conductor] '
               'lost_build_timeout; it was rolled back to its source')


class TaskLost(SchedulerSplitException):
    msg_fmt = ('No service advanced the %(action)s of instance '
               '%(instance_uuid)s (%(task_state)s) within [conductor] '
               'lost_build_timeout')


class InstanceNotResized(Invalid):
    msg_fmt = 'Instance has not been resized.'


class ComputeServiceInUse(Invalid):
    msg_fmt = 'Compute service of %(host)s is still in use.'


class MoveToSameHost(Invalid):
    msg_fmt = "The target host can't be the same one."


class ValidationError(Invalid):
    msg_fmt = 'Invalid input for field/attribute %(field)s. %(reason)s'


class MarkerNotFound(Invalid):
    """A page asked to start after an item its listing does not hold."""
    msg_fmt = 'marker [%(marker)s] not found'


class QuotaBelowUsage(Invalid):
    msg_fmt = ('Quota limit %(limit)d for %(resource)s must be greater than '
               'or equal to already used and reserved %(used)d.')


class NotFound(SchedulerSplitException):
    msg_fmt = 'Resource could not be found.'
    code = 404


class InstanceNotFound(NotFound):
    msg_fmt = 'Instance %(instance_id)s could not be found.'


class FlavorNotFound(NotFound):
    msg_fmt = 'Flavor %(flavor_id)s could not be found.'


class FlavorExtraSpecsNotFound(NotFound):
    msg_fmt = ('Flavor %(flavor_id)s has no extra specs with key '
               '%(extra_specs_key)s.')


class FlavorAccessNotFound(NotFound):
    msg_fmt = ('Flavor access not found for %(flavor_id)s / '
               '%(project_id)s combination.')


class ImageNotFound(NotFound):
    msg_fmt = 'Image %(image_id)s could not be found.'


class ImageServiceUnavailable(SchedulerSplitException):
    msg_fmt = 'The image service is unavailable: %(reason)s'
    code = 503


class ImageUnacceptable(Invalid):
    """An image's data cannot be used: there is none, or it is not what
    the image's record says (its size or md5)."""
    msg_fmt = 'Image %(image_id)s is unacceptable: %(reason)s'


class CellMappingNotFound(NotFound):
    msg_fmt = 'Cell %(uuid)s has no mapping.'


class InstanceMappingNotFound(NotFound):
    msg_fmt = 'Instance %(uuid)s has no mapping to a cell.'


class BuildRequestNotFound(NotFound):
    msg_fmt = 'BuildRequest not found for instance %(uuid)s'


class KeypairNotFound(NotFound):
    msg_fmt = 'Keypair %(name)s not found for user %(user_id)s'


class Conflict(SchedulerSplitException):
    msg_fmt = 'Conflict: %(reason)s'
    code = 409


class FlavorExists(Conflict):
    msg_fmt = 'Flavor with name %(name)s already exists.'


class FlavorIdExists(Conflict):
    msg_fmt = 'Flavor with ID %(flavor_id)s already exists.'


class KeyPairExists(Conflict):
    msg_fmt = "Key pair '%(name)s' already exists."


class FlavorAccessExists(Conflict):
    msg_fmt = ('Flavor access already exists for flavor %(flavor_id)s and '
               'project %(project_id)s combination.')


class NotAuthorized(SchedulerSplitException):
    msg_fmt = 'Not authorized.'
    code = 403


class ImageNotAuthorized(NotAuthorized):
    """The image service refused a change of an image the user sees."""
    msg_fmt = 'Not authorized for image %(image_id)s.'


class ImageProtected(ImageNotAuthorized):
    msg_fmt = 'Image %(image_id)s is protected and cannot be deleted.'


class ImageExists(SchedulerSplitException):
    msg_fmt = 'Image with identifier %(image_id)s already exists!'
    code = 409


class ImageStatusConflict(SchedulerSplitException):
    msg_fmt = ('Image status transition from %(status)s to %(to)s is not '
               'allowed')
    code = 409


class PolicyNotAuthorized(NotAuthorized):
    """The policy rule ``action`` refused the request (a 403)."""
    msg_fmt = "Policy doesn't allow %(action)s to be performed."


class Unauthorized(SchedulerSplitException):
    msg_fmt = 'The request you have made requires authentication.'
    code = 401


class DatabaseUnavailable(SchedulerSplitException):
    msg_fmt = ('A database is unavailable: %(reason)s. Please try again '
               'later.')
    code = 503


class CellUnavailable(DatabaseUnavailable):
    """The database of the cell holding an instance cannot be reached;
    the API database could (``mapping`` is the instance's mapping)."""
    msg_fmt = ('The cell %(cell)s cannot be reached: %(reason)s. Please '
               'try again later.')

    def __init__(self, message=None, mapping=None, **kwargs):
        super().__init__(message, **kwargs)
        self.mapping = mapping


class ServiceUnavailable(SchedulerSplitException):
    msg_fmt = 'Service unavailable: %(reason)s. Please try again.'
    code = 503


class NoValidHost(SchedulerSplitException):
    msg_fmt = 'No valid host was found. %(reason)s'


class MaxRetriesExceeded(NoValidHost):
    msg_fmt = ('Exceeded maximum number of retries. %(reason)s')


class ClaimConflict(SchedulerSplitException):
    """Another writer changed the provider between our read and our write.

    A normal outcome of optimistic concurrency: the caller discards the
    host and moves on to the next one.
    """
    msg_fmt = ('Resource provider %(provider)s changed concurrently '
               '(generation %(generation)s is stale).')
    code = 409


class ClaimDeadlock(ClaimConflict):
    """The database aborted the claim to break a deadlock with another."""
    msg_fmt = ('Claim on resource provider %(provider)s was aborted by the '
               'database to break a deadlock with another claim.')


class ClaimCapacityExceeded(SchedulerSplitException):
    """The host does not have room for the request any more."""
    msg_fmt = ('Host %(host)s cannot fit %(amount)s %(resource)s: '
               '%(free)s free.')
    code = 409


class ClaimTreeRefused(ClaimCapacityExceeded):
    """The host's providers have room for each amount, but no way of
    spreading the request over them meets its groups and traits."""
    msg_fmt = ('Host %(host)s has no providers that together fit '
               '%(request)s.')


class ComputeHostDisabled(SchedulerSplitException):
    """The host's compute service is disabled: no new claims there."""
    msg_fmt = 'Compute host %(host)s is disabled.'
    code = 409


class ClaimGroupPolicyViolation(SchedulerSplitException):
    """The claim would break the hard policy of the instance's group."""
    msg_fmt = ('Host %(host)s would break the %(policy)s policy of server '
               'group %(group)s.')
    code = 409


class InstanceGroupNotFound(NotFound):
    msg_fmt = 'Instance group %(group_uuid)s could not be found.'


class ComputeHostNotFound(NotFound):
    msg_fmt = 'Compute host %(host)s could not be found.'


class MigrationNotFound(NotFound):
    msg_fmt = 'Migration %(migration_id)s could not be found.'


class MigrationPreCheckError(SchedulerSplitException):
    msg_fmt = 'Migration pre-check error: %(reason)s'


class MigrationNotFoundForInstance(MigrationNotFound):
    msg_fmt = ('Migration %(migration_id)s not found for instance '
               '%(instance_id)s')


class ServiceNotFound(NotFound):
    msg_fmt = 'Service %(binary)s on host %(host)s could not be found.'


class RescheduledException(SchedulerSplitException):
    msg_fmt = 'Build of instance %(instance_uuid)s was re-scheduled: ' \
              '%(reason)s'


class BuildAbortException(SchedulerSplitException):
    msg_fmt = 'Build of instance %(instance_uuid)s aborted: %(reason)s'


class CellsNotConfigured(SchedulerSplitException):
    msg_fmt = '%(reason)s'


class DatabaseUnusable(SchedulerSplitException):
    msg_fmt = 'database %(label)s (%(url)s): %(reason)s'


class CellHasHosts(Conflict):
    msg_fmt = ('cell %(name)s (%(uuid)s) has hosts mapped to it: '
               '%(hosts)s; give --force to unmap them with the cell')


class CellHasInstances(Conflict):
    msg_fmt = ('cell %(name)s (%(uuid)s) holds %(count)d instances not '
               'deleted; delete or move them first')


class CellHasInstanceMappings(Conflict):
    msg_fmt = ('cell %(name)s (%(uuid)s) holds no instance but '
               '%(count)d instance mappings still name it; give --force '
               'to delete them with the cell')


class AggregateNotFound(NotFound):
    msg_fmt = 'Aggregate %(aggregate_id)s could not be found.'


class AggregateNameExists(Conflict):
    msg_fmt = 'Aggregate %(aggregate_name)s already exists.'


class AggregateHostExists(Conflict):
    msg_fmt = 'Aggregate %(aggregate_id)s already has host %(host)s.'


class AggregateHostNotFound(NotFound):
    msg_fmt = 'Cannot remove host %(host)s in aggregate %(aggregate_id)s'


class InvalidAggregateAction(Conflict):
    msg_fmt = ('Cannot %(action)s aggregate %(aggregate_id)s. Reason: '
               '%(reason)s.')


class AggregateNotEmpty(Invalid):
    msg_fmt = ('Cannot remove aggregate %(aggregate_id)s. Reason: Host '
               'aggregate is not empty.')


class InstanceInvalidState(Conflict):
    """The API words it as Nova's: Cannot '<action>' instance <uuid>
    while it is in <attr> <state>."""
    msg_fmt = ("Cannot '%(action)s' instance %(instance_uuid)s while it is "
               "in %(attr)s %(state)s")


class InstanceIsLocked(Conflict):
    msg_fmt = 'Instance %(instance_uuid)s is locked'


class InstanceNotReady(Conflict):
    msg_fmt = 'Instance %(instance_id)s is not ready'


class ServicesTooOldToMove(Conflict):
    msg_fmt = ("Cannot '%(action)s' instance %(instance_uuid)s: a service "
               "it needs is too old for moves (capped at RPC %(cap)s; moves "
               "need compute 1.5, conductor 1.8 and scheduler 1.5); try "
               "again once they are upgraded")


class ServicesTooOld(Conflict):
    msg_fmt = ("Cannot '%(action)s' instance %(instance_uuid)s: a service "
               "it needs is too old for it (capped at RPC %(cap)s; it needs "
               "%(needed)s); try again once they are upgraded")


class ComputeTooOld(Conflict):
    msg_fmt = ("Cannot '%(action)s' instance %(instance_uuid)s: the compute "
               "services of its cell are too old for it (they run compute "
               "RPC %(cap)s, it needs %(needed)s); try again once they are "
               "upgraded")


# Someone else acted first: what the work was on was deleted meanwhile (a
# user's delete of a server, its build request or its migration) or is
# in another state now. Other things not found (a flavor, a cell, a
# host) are no such race: their traceback is kept.
OVERTAKEN = (InstanceNotFound, InstanceMappingNotFound, BuildRequestNotFound,
             MigrationNotFound, InstanceInvalidState)

# Outcomes the code expects and settles by name besides being overtaken:
# a request no host can take (or none is left for:
# ``MaxRetriesExceeded``), a claim another claim beat or a host refused,
# services too old for a request, and the failures the services raise
# themselves with their reason. Their log is one line; a traceback is
# kept for everything else.
EXPECTED_OUTCOMES = (
    NoValidHost, ClaimConflict, ClaimCapacityExceeded, ComputeHostDisabled,
    ClaimGroupPolicyViolation, RescheduledException, BuildAbortException,
    MoveLost, TaskLost, ServicesTooOld, ServicesTooOldToMove, ComputeTooOld)


# --- the Placement model's writes -------------------------------------------
# ``placement_code``: the error code Placement answers the same failure
# with (from its microversion 1.23).

class ResourceProviderNotFound(NotFound):
    msg_fmt = 'No resource provider with uuid %(uuid)s found'


class ResourceProviderConcurrentUpdate(Conflict):
    msg_fmt = ('resource provider generation conflict: the resource '
               'provider %(uuid)s changed since generation %(generation)s '
               'was read; read it again and retry')
    placement_code = 'placement.concurrent_update'


class TraitNotFound(NotFound):
    msg_fmt = 'No such trait(s): %(names)s.'


class TraitsUnknown(Invalid):
    msg_fmt = 'No such trait(s): %(names)s.'


class TraitInUse(Conflict):
    msg_fmt = 'The trait %(name)s is in use by a resource provider.'


class TraitCannotDeleteStandard(Invalid):
    msg_fmt = 'Cannot delete standard trait %(name)s.'


class ResourceClassNotFound(NotFound):
    msg_fmt = 'No such resource class %(name)s.'


class ResourceClassExists(Conflict):
    msg_fmt = 'Resource class %(name)s already exists.'
    placement_code = 'placement.duplicate_name'


class ResourceClassInUse(Conflict):
    msg_fmt = ('Unable to delete resource class %(name)s. Delete all '
               'inventory and allocations of this resource class before '
               'deleting it.')


class ResourceClassCannotDeleteStandard(Invalid):
    msg_fmt = 'Cannot delete standard resource class %(name)s.'


class ResourceProviderExists(Conflict):
    msg_fmt = 'Conflicting resource provider %(what)s already exists.'
    placement_code = 'placement.duplicate_name'


class ResourceProviderInvalid(Invalid):
    msg_fmt = '%(detail)s'


class ResourceProviderInUse(Conflict):
    msg_fmt = ('Unable to delete resource provider %(uuid)s: Resource '
               'provider has allocations.')
    placement_code = 'placement.resource_provider.inuse'


class ResourceProviderHasChildren(Conflict):
    msg_fmt = ('Unable to delete parent resource provider %(uuid)s: It '
               'has child resource providers.')
    placement_code = 'placement.resource_provider.cannot_delete_parent'


class InventoryClassUnknown(Invalid):
    msg_fmt = 'No such resource class %(name)s.'


class InventoryInUse(Conflict):
    msg_fmt = ("Inventory for '%(classes)s' on resource provider "
               "'%(uuid)s' in use.")
    placement_code = 'placement.inventory.inuse'


class InventoryExists(Conflict):
    msg_fmt = ('Update conflict: Inventory for %(name)s on resource '
               'provider %(uuid)s already exists.')
    placement_code = 'placement.concurrent_update'


class InventoryNotFound(NotFound):
    msg_fmt = 'No inventory of class %(name)s found.'


class AllocationsRaced(Conflict):
    msg_fmt = ('Inventory and/or allocations changed while attempting to '
               'allocate: Another thread concurrently updated the data. '
               'Please retry your update')
    placement_code = 'placement.concurrent_update'


class ConsumerGenerationConflict(Conflict):
    msg_fmt = ('consumer generation conflict - expected %(expected)s but '
               'got %(got)s')
    placement_code = 'placement.concurrent_update'


class AllocationProviderNotFound(Invalid):
    msg_fmt = ("Allocation for resource provider '%(uuid)s' that does not "
               "exist.")


class AllocationNoInventory(Conflict):
    msg_fmt = ("Unable to allocate inventory: Inventory for '%(rc)s' on "
               "resource provider '%(uuid)s' invalid.")


class AllocationConstraintsViolated(Conflict):
    msg_fmt = ("Unable to allocate inventory: Unable to create allocation "
               "for '%(rc)s' on resource provider '%(uuid)s'. The requested "
               "amount would violate inventory constraints.")


class AllocationCapacityExceeded(Conflict):
    msg_fmt = ("Unable to allocate inventory: Unable to create allocation "
               "for '%(rc)s' on resource provider '%(uuid)s'. The requested "
               "amount would exceed the capacity.")


class ConsumerAllocationsNotFound(NotFound):
    msg_fmt = "No allocations for consumer '%(uuid)s'"


class ResourceClassCannotUpdateStandard(Invalid):
    msg_fmt = 'Cannot update standard resource class %(name)s'


class ReshapeGenerationConflict(Conflict):
    msg_fmt = ('resource provider generation conflict for provider '
               '%(uuid)s: actual: %(actual)s, given: %(given)s')
    placement_code = 'placement.concurrent_update'
