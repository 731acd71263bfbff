package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp side of the file recorder: a BPF filter that hands the path-taking system calls of the agent to a
// supervisor (SECCOMP_RET_USER_NOTIF), and the ioctls the supervisor answers them with. x/sys has the constants
// but not the notification's structs, which are declared here as the kernel's uapi has them
// (include/uapi/linux/seccomp.h); their sizes are in the ioctl numbers, so a kernel with other sizes refuses the
// call rather than filling them wrongly.

// seccompData is struct seccomp_data: what the filter and the supervisor see of a system call.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// seccompNotif is struct seccomp_notif. Pid is the calling thread's ID in the supervisor's PID namespace.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// seccompIoctlNotifIDValid is SECCOMP_IOCTL_NOTIF_ID_VALID, _IOW('!', 2, __u64), which x/sys lacks.
const seccompIoctlNotifIDValid = 0x40082102

// Offsets of struct seccomp_data's fields, for the filter's loads.
const (
	offNr   = 0
	offArch = 4
)

// x32SyscallBit marks an x32 system call on amd64 (same numbers as x86-64 for the calls recorded, with this bit).
const x32SyscallBit = 0x40000000

// errNoRecorder is what installFilter returns where this kernel or architecture cannot record.
var errNoRecorder = errors.New("seccomp user notification unavailable")

// filter is the BPF program: for each ABI the process may call the kernel with (abis), the listed system calls go
// to the supervisor, io_uring_setup fails with ENOSYS (io_uring opens files without a system call of its own, out
// of the supervisor's sight; programs fall back to plain calls, as they do under Docker's default profile), and
// everything else is allowed. A call of an ABI not listed is allowed unseen.
func filter(abis []abi) []unix.SockFilter {
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	retAllow := stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW)
	retNotify := stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_USER_NOTIF)
	retNoSys := stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))
	var prog []unix.SockFilter
	for _, a := range abis {
		// One block per ABI: [arch check] [load nr] [mask x32] [one jeq per call] allow notify nosys.
		var body []unix.SockFilter
		body = append(body, stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr))
		if a.x32 {
			body = append(body, stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, ^uint32(x32SyscallBit)))
		}
		n := len(a.calls)
		for i, c := range a.calls {
			// Jump over the other jeqs after it, the io_uring one and "allow", to "notify".
			body = append(body, jeq(uint32(c.nr), uint8(n-i+1), 0))
		}
		body = append(body, jeq(uint32(a.ioUringSetup), 2, 0), retAllow, retNotify, retNoSys)
		// The arch check skips this ABI's block when it is another's.
		prog = append(prog, stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArch), jeq(a.arch, 0, uint8(len(body))))
		prog = append(prog, body...)
	}
	return append(prog, retAllow)
}

// installFilter puts the recorder's filter on the calling thread (which must be locked to its goroutine, and
// never serve another: startRecorded) and returns the listener the supervisor receives its notifications on.
func installFilter() (int, error) {
	abis := nativeABIs()
	if len(abis) == 0 {
		return -1, fmt.Errorf("%w: no system call table for this architecture", errNoRecorder)
	}
	for _, a := range abis {
		if len(a.calls) > 200 {
			return -1, errors.New("sandbox: too many recorded system calls for the filter's jumps")
		}
	}
	prog := filter(abis)
	if len(prog) > 4096 {
		return -1, errors.New("sandbox: the recorder's filter is too long")
	}
	// bwrap has set no_new_privs on the box already; it is per thread, and seccomp requires it of this one.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("%w: no_new_privs: %w", errNoRecorder, err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER,
		uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, fmt.Errorf("%w: seccomp(SET_MODE_FILTER, NEW_LISTENER): %w", errNoRecorder, errno)
	}
	return int(fd), nil
}

// notifRecv waits for the next notification on the listener.
func notifRecv(fd int, n *seccompNotif) error {
	*n = seccompNotif{} // the kernel refuses a buffer that is not zeroed
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n))
}

// notifContinue lets the notified call go on as if no filter had stopped it: the box's mounts decide its fate.
func notifContinue(fd int, id uint64) error {
	resp := seccompNotifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

// notifValid reports whether the notification id still waits: its thread has not died or been interrupted, so
// that what was read from its memory and /proc entries was the caller's.
func notifValid(fd int, id uint64) bool {
	return ioctlPtr(fd, seccompIoctlNotifIDValid, unsafe.Pointer(&id)) == nil
}

func ioctlPtr(fd int, req uint, p unsafe.Pointer) error {
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return errno
	}
}
