"""The policy engine: who may do what, decided by oslo.policy rules.

The rules and their defaults are in ``scheduler_split.policies``; an
operator overrides any of them in ``policy.yaml`` (``[oslo_policy]
policy_file``, found next to the config files or in
``/etc/scheduler-split/``). The file is re-read when it changes.

Handlers ask ``authorize(ctx, 'os_compute_api:servers:create', target)``;
a refusal is ``PolicyNotAuthorized``, which the API answers with a 403
in Nova's shape.
"""

import logging
import threading

from oslo_policy import policy as oslo_policy

from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import policies

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_ENFORCER = None
_LOCK = threading.Lock()


def _enforcer():
    global _ENFORCER
    if _ENFORCER is None:
        with _LOCK:
            if _ENFORCER is None:
                enforcer = oslo_policy.Enforcer(CONF)
                enforcer.register_defaults(policies.list_rules())
                enforcer.load_rules()
                _ENFORCER = enforcer
    return _ENFORCER


def reset():
    """Forget the enforcer: the next check reads CONF and the file again.
    """
    global _ENFORCER
    with _LOCK:
        if _ENFORCER is not None:
            _ENFORCER.clear()
        _ENFORCER = None


def default_target(ctx):
    """What a rule is checked against when the handler names no resource:
    the caller's own project."""
    return {'project_id': ctx.project_id, 'user_id': ctx.user_id}


def authorize(ctx, rule, target=None, fatal=True):
    """Whether ``ctx`` may do ``rule`` on ``target``.

    ``target`` describes the resource, e.g. ``{'project_id':
    instance.project_id}``; by default the caller's own project. A refusal
    raises ``PolicyNotAuthorized`` (a 403), or with ``fatal=False``
    returns False, for what only changes the shape of an answer (a field
    shown or not). A rule no module registers is a programming error and
    raises ``oslo_policy.policy.PolicyNotRegistered``.
    """
    if target is None:
        target = default_target(ctx)
    # A token of another scope than the rule's scope_types is refused
    # like any other mismatch.
    allowed = _enforcer().authorize(rule, target, ctx, do_raise=False)
    if not allowed:
        LOG.debug('Policy %s refused for user %s of project %s', rule,
                  ctx.user_id, ctx.project_id)
        if fatal:
            raise exception.PolicyNotAuthorized(action=rule)
    return bool(allowed)


def check_is_admin(ctx):
    """Whether ``ctx`` passes ``context_is_admin``: what ``is_admin`` of
    an API request's context is set from."""
    return authorize(ctx, 'context_is_admin', fatal=False)


def get_enforcer():
    """The enforcer, for the ``oslopolicy-*`` tools (entry point
    ``oslo.policy.enforcer``): they parse their own command line, so this
    only reads the default config files."""
    CONF([], project='scheduler-split')
    return _enforcer()
