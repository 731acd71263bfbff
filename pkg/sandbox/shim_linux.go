package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// The exec shim: ace __box starts the agent through `SelfPath __box exec PATH ARGV…`, which puts the recorder's
// filter on itself, hands the filter's listener to ace __box, and becomes the agent. The filter stays across exec
// and with every process the agent starts; ace __box itself stays unfiltered, to answer.

// shimFD is the shim's end of its socket pair with ace __box: the first of exec.Cmd.ExtraFiles.
const shimFD = 3

// execMain is the shim's body (args: PATH ARGV…). Where the filter cannot be installed it says why on the
// socket instead, and the agent runs unrecorded.
func execMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ace "+ChildArg+" "+execArg+" PATH ARGV…")
		return 2
	}
	path, argv := args[0], args[1:]
	// The filter is the thread's, and exec keeps the calling thread's: both happen on this one.
	runtime.LockOSThread()
	if listener, err := installFilter(); err != nil {
		// The agent runs unrecorded; ace __box says why (or, not even told, that the shim said nothing).
		_ = unix.Sendmsg(shimFD, []byte(err.Error()), nil, nil, 0)
	} else {
		err := unix.Sendmsg(shimFD, []byte{0}, unix.UnixRights(listener), nil, 0)
		unix.Close(listener) // the agent must not hold it: it could take its own notifications
		if err != nil {
			// Nobody answers the filter now: every call it stops would fail. Better not to start at all.
			fmt.Fprintf(os.Stderr, "ace box: hand the recorder its listener: %v\n", err)
			return 126
		}
	}
	unix.Close(shimFD)
	err := unix.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "ace box: cannot start %s: %v\n", argv[0], err)
	if errors.Is(err, unix.ENOENT) {
		return 127
	}
	return 126
}

// recordedCommand is path run as argv through the exec shim (ace's executable self: SelfPath in a box), with
// ace __box's end of their socket pair.
func recordedCommand(self, path string, argv []string) (*exec.Cmd, *os.File, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("the recorder's socket pair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "recorder"), os.NewFile(uintptr(pair[1]), "recorder-shim")
	cmd := exec.Command(self)
	cmd.Args = append([]string{self, ChildArg, execArg, path}, argv...)
	cmd.ExtraFiles = []*os.File{theirs}
	return cmd, ours, nil
}

// startNotifier takes the listener the started shim sends on ours and serves it in the background; where none
// comes, the recorder notes why. theirs (the shim's end) is closed here, so that a shim gone before it sent
// anything reads as the end of the socket.
func startNotifier(ours, theirs *os.File, p policy, rec *recorder) {
	theirs.Close()
	defer ours.Close()
	buf, oob := make([]byte, 512), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(ours.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		rec.note(fmt.Sprintf("the box's exec shim ended before it set the recorder up (%v)", err))
		return
	}
	if oobn > 0 {
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
			if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
				go newNotifier(fds[0], p, rec).serve()
				return
			}
		}
		rec.note("the box's exec shim sent no usable listener")
		return
	}
	rec.note(string(buf[:n])) // why the shim could not install the filter
}
