package sandbox

import (
	"encoding/binary"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The connections a box's agent makes that cannot succeed there, which the recorder sees as connect(2) calls:
// the box's network namespace has its own loopback and nothing else, and its one way out is ace's proxy. A
// connection to a loopback port where nothing listens in the box (this machine's port of that number, a gateway
// say, is not forwarded), to any other address (the program ignored the proxy), or a name lookup of its own (the
// box has no resolver; the proxy resolves names) fails at once in the box, and the agent's CLI retries it for
// minutes: recorded, it tells the user which port to forward or which program to point at the proxy. The call
// goes on unchanged, as the recorder's calls all do. A connection to port 0 is no connection: it is how a
// resolver learns which source address a destination would get (glibc sorting getaddrinfo's answers).

// connect reads the address a connect call goes to, and what it is, while the call waits; lets it go on; and
// records it when it cannot succeed.
func (n *notifier) connect(req *seccompNotif) {
	tid, args := int(req.Pid), req.Data.Args
	kind, dest, ok := n.connection(tid, int(int32(args[0])), args[1], int(args[2]))
	var comm []byte
	if ok {
		// Read while the call waits: once it goes on, the program may end before its name is read (a short
		// dialer did on a loaded machine, and its connection was recorded as made by nobody).
		comm, _ = os.ReadFile("/proc/" + strconv.Itoa(tgid(tid)) + "/comm")
	}
	valid := ok && notifValid(n.fd, req.ID)
	notifContinue(n.fd, req.ID)
	if valid {
		n.rec.add(Attempt{Kind: kind, Op: "connect", Path: dest, Prog: strings.TrimSpace(string(comm))})
	}
}

// connection classifies a connect of socket fd in thread tid to the sockaddr at addr (of length size): the kind
// of attempt it is, and its destination; ok false for one that may succeed, or that is no network's (a unix
// socket).
func (n *notifier) connection(tid, fd int, addr uint64, size int) (AttemptKind, string, bool) {
	if size < 8 || size > 128 {
		return "", "", false
	}
	b := make([]byte, size)
	if readMem(tid, addr, b) != nil {
		return "", "", false
	}
	var ip net.IP
	switch family := binary.NativeEndian.Uint16(b); {
	case family == unix.AF_INET && size >= 8:
		ip = net.IP(b[4:8])
	case family == unix.AF_INET6 && size >= 24:
		ip = net.IP(b[8:24])
	default:
		return "", "", false
	}
	port := int(binary.BigEndian.Uint16(b[2:4]))
	if port == 0 {
		return "", "", false
	}
	dest := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	typ, known := socketType(tid, fd)
	udp := known && typ == unix.SOCK_DGRAM
	switch {
	case known && typ != unix.SOCK_STREAM && typ != unix.SOCK_DGRAM:
		return "", "", false // raw, packet: nothing a CLI's client makes
	case udp && port == 53:
		return AttemptDNS, dest, true
	case !ip.IsLoopback():
		return AttemptDirect, dest, true
	case !udp && !listening(port):
		return AttemptLoopback, dest, true
	}
	return "", "", false
}

// socketType is the type of socket fd of thread tid (SOCK_STREAM, SOCK_DGRAM), got from a copy of it
// (pidfd_getfd: the access process_vm_readv needs too); known false where the kernel cannot (before 5.6). A
// socket not yet bound is in no table of /proc/net, so its type is asked of the socket itself.
func socketType(tid, fd int) (typ int, known bool) {
	pfd, err := unix.PidfdOpen(tgid(tid), 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(pfd)
	sfd, err := unix.PidfdGetfd(pfd, fd, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(sfd)
	typ, err = unix.GetsockoptInt(sfd, unix.SOL_SOCKET, unix.SO_TYPE)
	return typ, err == nil
}

// tgid is the process a thread belongs to (its fd table's): pidfd_open takes a process.
func tgid(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return tid
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return tid
}
