package workflow

import "time"

// clock is the engine's time (Options.Now) as a part holds it: the parts that read time are given this, not the
// engine, so that a test's clock reaches all of them alike.
type clock func() time.Time

// since is how long ago t was; a time never recorded (zero) counts as "long ago" (as Engine.since).
func (c clock) since(t time.Time) time.Duration {
	if t.IsZero() {
		return 1<<63 - 1
	}
	return c().Sub(t)
}
