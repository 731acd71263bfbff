package livehost

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
)

// readTerminal reads the lines the human types in the pane (the terminal's own line mode: echo and editing are
// the tty's) and hands each to typed, until in ends.
func (h *host) readTerminal(ctx context.Context, in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && ctx.Err() == nil {
		h.typed(ctx, strings.TrimRight(sc.Text(), "\r"))
	}
}

// typed acts on a line typed in the pane: it answers the oldest pending permission (y/n) or question (a number,
// an option's words or free text); with none pending it is a user message.
func (h *host) typed(ctx context.Context, line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	var err error
	switch r := h.oldest(); {
	case r == nil:
		err = h.send(ctx, line, FromTerminal)
	case r.rec.Kind == KindPermission:
		allow, reason, ok := yesNo(line)
		if !ok {
			h.j.say("  permission " + r.rec.ID + " waits: type y to allow it or n to deny it")
			return
		}
		err = h.allow(ctx, r.rec.ID, allow, FromTerminal, reason)
	default:
		err = h.answer(ctx, r.rec.ID, line, FromTerminal)
	}
	// A failed delivery is in the transcript already; these two are not.
	switch {
	case errors.Is(err, ErrNotPending):
		// Answered meanwhile by ace, or withdrawn: the line was meant for a request that is gone, not as a message.
		h.j.say("  no longer waits for an answer (answered meanwhile, or withdrawn); type the line again to send it as a message")
	case errors.Is(err, errNotStarted):
		h.j.say("  " + err.Error())
	}
}
