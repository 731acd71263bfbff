package testkit

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LiveAgents finds the fake agent processes of each host, from the process table, by their issue ("issue/pid"):
// an agent is a process running the fake agent (demo-agent) in a tmux pane, and the pane's TMUX variable names its
// server's socket, which bySocket maps to its host. A child the agent forks shows the agent's command line until
// it execs (git, sh): it is not another agent, so a process whose parent runs the fake agent is left out. The
// tests and benchmarks of a fleet count live agents with it, not with ace's own records.
func LiveAgents(bySocket map[string]string) map[string][]string {
	type proc struct {
		ppid        string
		host, issue string
	}
	agents := map[string]proc{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte("\x00demo-agent\x00")) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		p := proc{}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
				p.ppid = f[1] // after the state
			}
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := strings.CutPrefix(string(kv), "TMUX="); ok {
				sock, _, _ := strings.Cut(v, ",")
				p.host = bySocket[filepath.Base(sock)]
			}
			if v, ok := strings.CutPrefix(string(kv), "ACE_ISSUE="); ok {
				p.issue = v
			}
		}
		if p.host != "" {
			agents[d.Name()] = p
		}
	}
	live := map[string][]string{}
	for pid, p := range agents {
		if _, child := agents[p.ppid]; !child {
			live[p.host] = append(live[p.host], p.issue+"/"+pid)
		}
	}
	return live
}
