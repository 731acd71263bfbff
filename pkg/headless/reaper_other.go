//go:build !linux

package headless

// becomeSubreaper is Linux-only; elsewhere what leaves the agent's process group is not followed.
func becomeSubreaper() error { return nil }
