# Sourced by the comparison scripts: a long comparison lands in pieces. only_entries DEFAULT... sets
# the array `entries` to one `-m` option per entry: those ONLY names (space-separated) when it is
# set, else the script's DEFAULT entries, in order.
only_entries() {
    entries=()
    local entry
    if [ -n "${ONLY:-}" ]; then
        for entry in $ONLY; do entries+=(-m "$entry"); done
    else
        for entry in "$@"; do entries+=(-m "$entry"); done
    fi
}
