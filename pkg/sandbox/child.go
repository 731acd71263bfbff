package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/aceworks/ace/pkg/egress"
)

// ChildArg is the hidden first argument of ace's process inside a box.
const ChildArg = "__box"

// forwarded are the signals BoxMain passes on to the command's process group.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// BoxMain is the body of `ace __box [--proxy-socket S --proxy-listen ADDR [--forward PORT]… [--report-socket R
// POLICY…]] -- ARGV…`, the box's first process: it relays ADDR (the box's own loopback) to the egress proxy's
// socket S, and each forwarded PORT of its loopback to the host's 127.0.0.1:PORT through a tunnel the proxy opens
// (or refuses); then it runs ARGV as its child in a process group of its own — in the terminal's foreground when
// it has one, so that keys, ^C and resizes reach the agent and not bwrap outside — and exits with its status
// (128+N for a signal N, as a shell does). Signals sent to this process go on to the child's group. It stays the
// parent, rather than exec'ing ARGV, to keep the forwarder running and, with --report-socket, to record the
// file-system attempts the box keeps the agent from (recorder.go), reported to ace at R (report.go).
func BoxMain(args []string) int {
	// Not dumpable: the agent, the same user in the same namespaces but without capabilities, can then neither
	// ptrace this process nor read its memory or descriptors, which is what makes its reports ace's own.
	if err := setNotDumpable(); err != nil {
		fmt.Fprintf(os.Stderr, "ace box: %v\n", err)
		return 126
	}
	fs := flag.NewFlagSet(ChildArg, flag.ContinueOnError)
	sock := fs.String("proxy-socket", "", "the egress proxy's unix `socket`")
	listen := fs.String("proxy-listen", "", "loopback `address` to relay to the proxy")
	var ports []int
	fs.Func("forward", "loopback `port` to relay to the host's, through the proxy", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("bad port %q", v)
		}
		ports = append(ports, n)
		return nil
	})
	reports := fs.String("report-socket", "", "record the file-system attempts the box keeps the agent from and report them to this unix `socket`")
	probe := fs.Bool("probe-recorder", false, "run the command recorded and say whether recording works (ace doctor)")
	var dials []string
	fs.Func("probe-dial", "connect to `host:port` as the agent would, say what came of it, and run no command (ace doctor)", func(v string) error {
		dials = append(dials, v)
		return nil
	})
	var pol policy
	fs.Func("hide", "a hidden `path` (recorder)", func(v string) error { pol.hide = append(pol.hide, v); return nil })
	fs.Func("rw", "a writable `path` (recorder)", func(v string) error { pol.rw = append(pol.rw, v); return nil })
	fs.Func("ro", "a read-only `path` below a hidden one (recorder)", func(v string) error { pol.ro = append(pol.ro, v); return nil })
	fs.Func("lookup", "a `path` the CLI reads in each parent of its working copy (recorder)", func(v string) error {
		pol.lookups = append(pol.lookups, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: ace "+ChildArg+" [--proxy-socket S --proxy-listen ADDR] -- COMMAND [ARGS…]")
		return 2
	}
	if *sock != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ace box: proxy forwarder: %v\n", err)
			return 126
		}
		// It lives as long as this process, which is as long as the box: nothing to shut down.
		go forward(ln, *sock, "")
		for _, p := range ports {
			if err := forwardPort(p, *sock); err != nil {
				fmt.Fprintf(os.Stderr, "ace box: forward port %d: %v\n", p, err)
				return 126
			}
		}
	}
	if len(dials) > 0 {
		if *sock == "" {
			fmt.Fprintln(os.Stderr, "ace box: --probe-dial needs --proxy-socket")
			return 2
		}
		return probeDial(dials, *listen, *sock)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	rec := newRecording(*reports, *probe, pol)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err == nil {
		// stdin is this session's controlling terminal: hand its foreground to the command.
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, 0
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	if err := rec.start(cmd); err != nil {
		fmt.Fprintf(os.Stderr, "ace box: cannot start %s: %v (is its directory among the box's read-only paths?)\n", argv[0], err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	go func() {
		for s := range sigs {
			syscall.Kill(-cmd.Process.Pid, s.(syscall.Signal))
		}
	}()
	code := rec.wait(cmd)
	signal.Stop(sigs)
	return rec.end(code)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return 126
		}
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// forwardPort listens on the box's 127.0.0.1:port (and [::1]:port where the box has IPv6 on its loopback: a
// client may resolve localhost to either) and tunnels each connection to the host's 127.0.0.1:port.
func forwardPort(port int, sock string) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go forward(ln, sock, addr)
	if ln6, err := net.Listen("tcp", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
		go forward(ln6, sock, addr)
	}
	return nil
}

// forward relays each connection to ln to the proxy's unix socket: as it is (the client speaks to the proxy),
// or, with tunnel set, through a CONNECT to that address. Errors are not printed: stderr is the agent's
// screen, and the proxy on the host records what reached it.
func forward(ln net.Listener, sock, tunnel string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("unix", sock)
			if err != nil {
				return
			}
			defer u.Close()
			if tunnel != "" && egress.Tunnel(u, tunnel) != nil {
				return // refused (recorded by the proxy) or the proxy is gone: the client sees its connection end
			}
			egress.Relay(c, u)
		}()
	}
}
