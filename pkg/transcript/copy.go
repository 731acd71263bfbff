package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// followEvery is how often a followed transcript is read for what was added.
const followEvery = 300 * time.Millisecond

// Copy writes the whole transcript to w as text (`ace logs`): a terminal log without escape sequences, an event
// stream rendered with its totals at the end, or with asJSON its typed events as JSON lines. With follow it goes
// on writing what is added until ctx ends (Ctrl-C is not an error).
func (t Transcript) Copy(ctx context.Context, w io.Writer, follow, asJSON bool) error {
	f, err := os.Open(t.Path)
	if err != nil {
		return fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	sink, err := t.sink(w, asJSON)
	if err != nil {
		return err
	}
	if _, err := io.Copy(sink, f); err != nil {
		return err
	}
	if follow {
		tick := time.NewTicker(followEvery)
		defer tick.Stop()
	loop:
		for {
			select {
			case <-ctx.Done():
				if !errors.Is(ctx.Err(), context.Canceled) {
					return ctx.Err()
				}
				break loop
			case <-tick.C:
				if _, err := io.Copy(sink, f); err != nil {
					return err
				}
				sink.flush()
			}
		}
	}
	return sink.close()
}

// sink turns the transcript's bytes into what `ace logs` prints.
type sink interface {
	io.Writer
	flush()       // what is held back now (a followed terminal log's last, unfinished line)
	close() error // the end: anything held back, and a stream's totals
}

func (t Transcript) sink(w io.Writer, asJSON bool) (sink, error) {
	if !t.Headless() {
		if asJSON {
			return nil, errors.New("a terminal log has no typed events (--json is for headless runs)")
		}
		return &ansiStripper{w: w}, nil
	}
	s, err := agents.Parsers().NewStream(t.Format)
	if err != nil {
		return nil, err
	}
	return &eventWriter{w: w, s: s, asJSON: asJSON, enc: json.NewEncoder(w)}, nil
}

// ansiStripper writes a raw terminal log as text: escape sequences removed, carriage returns turned into line
// ends. It holds back an incomplete trailing line so that a sequence split across reads is still removed.
type ansiStripper struct {
	w       io.Writer
	pending []byte
}

func (a *ansiStripper) Write(p []byte) (int, error) {
	a.pending = append(a.pending, p...)
	i := bytes.LastIndexByte(a.pending, '\n')
	if i < 0 {
		return len(p), nil
	}
	if err := a.emit(a.pending[:i+1]); err != nil {
		return 0, err
	}
	a.pending = append([]byte(nil), a.pending[i+1:]...)
	return len(p), nil
}

func (a *ansiStripper) flush() {
	if len(a.pending) > 0 {
		_ = a.emit(a.pending)
		a.pending = nil
	}
}

func (a *ansiStripper) close() error {
	a.flush()
	return nil
}

func (a *ansiStripper) emit(b []byte) error {
	s := tmuxops.StripANSI(string(b))
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s)
	_, err := io.WriteString(a.w, s)
	return err
}

// eventWriter parses an event stream as it comes and writes each event rendered, or as a JSON line.
type eventWriter struct {
	w      io.Writer
	s      *headless.Stream
	asJSON bool
	enc    *json.Encoder
}

func (e *eventWriter) Write(p []byte) (int, error) {
	if err := e.emit(e.s.Feed(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (e *eventWriter) flush() {}

func (e *eventWriter) close() error {
	if err := e.emit(e.s.Close()); err != nil {
		return err
	}
	if e.asJSON {
		return nil
	}
	return headless.RenderTotals(e.w, &e.s.T)
}

func (e *eventWriter) emit(evs []headless.Event) error {
	for _, ev := range evs {
		var err error
		if e.asJSON {
			err = e.enc.Encode(ev)
		} else {
			err = headless.Render(e.w, ev)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
