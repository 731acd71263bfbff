package tmuxops

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// execve replaces the process with argv; it returns only on failure.
func execve(argv, env []string) int {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "ace: cannot start the agent: %v\n", err)
		return 127
	}
	err = syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "ace: exec %s: %v\n", path, err)
	return 126
}
