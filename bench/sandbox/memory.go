package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/aceworks/ace/pkg/procs"
)

// live is a command that stays up: it answers input (or prints a line unasked) once started, then waits for
// its stdin to close.
type live struct {
	name  string
	argv  []string
	input string
}

// usage is a process tree's memory in KiB, and what each process took.
type usage struct {
	hwm, pss, anon int64
	parts          string
}

// memory starts l, waits for its first line, and sums over the tree below the started process each process's
// VmHWM (peak RSS), PSS and anonymous memory (what no other process shares: the true cost of one more).
func (s *setup) memory(ctx context.Context, way int, l live) (usage, error) {
	cmd, err := s.command(ctx, way, l.argv)
	if err != nil {
		return usage{}, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return usage{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return usage{}, err
	}
	if err := cmd.Start(); err != nil {
		return usage{}, err
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill() // by PID, should it not end with its stdin
		cmd.Wait()
	}()
	io.WriteString(stdin, l.input)
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		return usage{}, fmt.Errorf("%v: no answer: %w", l.argv, err)
	}
	var u usage
	var parts []string
	for _, pid := range append([]int{cmd.Process.Pid}, procs.Descendants(cmd.Process.Pid)...) {
		hwm := statusKB(pid, "VmHWM:")
		pss := rollupKB(pid, "Pss:")
		anon := rollupKB(pid, "Anonymous:")
		u.hwm += hwm
		u.pss += pss
		u.anon += anon
		parts = append(parts, fmt.Sprintf("%s %.1f/%.1f/%.1f", name(pid), mib(hwm), mib(pss), mib(anon)))
	}
	u.parts = strings.Join(parts, ", ")
	return u, nil
}

func name(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	f := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(f) > 1 && strings.HasPrefix(f[1], "__") {
		return "ace " + f[1]
	}
	if i := strings.LastIndexByte(f[0], '/'); i >= 0 {
		return f[0][i+1:]
	}
	return f[0]
}

func statusKB(pid int, key string) int64 { return fieldKB("/proc/"+strconv.Itoa(pid)+"/status", key) }
func rollupKB(pid int, key string) int64 {
	return fieldKB("/proc/"+strconv.Itoa(pid)+"/smaps_rollup", key)
}

// fieldKB reads a "Key:   123 kB" line of a /proc file.
func fieldKB(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
