//go:build !linux

package netns

import "errors"

// LoopbackUp needs Linux network namespaces.
func LoopbackUp() error { return errors.New("network namespaces need Linux") }
