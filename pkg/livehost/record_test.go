package livehost

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/secrets"
)

const threeRecords = `{"seq":1,"time":"2026-01-02T03:04:05Z","kind":"session","session_id":"s1"}
{"seq":2,"time":"2026-01-02T03:04:06Z","kind":"user","text":"hi","from":"ace"}

{"seq":3,"time":"2026-01-02T03:04:07Z","kind":"text","text":"hello"}
`

func TestReadTranscript(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	torn := write("torn.jsonl", threeRecords+`{"seq":4,"time":"2026-01-02T03:04:08Z","kind":"te`)
	for _, tc := range []struct {
		name  string
		path  string
		after int64
		seqs  string
	}{
		{"all", write("whole.jsonl", threeRecords), 0, "1 2 3"},
		{"after", torn, 1, "2 3"},
		{"after the last", torn, 3, ""},
		{"torn last line left out", torn, 0, "1 2 3"},
		{"missing file", filepath.Join(dir, "none.jsonl"), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := ReadTranscript(tc.path, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			if got := seqs(recs); got != tc.seqs {
				t.Errorf("seqs %q, want %q", got, tc.seqs)
			}
		})
	}
	if recs, _ := ReadTranscript(torn, 1); recs[0].Text != "hi" || recs[0].From != FromAce {
		t.Errorf("record 2 = %+v", recs[0])
	}
	broken := write("broken.jsonl", "{\"seq\":1}\nnot json\n{\"seq\":3}\n")
	if _, err := ReadTranscript(broken, 0); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a broken line inside the file: err %v, want one naming line 2", err)
	}
}

// A restarted host continues the numbering after the last whole record, and cuts off the torn line its
// predecessor left, so that its first record is a line of its own.
func TestJournalContinues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "t.jsonl")
	j, err := openJournal(path, io.Discard, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	j.add(Record{Kind: KindText, Text: "one"})
	j.close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"seq":2,"kind":"te`)
	f.Close()

	redact := secrets.NewMaskingRedactor("[redacted]")
	redact.Add("s3cr3t-value")
	j, err = openJournal(path, io.Discard, false, redact)
	if err != nil {
		t.Fatal(err)
	}
	if r := j.add(Record{Kind: KindText, Text: "two with s3cr3t-value"}); r.Seq != 2 {
		t.Errorf("seq after a restart %d, want 2", r.Seq)
	}
	j.add(Record{Kind: KindToolResult, Text: strings.Repeat("é", MaxToolOutput)})
	j.close()
	recs, err := ReadTranscript(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := seqs(recs); got != "1 2 3" {
		t.Fatalf("seqs %q, want 1 2 3", got)
	}
	if recs[1].Text != "two with [redacted]" {
		t.Errorf("a secret reached the transcript: %q", recs[1].Text)
	}
	if out := recs[2].Text; len(out) > MaxToolOutput+40 || !strings.HasSuffix(out, "bytes more)") {
		t.Errorf("a long tool output kept %d bytes: …%s", len(out), out[len(out)-30:])
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("transcript mode %v, %v; want 0600", fi.Mode(), err)
	}
}

func seqs(recs []Record) string {
	var s []string
	for _, r := range recs {
		s = append(s, strconv.FormatInt(r.Seq, 10))
	}
	return strings.Join(s, " ")
}
