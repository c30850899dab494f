"""The object base class, registry and serializer."""

import copy
import datetime
import functools

from oslo_serialization import jsonutils
from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields


class ObjectRegistry(ovo_base.VersionedObjectRegistry):

    def registration_hook(self, cls, index):
        from scheduler_split import objects
        version = tuple(int(p) for p in cls.VERSION.split('.'))
        current = getattr(objects, cls.obj_name(), None)
        if current is None or version >= tuple(
                int(p) for p in current.VERSION.split('.')):
            setattr(objects, cls.obj_name(), cls)


# Where oslo keeps a field's value (``_obj_<name>``, unset until set).
_ATTR = '_obj_'
_SERIAL = 'scheduler_split_object'
_NAME, _NAMESPACE, _VERSION, _DATA, _CHANGES = (
    '%s.%s' % (_SERIAL, key)
    for key in ('name', 'namespace', 'version', 'data', 'changes'))


class SchedulerSplitObject(ovo_base.VersionedObject):
    OBJ_SERIAL_NAMESPACE = _SERIAL
    OBJ_PROJECT_NAMESPACE = 'scheduler_split'

    def obj_to_primitive(self, target_version=None, version_manifest=None):
        if version_manifest is None and target_version in (None,
                                                           self.VERSION):
            return self._primitive()
        # A backport without a peer's manifest keeps child objects at the
        # versions this process has (oslo's default wants a hand-kept
        # ``obj_relationships`` table instead).
        if target_version is not None and version_manifest is None:
            version_manifest = ovo_base.obj_tree_get_versions(
                self.obj_name())
        return super().obj_to_primitive(target_version=target_version,
                                        version_manifest=version_manifest)

    def _primitive(self):
        """The object at its own version: oslo's primitive, built without
        asking whether each field is set, and what changed, once per
        field (every message carries an instance or two)."""
        data = {}
        for name, field in self.fields.items():
            try:
                value = getattr(self, _ATTR + name)
            except AttributeError:
                continue
            data[name] = field.to_primitive(self, name, value)
        primitive = {_NAME: self.obj_name(),
                     _NAMESPACE: self.OBJ_PROJECT_NAMESPACE,
                     _VERSION: self.VERSION,
                     _DATA: data}
        changes = [name for name in self.obj_what_changed() if name in data]
        if changes:
            primitive[_CHANGES] = changes
        return primitive

    @classmethod
    def _obj_from_primitive(cls, context, objver, primitive):
        """The object a primitive describes, as oslo builds it, without
        passing each scalar through its field's setter: a scalar field's
        ``from_primitive`` already gives the value its setter would
        store, because the sender's setter coerced it before it was
        sent (every message carries an instance or two). Dicts and
        lists still go through the setter, which wraps them in oslo's
        coercing collections."""
        self = cls()
        self._context = context
        self.VERSION = objver
        fields = self.fields
        direct = _direct_fields(cls)
        for name, value in primitive[_DATA].items():
            field = fields.get(name)
            if field is None:
                continue
            value = field.from_primitive(self, name, value)
            if name in direct:
                setattr(self, _ATTR + name, value)
            else:
                setattr(self, name, value)
        self._changed_fields = {name for name in primitive.get(_CHANGES, ())
                                if name in fields}
        return self

    def obj_attr_is_set(self, attrname):
        if attrname in self.fields:
            return hasattr(self, _ATTR + attrname)
        return super().obj_attr_is_set(attrname)

    def obj_what_changed(self):
        fields = self.fields
        changes = {name for name in self._changed_fields if name in fields}
        for name in fields:
            value = getattr(self, _ATTR + name, None)
            if isinstance(value, ovo_base.VersionedObject) and \
                    value.obj_what_changed():
                changes.add(name)
        return changes

    def to_json(self):
        return jsonutils.dumps(self.obj_to_primitive())

    @classmethod
    def from_json(cls, text):
        return cls.obj_from_primitive(jsonutils.loads(text))

    def obj_load_attr(self, name):
        # An unset field that has a default reads as that default.
        field = self.fields.get(name)
        if field is not None and field.default != fields.UnspecifiedDefault:
            setattr(self, name, copy.deepcopy(field.default))
            return
        super().obj_load_attr(name)

    def get(self, name, default=None):
        if self.obj_attr_is_set(name):
            return getattr(self, name)
        return default


# Field types whose values a primitive carries exactly as their setter
# would store them.
_SCALARS = (fields.String, fields.UUID, fields.Integer, fields.Float,
            fields.Boolean, fields.DateTime, fields.IPAddress, fields.Object)


@functools.lru_cache(maxsize=None)
def _direct_fields(cls):
    """The fields of ``cls`` that take a received value as it is."""
    return frozenset(name for name, field in cls.fields.items()
                     if isinstance(field._type, _SCALARS))


class ObjectSerializer(ovo_base.VersionedObjectSerializer):
    """Objects as primitives; with ``version_manifest`` (object name ->
    version), every object, nested ones included, at the version the
    manifest gives it: what a peer of an older release understands."""
    OBJ_BASE_CLASS = SchedulerSplitObject

    def __init__(self, version_manifest=None):
        super().__init__()
        self.version_manifest = version_manifest

    def serialize_entity(self, context, entity):
        if self.version_manifest is not None and isinstance(
                entity, ovo_base.VersionedObject):
            return backport(entity, self.version_manifest)
        return super().serialize_entity(context, entity)


@functools.lru_cache(maxsize=None)
def _tree(name):
    """The names of the object classes in ``name``'s tree: the classes
    are registered once, at import, and every message asks again."""
    return frozenset(ovo_base.obj_tree_get_versions(name))


@functools.lru_cache(maxsize=None)
def _current(manifest):
    """Whether every object of ``manifest`` (its items) is at the version
    this process registered last for it."""
    from scheduler_split import objects
    for name, version in manifest:
        cls = getattr(objects, name, None)
        if cls is None or cls.VERSION != version:
            return False
    return True


def backport(obj, version_manifest):
    """``obj`` as a primitive at the versions of ``version_manifest``.

    Every object in ``obj``'s tree must be in the manifest: an object
    left out would silently go at its current version.
    """
    missing = _tree(obj.obj_name()) - set(version_manifest)
    if missing:
        raise ValueError('No version of %s in the manifest %s' % (
            ', '.join(sorted(missing)), version_manifest))
    # An object received from an older peer (a Selection 1.0 relayed from
    # a scheduler pinned to 1.0, say) holds only what its version had: it
    # goes on at that version, which newer receivers read too.
    target = min(version_manifest[obj.obj_name()], obj.VERSION,
                 key=versionutils.convert_version_to_tuple)
    if target == obj.VERSION and _current(
            frozenset(version_manifest.items())):
        # Every object at the version this process has (a peer as new as
        # this one): nothing to convert.
        return obj.obj_to_primitive()
    return obj.obj_to_primitive(target_version=target,
                                version_manifest=version_manifest)


def naive_utc(value):
    """A datetime as the databases store it: UTC without tzinfo."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def apply_row(obj, row, names):
    """Copy columns ``names`` of a database row onto ``obj``."""
    for name in names:
        setattr(obj, name, getattr(row, name))
    obj.obj_reset_changes()
    return obj
