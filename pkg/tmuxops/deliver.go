package tmuxops

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DeliverOptions tune prompt delivery.
type DeliverOptions struct {
	// Ready says the agent's composer takes input. Nil: ready at once.
	Ready func(screen string) bool
	// Submitted says the prompt was taken, comparing the screen before Enter with the one after. Nil: the
	// screen changed.
	Submitted     func(before, after string) bool
	ReadyTimeout  time.Duration
	EnterCount    int
	EnterDelay    time.Duration
	SubmitRetries int
	Poll          time.Duration
	// Shown says the pasted text is on screen (in the composer). Set, Enter is pressed only once it is: an agent
	// that drops the paste (claude 2.1 busy finishing its start-up) would otherwise take each Enter as a newline
	// in an empty composer. Not shown within PasteTimeout: a PasteNotShownError, and no Enter was pressed.
	Shown        func(screen string) bool
	PasteTimeout time.Duration
	// Pasted says the text is in the composer already (a paste the agent showed late): only submit it.
	Pasted bool
	// OnDialog answers first-run dialogs seen while waiting for Ready: the keys to send, or false.
	OnDialog func(screen string) (keys []string, ok bool)
}

// NotReadyError is returned when the agent never became ready; it carries the last screen.
type NotReadyError struct {
	Waited time.Duration
	Screen string
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("the agent was not ready for input after %s", e.Waited)
}

// ErrNotSubmitted is returned when every Enter left the prompt unsubmitted.
var ErrNotSubmitted = errors.New("the prompt was pasted but never submitted")

// ErrPasteNotShown is returned (as a PasteNotShownError) when the agent never showed the pasted text.
var ErrPasteNotShown = errors.New("the agent did not show the pasted prompt")

// PasteNotShownError carries the screen after the paste.
type PasteNotShownError struct {
	Session, Screen string
}

func (e *PasteNotShownError) Error() string { return e.Session + ": " + ErrPasteNotShown.Error() }

func (e *PasteNotShownError) Unwrap() error { return ErrPasteNotShown }

// Deliver waits for the agent to be ready, pastes text, presses Enter up to EnterCount times (no more once the
// prompt was taken) and verifies the prompt was submitted, pressing Enter again up to SubmitRetries times.
func (c *Client) Deliver(ctx context.Context, name, text string, o DeliverOptions) error {
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	if o.EnterCount <= 0 {
		o.EnterCount = 1
	}
	if o.Submitted == nil {
		o.Submitted = func(before, after string) bool { return before != after }
	}
	if !o.Pasted {
		if err := c.waitReady(ctx, name, o); err != nil {
			return err
		}
		if err := c.Paste(ctx, name, text); err != nil {
			return err
		}
		if err := sleep(ctx, max(o.EnterDelay, 50*time.Millisecond)); err != nil {
			return err
		}
	}
	before, err := c.awaitShown(ctx, name, o)
	if err != nil {
		return err
	}
	for i := 0; i < o.EnterCount; i++ {
		if i > 0 {
			if err := sleep(ctx, o.EnterDelay); err != nil {
				return err
			}
			// A prompt already taken gets no second Enter: with a fast model, the agent's first question menu
			// or permission dialog is up by now, and an Enter picks its preselected option.
			if after, err := c.Capture(ctx, name, 0); err != nil {
				return err
			} else if o.Submitted(before, after) {
				return nil
			}
		}
		if err := c.SendKeys(ctx, name, "Enter"); err != nil {
			return err
		}
	}
	for try := 0; ; try++ {
		deadline := time.Now().Add(max(2*time.Second, 4*o.EnterDelay))
		for time.Now().Before(deadline) {
			if err := sleep(ctx, o.Poll); err != nil {
				return err
			}
			after, err := c.Capture(ctx, name, 0)
			if err != nil {
				return err
			}
			if o.Submitted(before, after) {
				return nil
			}
		}
		if try >= o.SubmitRetries {
			return fmt.Errorf("%s: %w", name, ErrNotSubmitted)
		}
		if err := c.SendKeys(ctx, name, "Enter"); err != nil {
			return err
		}
	}
}

// awaitShown returns the screen once it shows the paste (at once when o.Shown is nil).
func (c *Client) awaitShown(ctx context.Context, name string, o DeliverOptions) (string, error) {
	timeout := o.PasteTimeout
	if timeout <= 0 {
		timeout = max(2*time.Second, 4*o.EnterDelay)
	}
	deadline := time.Now().Add(timeout)
	for {
		screen, err := c.Capture(ctx, name, 0)
		if err != nil || o.Shown == nil || o.Shown(screen) {
			return screen, err
		}
		if time.Now().After(deadline) {
			return "", &PasteNotShownError{Session: name, Screen: screen}
		}
		if err := sleep(ctx, o.Poll); err != nil {
			return "", err
		}
	}
}

func (c *Client) waitReady(ctx context.Context, name string, o DeliverOptions) error {
	if o.Ready == nil {
		return nil
	}
	start := time.Now()
	screen := ""
	for {
		var err error
		if screen, err = c.Capture(ctx, name, 0); err != nil {
			return err
		}
		if o.Ready(screen) {
			return nil
		}
		if o.OnDialog != nil {
			if keys, ok := o.OnDialog(screen); ok {
				if err := c.SendKeys(ctx, name, keys...); err != nil {
					return err
				}
			}
		}
		if time.Since(start) > o.ReadyTimeout {
			return &NotReadyError{Waited: o.ReadyTimeout, Screen: screen}
		}
		if err := sleep(ctx, o.Poll); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
