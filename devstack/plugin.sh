#!/bin/bash
# devstack plugin for scheduler-split.
#
# Enable it in local.conf:
#     enable_plugin scheduler-split <git url of scheduler-split> main
#
# It installs the package; the services are not configured or started by
# this plugin yet.

SCHEDULER_SPLIT_DIR=${SCHEDULER_SPLIT_DIR:-$DEST/scheduler-split}

if [[ "$1" == "stack" && "$2" == "install" ]]; then
    echo_summary "Installing scheduler-split"
    setup_develop "$SCHEDULER_SPLIT_DIR"
fi
