package sandbox

import (
	"context"
	"sync"
	"time"
)

// redetectAfter is how long a failed detection stands before boxes are tried again (bubblewrap installed
// meanwhile, say); a host that works is detected once.
const redetectAfter = time.Minute

// Detector says whether boxes work here, for every part of one ace process that builds them (the agents' boxes,
// the boxes ace runs git in on a working copy): it finds out once (again a minute after a failure).
type Detector struct {
	detect func(context.Context) (*Host, error)

	mu  sync.Mutex
	h   *Host
	err error
	at  time.Time
}

// NewDetector detects bubblewrap with Detect.
func NewDetector() *Detector { return &Detector{detect: Detect} }

// Refusing is a Detector for a machine without boxes: err says why (tests of what runs unboxed).
func Refusing(err error) *Detector {
	return &Detector{detect: func(context.Context) (*Host, error) { return nil, err }}
}

// Host is bubblewrap as found here, or why boxes do not work here.
func (d *Detector) Host(ctx context.Context) (*Host, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h == nil && (d.at.IsZero() || time.Since(d.at) > redetectAfter) {
		d.h, d.err = d.detect(ctx)
		d.at = time.Now()
	}
	return d.h, d.err
}
