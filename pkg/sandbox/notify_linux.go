package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// notifyWorkers is how many calls the notifier takes at once: the agent's threads (node's file-system pool)
// need not wait on one another's.
const notifyWorkers = 2

// notifier answers the recorder's filter. Every notified call goes on as if unfiltered
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the box's mounts enforce, the notifier only looks, so that a caller changing
// its path after the look (TOCTOU) changes nothing but the record. It reads the path from the caller's memory,
// makes it absolute against the caller's current directory or directory fd (this process is in the same mount
// namespace: the paths are the box's), and hands what the policy records to the recorder.
type notifier struct {
	fd     int
	policy policy
	rec    *recorder
	abis   map[uint32]abiCalls
}

// abiCalls are one ABI's recorded calls by number.
type abiCalls struct {
	x32   bool
	calls map[int32]*syscallInfo
}

func newNotifier(fd int, p policy, rec *recorder) *notifier {
	n := &notifier{fd: fd, policy: p, rec: rec, abis: map[uint32]abiCalls{}}
	for _, a := range nativeABIs() {
		m := abiCalls{x32: a.x32, calls: map[int32]*syscallInfo{}}
		for i := range a.calls {
			m.calls[int32(a.calls[i].nr)] = &a.calls[i]
		}
		n.abis[a.arch] = m
	}
	return n
}

// serve answers notifications until the listener has no process left under it, or fails.
func (n *notifier) serve() {
	var wg sync.WaitGroup
	for range notifyWorkers {
		wg.Go(func() {
			var req seccompNotif
			for {
				err := notifRecv(n.fd, &req)
				switch {
				case err == nil:
					n.handle(&req)
				case errors.Is(err, unix.ENOENT):
					// The caller went away between its notification and this read, or no process is left.
					if hungUp(n.fd) {
						return
					}
				default:
					return
				}
			}
		})
	}
	wg.Wait()
}

func hungUp(fd int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if _, err := unix.Poll(pfd, 0); err != nil {
		return false
	}
	return pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
}

// seen is one path of a notified call, as read while the call waited: write, and create when all the write
// would do is make the path (see pathArg), and opened when, the path being there, the call opens it to read;
// existed when it was there before the call went on; for a path of /proc/N, procPID is N and procThere whether
// N was a process of the box's then (a process that reads its own entries and ends would be gone after).
type seen struct {
	raw, base                              string
	write, create, opened, follow, existed bool
	procPID                                int
	procThere                              bool
}

// handle reads what the call names while it waits, lets it go on, then classifies and records.
func (n *notifier) handle(req *seccompNotif) {
	n.rec.saw()
	var got []seen
	sc := n.call(req)
	if sc != nil && sc.connect {
		n.connect(req) // connect_linux.go
		return
	}
	if sc != nil {
		got = n.read(req, sc)
	}
	// Valid still: the caller has been waiting all along, so what was read is its own (not a reused PID's).
	valid := len(got) > 0 && notifValid(n.fd, req.ID)
	notifContinue(n.fd, req.ID)
	if !valid {
		return
	}
	tid := int(req.Pid)
	for _, s := range got {
		path := n.boxPath(tid, s.base, s.raw, s.follow)
		there := func(pid int) bool { return pid == s.procPID && s.procThere || pid != s.procPID && boxHad(pid) }
		kind, ok := n.policy.classify(path, s.write, there)
		if ok && s.create && s.existed {
			// Where the path is there a call that only makes it changes nothing (EEXIST, as CLIs making each
			// directory of a path get), and an open that would make it reads it.
			if !s.opened {
				continue
			}
			s.write = false
			kind, ok = n.policy.classify(path, false, there)
		}
		if ok {
			n.rec.add(Attempt{Kind: kind, Op: sc.name, Write: s.write, Path: path})
		}
	}
}

// exists reports whether path is there in the box (this process's view).
func exists(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil
}

// call is the recorded call a notification is of, nil for any other (a filter of another ace's, say).
func (n *notifier) call(req *seccompNotif) *syscallInfo {
	a, ok := n.abis[req.Data.Arch]
	if !ok {
		return nil
	}
	nr := req.Data.Nr
	if a.x32 {
		nr &^= x32SyscallBit
	}
	return a.calls[nr]
}

// read takes the call's paths and flags from the caller, and the directory each relative path starts from.
func (n *notifier) read(req *seccompNotif, sc *syscallInfo) []seen {
	tid, args := int(req.Pid), req.Data.Args
	openWrite, openCreate, opened, follow := false, false, false, true
	// All the bits: open(2) ignores those it does not know, which must not make a write look like a read here.
	var flags uint64
	known := false
	switch {
	case sc.flags >= 0:
		flags, known = uint64(uint32(args[sc.flags])), true
	case sc.how >= 0:
		var b [8]byte
		if err := readMem(tid, args[sc.how], b[:]); err == nil {
			flags, known = binary.NativeEndian.Uint64(b[:]), true
		}
	}
	if known {
		excl := flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL
		readOnly := flags&unix.O_ACCMODE == unix.O_RDONLY && flags&unix.O_TRUNC == 0
		openWrite = !readOnly || flags&unix.O_CREAT != 0
		openCreate = excl || readOnly && flags&unix.O_CREAT != 0
		opened = readOnly && !excl
		follow = flags&unix.O_NOFOLLOW == 0 && !excl
	}
	var out []seen
	for _, a := range sc.paths {
		raw, err := readPath(tid, args[a.path])
		if errors.Is(err, unix.EPERM) && notifValid(n.fd, req.ID) {
			n.rec.note(unreadable(tid))
		}
		if err != nil || raw == "" {
			continue
		}
		s := seen{raw: raw, write: a.write || openWrite, create: a.create || openCreate, opened: opened, follow: a.follow && follow}
		if !filepath.IsAbs(raw) {
			dir := "/proc/" + strconv.Itoa(tid) + "/cwd"
			if fd := int32(args[max(a.dirfd, 0)]); a.dirfd >= 0 && fd != unix.AT_FDCWD {
				dir = "/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(int(fd))
			}
			if s.base, err = os.Readlink(dir); err != nil || !filepath.IsAbs(s.base) {
				continue // a directory fd that is not one, or already closed: the call fails anyway
			}
		}
		// What must be known before the call goes on, by the path as written (a stat each where it matters; the
		// caller waits): whether a path the call may make was there already (in the box's own /tmp the call
		// makes it), and whether a process whose /proc entry it names is.
		lexical := filepath.Clean(selfProc(joinBase(s.base, raw), tid))
		if s.create && n.recorded(lexical) {
			s.existed = exists(lexical)
		}
		if pid, _, ok := cutProcPID(lexical); ok {
			s.procPID, s.procThere = pid, boxHad(pid)
		}
		out = append(out, s)
	}
	return out
}

// unreadable says which process the recorder could not read: a process that makes itself non-dumpable (as
// ssh-agent does) hides its calls' paths.
func unreadable(tid int) string {
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/comm")
	return fmt.Sprintf("process %d (%s) in the box made itself unreadable (not dumpable): its file attempts are not recorded",
		tid, strings.TrimSpace(string(comm)))
}

// boxPath is where a call's path leads in the box: joined to its base directory, /proc/self made the caller's,
// and, where the agent could have planted a symbolic link (below a writable path) or /proc leads elsewhere
// (/proc/N/root, /proc/N/cwd), its links resolved by the kernel.
func (n *notifier) boxPath(tid int, base, raw string, follow bool) string {
	p := selfProc(joinBase(base, raw), tid)
	clean := filepath.Clean(p)
	linkable := within(clean, "/proc")
	for _, d := range n.policy.rw {
		linkable = linkable || within(clean, d)
	}
	if !linkable {
		return clean
	}
	return realPath(p, follow)
}

// joinBase is raw made absolute with base, the directory a relative path starts from.
func joinBase(base, raw string) string {
	if filepath.IsAbs(raw) {
		return raw
	}
	return base + "/" + raw
}

// selfProc is p with /proc/self and /proc/thread-self made the calling thread's: ace __box's own are not.
func selfProc(p string, tid int) string {
	for _, self := range []string{"/proc/self", "/proc/thread-self"} {
		if rest, ok := strings.CutPrefix(p, self); ok && (rest == "" || rest[0] == '/') {
			return "/proc/" + strconv.Itoa(tid) + rest
		}
	}
	return p
}

// recorded reports whether a write at path would be recorded.
func (n *notifier) recorded(path string) bool {
	_, ok := n.policy.classify(path, true, boxHad)
	return ok
}

// realPath is p with its links resolved by the kernel as far as it exists (the rest joined on): a file the box
// hides is absent, but the path to it shows where it was. The last component is left as it is unless follow.
func realPath(p string, follow bool) string {
	rest := ""
	if i := strings.LastIndexByte(p, '/'); !follow && i >= 0 {
		if last := p[i+1:]; last != "" && last != "." && last != ".." {
			p, rest = p[:i], last
			if p == "" {
				p = "/"
			}
		}
	}
	for {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err == nil {
			target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
			unix.Close(fd)
			if err != nil || !filepath.IsAbs(target) {
				return filepath.Join(p, rest) // a pipe or socket behind /proc/N/fd: no path of the box's
			}
			return filepath.Join(target, rest)
		}
		clean := filepath.Clean(p)
		if clean == "/" {
			return filepath.Join(clean, rest)
		}
		rest = filepath.Join(filepath.Base(clean), rest)
		p = filepath.Dir(clean)
	}
}

// boxHad reports whether pid is, or was, a process of the box's PID namespace (this process's): one it has now,
// or one it gave out and that has ended since — a CLI reading the /proc entry of a child that just exited reads
// nothing of another's. PIDs are given out in rising order in a namespace (ns_last_pid is the last one), so a PID
// above it was never the box's: a host process's, which the box's /proc does not show.
func boxHad(pid int) bool {
	if unix.Access("/proc/"+strconv.Itoa(pid), unix.F_OK) == nil {
		return true
	}
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		return false
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && pid > 0 && pid <= last
}

// readPath reads a NUL-terminated path of at most PATH_MAX bytes at addr in process tid.
func readPath(tid int, addr uint64) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := readMemPartial(tid, addr, buf)
	if n <= 0 {
		if err == nil {
			err = unix.EFAULT
		}
		return "", err
	}
	if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
		return string(buf[:i]), nil
	}
	return "", unix.ENAMETOOLONG
}

// readMem fills buf from addr in process tid, or fails.
func readMem(tid int, addr uint64, buf []byte) error {
	n, err := readMemPartial(tid, addr, buf)
	if err == nil && n < len(buf) {
		err = unix.EFAULT
	}
	return err
}

// readMemPartial reads as much of buf as is mapped from addr on. The remote range is split at page boundaries:
// process_vm_readv never splits one, so a path that ends just before an unmapped page would not read at all.
func readMemPartial(tid int, addr uint64, buf []byte) (int, error) {
	page := uint64(os.Getpagesize())
	var remote []unix.RemoteIovec
	for off := uint64(0); off < uint64(len(buf)); {
		a := addr + off
		l := min(page-a%page, uint64(len(buf))-off)
		remote = append(remote, unix.RemoteIovec{Base: uintptr(a), Len: int(l)})
		off += l
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	return unix.ProcessVMReadv(tid, local, remote, 0)
}
