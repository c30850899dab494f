#!/bin/bash
# devstack plugin for scheduler-split.
#
# Enable it in local.conf:
#     enable_plugin scheduler-split <git url of scheduler-split> main
#
# The settings are in devstack/settings, the functions in
# devstack/lib/scheduler-split.

# Save trace setting
_XTRACE_SCHEDULER_SPLIT_PLUGIN=$(set +o | grep xtrace)
set -o xtrace

source $SCHEDULER_SPLIT_DIR/devstack/lib/scheduler-split

if [[ "$1" == "stack" && "$2" == "install" ]]; then
    echo_summary "Installing scheduler-split"
    install_scheduler_split

elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
    echo_summary "Configuring scheduler-split"
    configure_scheduler_split
    if is_service_enabled keystone; then
        echo_summary "Creating scheduler-split Keystone accounts"
        create_scheduler_split_accounts
    fi

elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
    echo_summary "Initializing scheduler-split"
    init_scheduler_split
    echo_summary "Starting scheduler-split"
    start_scheduler_split

elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
    if is_service_enabled tempest; then
        echo_summary "Configuring Tempest for scheduler-split"
        configure_scheduler_split_tempest
    fi
fi

if [[ "$1" == "unstack" ]]; then
    stop_scheduler_split
fi

if [[ "$1" == "clean" ]]; then
    cleanup_scheduler_split
fi

# Restore xtrace
$_XTRACE_SCHEDULER_SPLIT_PLUGIN
