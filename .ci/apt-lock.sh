# Waiting for the system package manager: a new machine often runs its own apt (unattended
# upgrades, cloud-init) just as CI starts, and apt-get fails at once on a lock another process
# holds. Sourced by .ci/run, whose apt_install calls wait_for_apt before each apt-get; runnable
# alone too (`bash .ci/apt-lock.sh`: exit 0 once free, 1 past the wait), which is how the tests
# drive it.
#
# HOST_CI_APT_LOCKS: the lock files, separated by spaces (default: dpkg's and apt's own);
# HOST_CI_APT_LOCK_WAIT: the most seconds to wait (default 300).

APT_LOCKS="${HOST_CI_APT_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}"
APT_LOCK_WAIT="${HOST_CI_APT_LOCK_WAIT:-300}"

# apt_lock_holder: prints "PID (NAME) holds LOCK" for a process holding one of the locks open,
# and fails when none does. NOTE: dpkg and apt lock with fcntl, which flock(1) cannot see (and a
# test's flock, fcntl cannot), so a holder is found as a process with the lock file open: only
# the package manager opens these files, and only to lock them.
apt_lock_holder() {
    local lock found pid
    for lock in $APT_LOCKS; do
        [ -e "$lock" ] || continue
        found="$(find /proc/[0-9]*/fd -maxdepth 1 -lname "$lock" 2>/dev/null | head -n 1)"
        if [ -n "$found" ]; then
            pid="${found#/proc/}"
            pid="${pid%%/*}"
            echo "$pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo '?')) holds $lock"
            return 0
        fi
    done
    return 1
}

# wait_for_apt: returns once no process holds the package manager's locks; says what it waits
# for, and fails after APT_LOCK_WAIT seconds with the holder named.
wait_for_apt() {
    local held waited=0
    while held="$(apt_lock_holder)"; do
        if [ "$waited" -ge "$APT_LOCK_WAIT" ]; then
            echo ".ci/run: the package manager is still busy after ${APT_LOCK_WAIT}s: $held" >&2
            return 1
        fi
        if [ "$waited" -eq 0 ]; then
            echo ".ci/run: waiting for the package manager (up to ${APT_LOCK_WAIT}s): $held" >&2
        fi
        sleep 1
        waited=$((waited + 1))
    done
    if [ "$waited" -gt 0 ]; then
        echo ".ci/run: the package manager is free after ${waited}s" >&2
    fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    wait_for_apt
fi
