package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/aceworks/ace/pkg/tmuxops"
)

// LaunchArg is the hidden first argument of the host-side launcher of a boxed tmux pane.
const LaunchArg = "__box-launch"

// LaunchMain is the body of `ace __box-launch ENVFILE -- ARGV…` (ARGV a Box's Argv): it reads and deletes the
// env file (a JSON object, as tmuxops.WriteEnvFile writes it) and replaces itself with ARGV whose environment
// is exactly the file's variables. A tmux pane starts with the tmux server's environment, which is ace's own
// (its tokens among it); `ace __launch` adds to it, this replaces it, since bwrap hands its environment to
// the box. One variable of the pane's is kept when the file does not set it: TERM, which tmux sets to the
// terminal the pane emulates (a property of the pane, not of ace).
//
// SIGTERM is left ignored across the exec: bwrap forwards no signal, and dying of one it would take the whole
// box down at once (--die-with-parent), so a stop that sends SIGTERM to every process of the pane (tmuxops.Kill)
// would kill the agent before it could save its session. Ignored by bwrap, the SIGTERM reaches the agent, which
// ends on its own, and the box with it. (ace __box, a Go program, handles SIGTERM again; the agent, exec'd by
// it, starts with the default.)
func LaunchMain(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "usage: ace "+LaunchArg+" ENVFILE -- COMMAND [ARGS…]")
		return 2
	}
	vars, err := tmuxops.TakeEnvFile(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "ace: %v\n", err)
		return 127
	}
	if _, ok := vars["TERM"]; !ok && os.Getenv("TERM") != "" {
		vars["TERM"] = os.Getenv("TERM")
	}
	env := (&Box{Env: vars}).Environ()
	path, err := exec.LookPath(args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "ace: cannot start the box: %v\n", err)
		return 127
	}
	signal.Ignore(syscall.SIGTERM)
	err = syscall.Exec(path, args[2:], env)
	fmt.Fprintf(os.Stderr, "ace: exec %s: %v\n", path, err)
	return 126
}
