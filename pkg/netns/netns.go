// Package netns runs a process in namespaces of its own whose only network is loopback: it reaches a server
// started inside on 127.0.0.1 and nothing else, and every process it leaves behind ends with it (own PID
// namespace). The real-CLI tests and `ace agents check` run the agent CLIs this way, since they phone home.
package netns

import (
	"context"
	"fmt"
	"os/exec"
)

// Command is exe with args under `unshare -rn --pid --fork --kill-child --mount-proc`: a new user namespace
// (root inside, so it works unprivileged where the kernel allows user namespaces), network namespace (loopback
// only, down until LoopbackUp) and PID namespace (killed with the child). The child calls LoopbackUp first.
func Command(ctx context.Context, exe string, args ...string) (*exec.Cmd, error) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, fmt.Errorf("unshare (util-linux) is not installed: %w", err)
	}
	return exec.CommandContext(ctx, unshare, append([]string{"-rn", "--pid", "--fork", "--kill-child", "--mount-proc", exe}, args...)...), nil
}

// Available reports whether Command works here: nil, or why not (no unshare, user namespaces disabled).
func Available(ctx context.Context) error {
	cmd, err := Command(ctx, "true")
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("unshare -rn: %w: %s", err, out)
	}
	return nil
}
