package livehost

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/secrets"
)

// MaxToolOutput bounds a tool result's text in the transcript: a file read or a build log is the agent's, and
// the model has it whole; the transcript keeps what a human or a handover needs to follow along.
const MaxToolOutput = 8 << 10

// journal appends records to the transcript and shows each in the pane, in one order: the seq a record gets is
// the order a human saw it in.
type journal struct {
	mu     sync.Mutex
	f      *os.File
	seq    int64
	out    io.Writer // the pane
	color  bool
	redact *secrets.Redactor
	now    func() time.Time
}

// openJournal opens the transcript at path for appending (its directory made 0700, the file 0600) and continues
// its numbering. A torn last line, left by a host killed mid-write, is cut off, so that the next record starts
// a line of its own.
func openJournal(path string, out io.Writer, color bool, redact *secrets.Redactor) (*journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("live transcript: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("live transcript: %w", err)
	}
	b, err := io.ReadAll(f)
	if err == nil {
		if end := bytes.LastIndexByte(b, '\n') + 1; end < len(b) {
			err = f.Truncate(int64(end))
		}
	}
	var last int64
	if err == nil {
		var recs []Record
		recs, err = ReadTranscript(path, 0)
		if n := len(recs); n > 0 {
			last = recs[n-1].Seq
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("live transcript: %w", err)
	}
	return &journal{f: f, seq: last, out: out, color: color, redact: redact, now: time.Now}, nil
}

// add numbers r, writes it as one line (a single write: a reader never sees half of it unless the host dies in
// it), shows it in the pane and returns it as written.
func (j *journal) add(r Record) Record {
	r.Text = j.redact.Redact(r.Text)
	r.Input = j.redact.Redact(r.Input)
	if r.Kind == KindToolResult && len(r.Text) > MaxToolOutput {
		kept := sanitize.Cut(r.Text, MaxToolOutput)
		r.Text = fmt.Sprintf("%s… (%d bytes more)", kept, len(r.Text)-len(kept))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	r.Seq, r.Time = j.seq, j.now().UTC()
	b, err := json.Marshal(r)
	if err == nil {
		_, err = j.f.Write(append(b, '\n'))
	}
	if err != nil {
		// The pane still shows it; the runner sees the gap in Status.LastSeq against the file.
		fmt.Fprintf(j.out, "ace: transcript: %v\n", err)
	}
	_ = Render(j.out, r, j.color)
	return r
}

// say shows text in the pane without recording it: how to answer, what was not understood.
func (j *journal) say(text string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	fmt.Fprintln(j.out, paint(j.color, dim, text))
}

// last is the seq of the last record.
func (j *journal) last() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seq
}

func (j *journal) close() error { return j.f.Close() }
