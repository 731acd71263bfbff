package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The checks' directories: a check boxes `true` in a temporary directory of its own, removed when the check is
// over. A process killed meanwhile (an ace host ended by SIGKILL while it starts) cannot remove its directory, so
// each directory is named after the process that made it, and a check removes those of this user's processes
// that are gone.

const checkPrefix = "ace-box-check-"

// checkDir makes a check's directory, after removing those that processes now gone left.
func checkDir() (string, error) {
	removeDeadCheckDirs(os.TempDir())
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", checkPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return dir, nil
}

// removeDeadCheckDirs removes the check directories under tmp of this user's processes that are gone. One of a
// process still there is its own to remove, even mid-check; a pid used again keeps a directory until that
// process is gone too.
func removeDeadCheckDirs(tmp string) {
	found, _ := filepath.Glob(filepath.Join(tmp, checkPrefix+"*-*"))
	for _, dir := range found {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(dir), checkPrefix), "-", 2)[0])
		if err != nil || pid <= 0 || !ownDir(dir) || !gone(pid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// ownDir: dir is a directory of this user's (another's is not this process's to remove).
func ownDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// gone: no process has pid (one of another user's answers EPERM: it is there).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
