"""oslo.policy's ``[oslo_policy]`` options, with this project's defaults.

``policy_file`` is a name looked up the usual oslo way: next to the
``--config-file`` files, then in ``~/.scheduler-split/``, ``~/``,
``/etc/scheduler-split/`` and ``/etc/``; an absolute path is used as is.
"""

from oslo_policy import opts as policy_opts

POLICY_FILE = 'policy.yaml'


def register_opts(conf):
    policy_opts.set_defaults(conf, policy_file=POLICY_FILE)


def list_opts():
    return dict(policy_opts.list_opts())
