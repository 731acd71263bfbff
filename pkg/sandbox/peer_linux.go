package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fromBoxInit checks that the process at the other end of c (which connected to it) is the first process of a
// box: PID 2 in a PID namespace one level below this process's. The kernel names the peer: SO_PEERPIDFD where
// it has it (Linux 6.5), whose fdinfo names that very process even if it has ended since, or else SO_PEERCRED's
// PID, read at once (the peer is still sending).
func fromBoxInit(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	pidfd, credErr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if n, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
			pidfd = n
		}
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("peer credentials: %w", credErr)
	}
	var peer []string
	if pidfd >= 0 {
		defer unix.Close(pidfd)
		peer, err = nsPIDs("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	} else {
		peer, err = nsPIDs("/proc/" + strconv.Itoa(int(cred.Pid)) + "/status")
	}
	if err != nil {
		return err
	}
	own, err := nsPIDs("/proc/self/status")
	if err != nil {
		return err
	}
	if len(peer) != len(own)+1 || peer[len(peer)-1] != "2" {
		return fmt.Errorf("the peer is PID %s in PID namespaces %v (a box's first process is 2, one below this one's)",
			peer[0], strings.Join(peer, " "))
	}
	return nil
}

// nsPIDs is the NSpid line of a status or pidfd fdinfo file: the process's PID in each PID namespace it is in,
// the outermost first.
func nsPIDs(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "NSpid:"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				return fields, nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s names no process (NSpid): it has ended", file)
}
