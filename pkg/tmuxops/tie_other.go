//go:build !linux

package tmuxops

import "os/exec"

// tieToParent: only Linux signals a child when its parent dies; elsewhere the next ace reaps what a dead one
// left (reapOrphanClients).
func tieToParent(*exec.Cmd) {}
