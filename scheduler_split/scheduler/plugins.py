"""Filters and weighers: plugins found by their class name.

A class that derives from a plugin base (``filters.BaseHostFilter``,
``weights.BaseHostWeigher``) registers itself under its name when its
module is imported, and the package of each kind imports every module it
holds. Adding a filter is then one small class in a file of its own and
its name in ``[filter_scheduler] enabled_filters``; nothing keeps a list.
A base meant only to be derived from says ``abstract=True``; a class
whose name starts with an underscore is not registered either.
"""

import importlib
import pkgutil


class Registry:
    """The classes of one kind of plugin, by name."""

    def __init__(self, kind, option):
        self.kind = kind
        # The option that names the enabled ones, for errors.
        self.option = option
        self._classes = {}

    def add(self, cls):
        name = cls.__name__
        known = self._classes.get(name)
        if known is not None and (known.__module__, known.__qualname__) != (
                cls.__module__, cls.__qualname__):
            raise TypeError('Two scheduler %ss are named %s: in %s and in %s'
                            % (self.kind, name, known.__module__,
                               cls.__module__))
        self._classes[name] = cls

    def remove(self, cls):
        if self._classes.get(cls.__name__) is cls:
            del self._classes[cls.__name__]

    def get(self, name):
        return self._classes.get(name)

    def names(self):
        return sorted(self._classes)

    def load(self, names):
        """Instances of the classes ``names``, in that order;
        ``ValueError`` naming every unknown one."""
        unknown = [name for name in names if name not in self._classes]
        if unknown:
            raise ValueError('%s names unknown scheduler %ss: %s (known: %s)'
                             % (self.option, self.kind, ', '.join(unknown),
                                ', '.join(self.names())))
        return [self._classes[name]() for name in names]


class Plugin:
    """Base of the plugin bases: registers each concrete subclass in the
    ``registry`` of its base."""

    registry = None

    def __init_subclass__(cls, abstract=False, **kwargs):
        super().__init_subclass__(**kwargs)
        if not abstract and not cls.__name__.startswith('_'):
            cls.registry.add(cls)


def attribute_lookup(registry, module):
    """A module ``__getattr__`` that answers a plugin's name with its
    class, so that ``filters.RamFilter`` is what config calls RamFilter.
    """
    def __getattr__(name):
        cls = registry.get(name)
        if cls is None:
            raise AttributeError('module %r has no attribute %r'
                                 % (module, name))
        return cls
    return __getattr__


def import_all(package, path):
    """Import every module of the package named ``package`` (whose
    ``__path__`` is ``path``): each registers the plugins it defines."""
    for module in pkgutil.iter_modules(path):
        importlib.import_module('%s.%s' % (package, module.name))
