package headless

// What the supervisor writes: the transcript, redacted output, the capped debug log and the stderr tail.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aceworks/ace/pkg/secrets"
)

var safeID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// openTranscript opens <dir>/<session id>.jsonl for appending and writes the lines read before it was known.
func (s *supervisor) openTranscript(sid string) error {
	if !safeID.MatchString(sid) || sid[0] == '.' {
		return fmt.Errorf("session id %q is not usable as a file name", sid)
	}
	path := filepath.Join(s.spec.TranscriptDir, sid+".jsonl")
	return s.openFile(path)
}

func (s *supervisor) openFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.transcript = f
	s.capped = capped(f, transcriptCap)
	s.status.Transcript = path
	for _, b := range s.pending {
		s.write(b)
	}
	s.pending = nil
	return nil
}

func (s *supervisor) write(b []byte) {
	if _, err := s.capped.Write(append(b, '\n')); err != nil {
		fmt.Fprintf(s.log, "ace __headless: transcript: %v\n", err)
	}
}

// readSecrets reads and deletes the secrets file ("" = no secrets).
func readSecrets(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	os.Remove(path)
	if err != nil {
		return nil, fmt.Errorf("read the secrets file: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("secrets file: %w", err)
	}
	return m, nil
}

// redactor replaces secret values in agent output, longest first so that a secret containing another is
// replaced whole. Values shorter than 4 bytes are left alone: replacing "1" everywhere would destroy the
// transcript and protect nothing.
func redactor(values map[string]string) *secrets.Redactor {
	r := secrets.NewMaskingRedactor("[redacted]")
	for _, v := range values {
		r.Add(v)
	}
	return r
}

// debugCap and transcriptCap bound a run's debug log and a conversation's transcript, which every turn appends
// to: an agent that prints forever must not fill the disk (the same bound as a tmux transcript).
const (
	debugCap      = 64 << 20
	transcriptCap = 64 << 20
)

// capped wraps a file opened for appending so that it stops growing at limit bytes, counting what earlier turns
// wrote.
func capped(f *os.File, limit int64) io.Writer {
	var size int64
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return &limitWriter{w: f, left: limit - size}
}

type limitWriter struct {
	w    io.Writer
	left int64
}

// Write drops what does not fit and reports success: a full debug log must not fail the turn.
func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return len(p), nil
	}
	q := p
	if int64(len(q)) > l.left {
		q = q[:l.left]
	}
	n, err := l.w.Write(q)
	l.left -= int64(n)
	if err != nil {
		return n, err
	}
	return len(p), nil
}

// tail keeps the last tailSize bytes written to it, for the stderr excerpt of a failed turn.
type tail struct{ b []byte }

const tailSize = 2 << 10

func (t *tail) add(p []byte) {
	t.b = append(t.b, p...)
	t.b = append(t.b, '\n')
	if len(t.b) > tailSize {
		t.b = append([]byte(nil), t.b[len(t.b)-tailSize:]...)
	}
}

func (t *tail) String() string { return strings.ToValidUTF8(string(t.b), "") }
