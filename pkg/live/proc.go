package live

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a CLI process with its stdin for writing lines and its stdout for reading them. It leads a process
// group of its own, so that ending it also ends what it started (gemini re-executes itself in a child node
// process that holds the same stdout; codex may start helpers).
type Proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File
	stderr *tail

	wmu sync.Mutex // one line at a time on stdin

	exited  chan struct{} // closed when the process has been waited for
	waitErr error
	stop    sync.Once
	grace   time.Duration // Options.Grace
}

// DefaultGrace is how long Stop waits for the process to leave after its stdin closes, and again after SIGTERM,
// unless Options.Grace says otherwise.
const DefaultGrace = 5 * time.Second

// StartProc starts opts.Argv followed by args in opts.Dir with opts.Env.
func StartProc(opts Options, args ...string) (*Proc, error) {
	if len(opts.Argv) == 0 {
		return nil, errors.New("live: no command to run")
	}
	argv := append(append([]string(nil), opts.Argv...), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("live: stdin pipe: %w", err)
	}
	// Pipes of our own rather than StdoutPipe or a Writer for stderr: Wait must return when the CLI exits,
	// not when every holder of its output has closed it (codex's node wrapper leaves its native child holding
	// both, and that child is only killed once Wait has returned), and it must not close the reading end while
	// the reader still drains what the CLI wrote before it exited.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("live: stdout pipe: %w", err)
	}
	er, ew, err := os.Pipe()
	if err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("live: stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, ew
	p := &Proc{cmd: cmd, stdin: stdin, stdout: r, stderr: &tail{max: 16 << 10}, exited: make(chan struct{}), grace: opts.Grace}
	if p.grace <= 0 {
		p.grace = DefaultGrace
	}
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{r, w, er, ew} {
			_ = f.Close()
		}
		return nil, fmt.Errorf("live: start %s: %w", argv[0], err)
	}
	_ = w.Close()
	_ = ew.Close()
	go func() {
		_, _ = io.Copy(p.stderr, er)
		_ = er.Close()
	}()
	go func() {
		p.waitErr = cmd.Wait()
		// Whatever the CLI left in its group (a helper, gemini's relaunched child) ends with it: it would hold
		// stdout open, and ace ends every process it started. Exited means the whole group is gone.
		pgid := cmd.Process.Pid
		for deadline := time.Now().Add(p.grace); GroupAlive(pgid) && time.Now().Before(deadline); {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			time.Sleep(20 * time.Millisecond)
		}
		close(p.exited)
	}()
	return p, nil
}

// PID is the process's ID (and its process group's).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Stdout is what the process writes; it reaches EOF once the process and its group are gone.
func (p *Proc) Stdout() io.Reader { return p.stdout }

// WriteLine writes b and a newline to stdin, whole.
func (p *Proc) WriteLine(b []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("live: write to the CLI: %w", err)
	}
	return nil
}

// Wait waits for the process to exit and returns how it ended (nil for status 0).
func (p *Proc) Wait() error {
	<-p.exited
	return p.waitErr
}

// Exited is closed when the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Stderr is the end of what the process wrote to stderr.
func (p *Proc) Stderr() string { return p.stderr.String() }

// StderrTail is the last n lines of what the process wrote to stderr, on one line: for an error message.
func (p *Proc) StderrTail(n int) string {
	lines := strings.Split(strings.TrimSpace(p.Stderr()), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// Stop ends the process: stdin closed (each CLI ends its conversation and exits on EOF), then SIGTERM and
// SIGKILL to its process group, Options.Grace apart. It returns how the process ended.
func (p *Proc) Stop() error {
	p.stop.Do(func() {
		p.wmu.Lock()
		_ = p.stdin.Close()
		p.wmu.Unlock()
		for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
			if sig != 0 {
				_ = syscall.Kill(-p.PID(), sig)
			}
			select {
			case <-p.exited:
				return
			case <-time.After(p.grace):
			}
		}
	})
	err := p.Wait()
	_ = p.stdout.Close()
	return err
}

// GroupAlive reports whether a process of group pgid still runs (zombies waiting for a parent to reap them
// do not count). It reads /proc; where there is none it asks the kernel, zombies included.
func GroupAlive(pgid int) bool {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		// Fields after the command name, which may hold spaces and parentheses: state, ppid, pgrp, …
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(fields[2]); err == nil && g == pgid {
			return true
		}
	}
	return false
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
