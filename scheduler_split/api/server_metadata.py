"""``/v2.1/servers/{server_id}/metadata`` and ``/tags`` (2.26)."""

import copy

import jsonschema
import webob

from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_tag
from scheduler_split import policy
from scheduler_split import quota


# The states in which Nova lets metadata and tags change.
CONF = conf.CONF

_CHANGEABLE = [instance_obj.ACTIVE, instance_obj.PAUSED,
               instance_obj.SUSPENDED, instance_obj.STOPPED]

_metadata = {
    'type': 'object',
    'patternProperties': {
        '^[a-zA-Z0-9-_:. ]{1,255}$': {'type': 'string', 'maxLength': 255}},
    'additionalProperties': False,
}
metadata_schema = {
    'type': 'object',
    'properties': {'metadata': _metadata},
    'required': ['metadata'],
    'additionalProperties': False,
}
_one_item = copy.deepcopy(_metadata)
_one_item.update(minProperties=1, maxProperties=1)
metadata_item_schema = {
    'type': 'object',
    'properties': {'meta': _one_item},
    'required': ['meta'],
    'additionalProperties': False,
}
tag = {'type': 'string', 'minLength': 1,
       'maxLength': instance_tag.MAX_TAG_LENGTH, 'pattern': '^[^,/]*$'}
tags_schema = {
    'type': 'object',
    'properties': {'tags': {'type': 'array', 'items': tag,
                            'maxItems': instance_tag.MAX_TAGS}},
    'required': ['tags'],
    'additionalProperties': False,
}


def _get(req, ctx, server_id, rule):
    try:
        instance = req.compute_api.get(ctx, server_id)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    policy.authorize(ctx, rule, {'project_id': instance.project_id,
                                 'user_id': instance.user_id})
    return instance


def _check_state(instance, action):
    if instance.vm_state not in _CHANGEABLE:
        raise exception.InstanceInvalidState(
            action=action, instance_uuid=instance.uuid, attr='vm_state',
            state=instance.vm_state)


# --- metadata ---------------------------------------------------------------

def _change_metadata(req, ctx, instance, action, change):
    """Apply ``change`` (current metadata -> new metadata) atomically,
    once the server's lock and state allow it; the new metadata."""
    req.compute_api.check_lock(ctx, instance)
    _check_state(instance, action)
    _, cell = req.compute_api.locate(ctx, instance.uuid)
    if cell is None:
        raise exception.InstanceInvalidState(
            action=action, instance_uuid=instance.uuid, attr='vm_state',
            state=instance_obj.BUILDING)

    def checked(current):
        metadata = change(current)
        quota.check_metadata_items(metadata)
        return metadata
    try:
        return objects.Instance.update_metadata(
            ss_context.target_cell(ctx, cell), instance.uuid, checked)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())


def metadata_index(req, ctx, version, server_id):
    instance = _get(req, ctx, server_id,
                    'os_compute_api:server-metadata:index')
    return {'metadata': dict(instance.metadata)}


def metadata_create(req, ctx, version, server_id):
    """POST: merge the given items into the server's metadata."""
    body = req.json_body_or_error()
    schemas.validate(body, metadata_schema)
    instance = _get(req, ctx, server_id,
                    'os_compute_api:server-metadata:create')
    return {'metadata': _change_metadata(
        req, ctx, instance, 'update metadata',
        lambda current: dict(current, **body['metadata']))}


def metadata_update_all(req, ctx, version, server_id):
    """PUT: the server's metadata becomes the given items."""
    body = req.json_body_or_error()
    schemas.validate(body, metadata_schema)
    instance = _get(req, ctx, server_id,
                    'os_compute_api:server-metadata:update_all')
    return {'metadata': _change_metadata(
        req, ctx, instance, 'update metadata',
        lambda current: dict(body['metadata']))}


def metadata_show(req, ctx, version, server_id, key):
    instance = _get(req, ctx, server_id,
                    'os_compute_api:server-metadata:show')
    if key not in instance.metadata:
        raise errors.not_found('Metadata item was not found')
    return {'meta': {key: instance.metadata[key]}}


def metadata_update(req, ctx, version, server_id, key):
    body = req.json_body_or_error()
    schemas.validate(body, metadata_item_schema)
    if key not in body['meta']:
        raise errors.bad_request('Request body and URI mismatch')
    instance = _get(req, ctx, server_id,
                    'os_compute_api:server-metadata:update')
    _change_metadata(req, ctx, instance, 'update metadata',
                     lambda current: dict(current, **body['meta']))
    return {'meta': {key: body['meta'][key]}}


def metadata_delete(req, ctx, version, server_id, key):
    instance = _get(req, ctx, server_id,
                    'os_compute_api:server-metadata:delete')
    if key not in instance.metadata:
        raise errors.not_found('Metadata item was not found')

    def without(current):
        if key not in current:
            raise errors.not_found('Metadata item was not found')
        return {k: v for k, v in current.items() if k != key}
    _change_metadata(req, ctx, instance, 'delete metadata', without)
    return 204, None


# --- tags (2.26) ------------------------------------------------------------

def _tags_version(version):
    if version < (2, 26):
        raise errors.not_found('The resource could not be found.')


def _cell_context(req, ctx, instance, action):
    """The context of the server's cell, once its state allows changing
    its tags (a server still being scheduled is ``building``)."""
    _check_state(instance, action)
    _, cell = req.compute_api.locate(ctx, instance.uuid)
    if cell is None:
        raise exception.InstanceInvalidState(
            action=action, instance_uuid=instance.uuid, attr='vm_state',
            state=instance_obj.BUILDING)
    return ss_context.target_cell(ctx, cell)


def _check_tag(value):
    try:
        jsonschema.validate(value, tag)
    except jsonschema.ValidationError as exc:
        raise errors.bad_request(
            "Tag '%s' is invalid. It must be a non empty string without "
            "characters '/' and ','. Validation error message: %s"
            % (value, exc.message))


def tags_index(req, ctx, version, server_id):
    _tags_version(version)
    instance = _get(req, ctx, server_id,
                    'os_compute_api:os-server-tags:index')
    return {'tags': list(instance.get('tags') or [])}


def tags_update_all(req, ctx, version, server_id):
    _tags_version(version)
    body = req.json_body_or_error()
    schemas.validate(body, tags_schema)
    instance = _get(req, ctx, server_id,
                    'os_compute_api:os-server-tags:update_all')
    cctx = _cell_context(req, ctx, instance, 'update tags')
    tags = instance_tag.replace(cctx, instance.uuid, body['tags'])
    _tags_changed(req, ctx, instance)
    return {'tags': tags}


def tags_delete_all(req, ctx, version, server_id):
    _tags_version(version)
    instance = _get(req, ctx, server_id,
                    'os_compute_api:os-server-tags:delete_all')
    cctx = _cell_context(req, ctx, instance, 'delete tags')
    instance_tag.delete_all(cctx, instance.uuid)
    _tags_changed(req, ctx, instance)
    return 204, None


def _tags_changed(req, ctx, instance):
    """``instance.update``, as Nova sends for a change of tags."""
    try:
        instance = req.compute_api.get(ctx, instance.uuid)
    except exception.InstanceNotFound:
        return
    notifications.instance_event(ctx, notifications.api_publisher(),
                                 instance, 'instance.update')


def tag_show(req, ctx, version, server_id, tag):
    _tags_version(version)
    instance = _get(req, ctx, server_id,
                    'os_compute_api:os-server-tags:show')
    if tag not in (instance.get('tags') or []):
        raise errors.not_found("Server %s has no tag '%s'"
                               % (instance.uuid, tag))
    return 204, None


def tag_update(req, ctx, version, server_id, tag):
    """PUT a tag: 201 with its Location if new, 204 if the server had it.
    """
    _tags_version(version)
    instance = _get(req, ctx, server_id,
                    'os_compute_api:os-server-tags:update')
    cctx = _cell_context(req, ctx, instance, 'update tag')
    _check_tag(tag)
    if not instance_tag.add(cctx, instance.uuid, tag):
        return 204, None
    _tags_changed(req, ctx, instance)
    response = webob.Response(status=201)
    response.content_type = None
    response.headers['Location'] = '%s/v2.1/servers/%s/tags/%s' % (
        req.application_url, instance.uuid, tag)
    return response


def tag_delete(req, ctx, version, server_id, tag):
    _tags_version(version)
    instance = _get(req, ctx, server_id,
                    'os_compute_api:os-server-tags:delete')
    cctx = _cell_context(req, ctx, instance, 'delete tag')
    if not instance_tag.delete(cctx, instance.uuid, tag):
        raise errors.not_found("Instance %s has no tag '%s'"
                               % (instance.uuid, tag))
    _tags_changed(req, ctx, instance)
    return 204, None
