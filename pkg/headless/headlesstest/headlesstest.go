// Package headlesstest checks an agent's headless stream parser against recorded streams: what every parser
// must do, so that each agent's folder holds only its own recordings and what it expects of them.
package headlesstest

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/headless"
)

// Fixture is a recorded stream (File, a JSONL file) and what its parse must show.
type Fixture struct {
	File            string
	Session, Model  string
	Assistant, User []string
	Tool, ToolInput string
	ToolOutput      string
	ToolErr         bool
	Errors          []string
	// Retries are the CLI's retries of its model's API: "attempt/max error".
	Retries            []string
	Status, ResultText string
	ResultErr          bool
	Usage              headless.Usage
	Raw                int
}

// Parse parses the stream in file with the parser newParser makes.
func Parse(t *testing.T, newParser func() headless.Parser, file string) *headless.Transcript {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := parsers(newParser).ParseAll("test", f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func parsers(newParser func() headless.Parser) headless.Parsers {
	return headless.Parsers{"test": newParser}
}

// first returns the first event of kind k, or a zero Event.
func first(evs []headless.Event, k headless.Kind) headless.Event {
	for _, e := range evs {
		if e.Kind == k {
			return e
		}
	}
	return headless.Event{}
}

func texts(evs []headless.Event, k headless.Kind) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e.Text)
		}
	}
	return out
}

// Check parses each fixture and checks what it shows, that a Stream fed it in pieces gives what ParseAll does,
// and that two turns of it in one transcript (ace appends every turn of a conversation to one file) add up.
func Check(t *testing.T, newParser func() headless.Parser, fixtures []Fixture) {
	t.Helper()
	for _, fx := range fixtures {
		t.Run(fx.File, func(t *testing.T) {
			tr := Parse(t, newParser, fx.File)
			checkEvents(t, tr, fx)
			checkStream(t, newParser, fx.File, tr)
			checkResumed(t, newParser, fx.File, tr)
		})
	}
}

func checkEvents(t *testing.T, tr *headless.Transcript, fx Fixture) {
	t.Helper()
	evs := tr.Events
	if tr.SessionID != fx.Session {
		t.Errorf("SessionID = %q, want %q", tr.SessionID, fx.Session)
	}
	if init := first(evs, headless.KindInit); init.Model != fx.Model || init.SessionID != fx.Session {
		t.Errorf("init = %+v", init)
	}
	if got := texts(evs, headless.KindAssistant); !reflect.DeepEqual(got, fx.Assistant) {
		t.Errorf("assistant = %q, want %q", got, fx.Assistant)
	}
	if got := texts(evs, headless.KindUser); !reflect.DeepEqual(got, fx.User) {
		t.Errorf("user = %q, want %q", got, fx.User)
	}
	if got := texts(evs, headless.KindError); !reflect.DeepEqual(got, fx.Errors) {
		t.Errorf("errors = %q, want %q", got, fx.Errors)
	}
	var retries []string
	for _, e := range evs {
		if e.Kind == headless.KindRetry {
			retries = append(retries, strings.TrimSpace(fmt.Sprintf("%d/%d %s", e.Attempt, e.MaxAttempts, e.Text)))
		}
	}
	if !reflect.DeepEqual(retries, fx.Retries) {
		t.Errorf("retries = %q, want %q", retries, fx.Retries)
	}
	call := first(evs, headless.KindToolCall)
	if call.Tool != fx.Tool || call.Input != fx.ToolInput || call.ToolID == "" {
		t.Errorf("tool call = %+v, want %s %s", call, fx.Tool, fx.ToolInput)
	}
	res := first(evs, headless.KindToolResult)
	if res.ToolID != call.ToolID || res.Output != fx.ToolOutput || res.IsError != fx.ToolErr {
		t.Errorf("tool result = %+v, want id %s output %q error %v", res, call.ToolID, fx.ToolOutput, fx.ToolErr)
	}
	r := first(evs, headless.KindResult)
	if r.Status != fx.Status || r.IsError != fx.ResultErr || r.Text != fx.ResultText {
		t.Errorf("result = %+v, want status %q error %v text %q", r, fx.Status, fx.ResultErr, fx.ResultText)
	}
	if tr.Usage != fx.Usage {
		t.Errorf("usage = %+v, want %+v", tr.Usage, fx.Usage)
	}
	if tr.Raw != fx.Raw {
		t.Errorf("Raw = %d, want %d", tr.Raw, fx.Raw)
	}
	if last := evs[len(evs)-1]; last.Kind != headless.KindResult {
		t.Errorf("last event = %+v, want the result", last)
	}
}

// checkStream feeds the file to a Stream in chunks that split lines anywhere.
func checkStream(t *testing.T, newParser func() headless.Parser, file string, whole *headless.Transcript) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := parsers(newParser).NewStream("test")
	if err != nil {
		t.Fatal(err)
	}
	var evs []headless.Event
	for i := 0; i < len(b); i += 7 {
		evs = append(evs, s.Feed(b[i:min(i+7, len(b))])...)
	}
	evs = append(evs, s.Close()...)
	if len(evs) != len(whole.Events) || s.T.Usage != whole.Usage || s.T.Raw != whole.Raw {
		t.Errorf("stream gave %d events (usage %+v), ParseAll %d (%+v)", len(evs), s.T.Usage, len(whole.Events), whole.Usage)
	}
}

// checkResumed parses the file twice over: the totals add up and the session is the first one named.
func checkResumed(t *testing.T, newParser func() headless.Parser, file string, one *headless.Transcript) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	two, err := parsers(newParser).ParseAll("test", bytes.NewReader(append(append([]byte{}, b...), b...)))
	if err != nil {
		t.Fatal(err)
	}
	want := one.Usage
	want.Usage.Add(one.Usage.Usage)
	want.Turns += one.Usage.Turns
	want.DurationMS += one.Usage.DurationMS
	if len(two.Events) != 2*len(one.Events) || two.Usage != want || two.SessionID != one.SessionID {
		t.Errorf("two turns: %d events usage %+v session %q; one turn: %d events usage %+v", len(two.Events),
			two.Usage, two.SessionID, len(one.Events), one.Usage)
	}
}
