#!/bin/bash
# Run the scheduler-split devstack plugin through devstack's own libraries,
# in the order stack.sh, unstack.sh and clean.sh run a plugin, on a machine
# without systemd: the devstack@ units devstack writes are run by
# systemctl3 (docker-systemctl-replacement) under $SS_ROOT.
#
# usage: run_plugin.sh stack|unstack|clean
#
# Environment:
#   DEVSTACK_DIR       a devstack checkout (only read)
#   SS_REPO            this repository (the plugin)
#   SS_ROOT            where everything devstack writes goes
#   SS_VENV            the Python environment scheduler-split is installed
#                      in (devstack's global venv here)
#   SS_API_PORT        the compute API's port
#   SS_KEYSTONE_URL    an existing Keystone (identity root URL) to use, and
#   SS_ADMIN_PASSWORD  its admin password; without them: noauth2
#   SS_DATABASE        devstack's database service: mysql (devstack's
#                      default) or postgresql (the default here)
# RabbitMQ must listen on 127.0.0.1:5672, with `rabbitmqctl` on PATH
# reaching it; PostgreSQL on 127.0.0.1:5432 trusting local connections,
# or MariaDB on 127.0.0.1:3306 taking root with $DATABASE_PASSWORD (the
# ports devstack's libraries assume).

MODE=$1
TOP_DIR=$DEVSTACK_DIR
if [[ "$MODE" == "stack" ]]; then
    set -o errexit
fi
set -o xtrace

# What local.conf would say.
SS_DATABASE=${SS_DATABASE:-postgresql}
ENABLED_SERVICES=rabbit,$SS_DATABASE
if [[ -n "${SS_KEYSTONE_URL:-}" ]]; then
    ENABLED_SERVICES+=,key
fi
HOST_IP=127.0.0.1
SERVICE_HOST=127.0.0.1
# Fake compute hosts: devstack's default, libvirt, would install and
# start libvirtd and QEMU.
VIRT_DRIVER=fake
if [[ "$SS_DATABASE" == "postgresql" ]]; then
    DATABASE_USER=postgres
else
    DATABASE_USER=root
    MYSQL_HOST=127.0.0.1
    # Its query counter (tools/dbcounter) is installed by
    # configure_database_mysql, which runs only with devstack's own
    # MariaDB; without it every URL names a plugin SQLAlchemy lacks.
    MYSQL_GATHER_PERFORMANCE=False
fi
DATABASE_PASSWORD=devstack-db
RABBIT_PASSWORD=devstack-rabbit
ADMIN_PASSWORD=${SS_ADMIN_PASSWORD:-devstack-admin}
SERVICE_PASSWORD=devstack-service
# scheduler-split and its dependencies are already in $SS_VENV: nothing is
# downloaded.
OFFLINE=True
DEVSTACK_VENV=$SS_VENV
LOGDIR=$SS_ROOT/logs
SCHEDULER_SPLIT_CONF_DIR=$SS_ROOT/etc/scheduler-split
SCHEDULER_SPLIT_SERVICE_PORT=$SS_API_PORT
SCHEDULER_SPLIT_COMPUTE_TIMEOUT=60

source $TOP_DIR/functions
source $TOP_DIR/lib/stack
source $TOP_DIR/stackrc

# Timestamps in the trace, without a fork per line.
PS4='+ ${EPOCHREALTIME} ${BASH_SOURCE[0]##*/}:${FUNCNAME[0]:-}:${LINENO}: '

# stackrc sets these without looking at the environment.
DEST=$SS_ROOT/opt/stack
DATA_DIR=$DEST/data
SERVICE_DIR=$DEST/status
STACK_USER=root
SYSTEMD_DIR=$SS_ROOT/etc/systemd/system
SYSTEMCTL="systemctl3 --root=$SS_ROOT"
export PYTHON=$SS_VENV/bin/python3
# No openstack/requirements checkout: no constraints to edit.
REQUIREMENTS_DIR=
OPENSTACKCLIENT_CONF_DIR=$SS_ROOT/etc/openstack
export OS_CLIENT_CONFIG_FILE=$OPENSTACKCLIENT_CONF_DIR/clouds.yaml
TEMPEST_CONFIG=$SS_ROOT/tempest/etc/tempest.conf

# There is no sudo here, and we are root already.
function sudo {
    local user=""
    while [[ $# -gt 0 && "$1" == -* ]]; do
        case "$1" in
            -u) user=$2; shift 2;;
            --) shift; break;;
            *) shift;;
        esac
    done
    if [[ -n "$user" && "$user" != root ]]; then
        runuser -u "$user" -- env "$@"
    else
        env "$@"
    fi
}
export -f sudo

enable_plugin scheduler-split file://$SS_REPO main
GITDIR[scheduler-split]=$SS_REPO

source $TOP_DIR/lib/database
source $TOP_DIR/lib/rpc_backend
source $TOP_DIR/lib/keystone
if [[ -n "${SS_KEYSTONE_URL:-}" ]]; then
    # An existing Keystone, as for a devstack whose KEYSTONE_SERVICE_HOST
    # is another host.
    KEYSTONE_SERVICE_URI=$SS_KEYSTONE_URL
    KEYSTONE_AUTH_URI=$KEYSTONE_SERVICE_URI
    KEYSTONE_SERVICE_URI_V3=$KEYSTONE_SERVICE_URI/v3
    KEYSTONE_AUTH_URI_V3=$KEYSTONE_SERVICE_URI/v3
    MEMCACHE_SERVERS=
fi
run_phase source

case "$MODE" in
stack)
    initialize_database_backends
    define_database_baseurl
    run_phase stack pre-install
    restart_rpc_backend
    # What stack.sh does next: the database's Python driver, named by the
    # lines of openstack/requirements' global-requirements.txt that
    # pip_install_gr reads (offline, pip_install installs nothing).
    mkdir -p $SS_ROOT/requirements
    printf '%s\n' 'PyMySQL>=0.8.0' 'psycopg2>=2.8.6' \
        > $SS_ROOT/requirements/global-requirements.txt
    REQUIREMENTS_DIR=$SS_ROOT/requirements install_database_python
    run_phase stack install
    if is_service_enabled keystone; then
        write_clouds_yaml
        export OS_CLOUD=devstack-admin
        # What stack.sh creates in every Keystone it uses: the service
        # project and role the plugin's accounts need.
        get_or_create_domain "$SERVICE_DOMAIN_NAME"
        get_or_create_project "$SERVICE_PROJECT_NAME" "$SERVICE_DOMAIN_NAME"
        get_or_create_role service
    fi
    run_phase stack post-config
    run_phase stack extra
    # Tempest itself is not installed here (devstack's extras.d would
    # clone it): only the plugins' test-config runs, with tempest enabled.
    enable_service tempest
    mkdir -p $(dirname $TEMPEST_CONFIG)
    run_plugins stack test-config
    ;;
unstack)
    run_phase unstack
    ;;
clean)
    run_phase clean
    # What clean.sh does after the plugins.
    sudo find $SYSTEMD_DIR -type f -name '*devstack@*service' -delete
    $SYSTEMCTL daemon-reload
    ;;
*)
    echo "usage: $0 stack|unstack|clean" >&2
    exit 2
    ;;
esac
