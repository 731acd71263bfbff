package tmuxops

import (
	"os/exec"
	"syscall"
)

// tieToParent has the kernel SIGKILL cmd's process when the thread that started it ends (PR_SET_PDEATHSIG): with
// startTied, when this process dies, however it dies.
func tieToParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
