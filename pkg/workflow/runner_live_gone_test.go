package workflow

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aceworks/ace/pkg/livehost"
	"github.com/aceworks/ace/pkg/store"
)

// fakeStatus answers the live host's status request on socket with the pending records it holds.
type fakeStatus struct {
	mu      sync.Mutex
	pending []livehost.Record
}

func (f *fakeStatus) serve(t *testing.T, socket string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			_, _ = bufio.NewReader(c).ReadBytes('\n')
			f.mu.Lock()
			b, _ := json.Marshal(map[string]any{"status": livehost.Status{Pending: f.pending}})
			f.mu.Unlock()
			_, _ = c.Write(append(b, '\n'))
			c.Close()
		}
	}()
}

// QuestionGone: a run waiting on the conversation's permission request is told when it no longer waits there,
// and why; one waiting on anything else (.ace/QUESTION after an answered request) is not.
func TestQuestionGone(t *testing.T) {
	l := &liveRunner{root: t.TempDir()} // the live runner reads its host files under ace's root alone
	r := &store.Run{ID: 1, Repo: "acme/widgets", Issue: 193}
	_, _, socket, transcript, err := l.liveFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	perm := livehost.Record{Seq: 1, Kind: livehost.KindPermission, ID: "toolu_1", Tool: "Write", Input: `{"file_path":"a"}`}
	write := func(recs ...livehost.Record) {
		var b []byte
		for _, rec := range recs {
			line, _ := json.Marshal(rec)
			b = append(append(b, line...), '\n')
		}
		if err := os.MkdirAll(filepath.Dir(transcript), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(transcript, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name, wantWhy string) {
		t.Helper()
		why, gone, err := l.QuestionGone(t.Context(), r)
		if err != nil || gone != (wantWhy != "") || why != wantWhy {
			t.Errorf("%s: %q, %v, %v; want %q", name, why, gone, err, wantWhy)
		}
	}
	r.State.LiveAsked, r.State.Question = "toolu_1", pendingQuestion(perm)
	write(perm)
	check("no host", "")

	host := &fakeStatus{pending: []livehost.Record{perm}}
	host.serve(t, socket)
	check("pending", "")

	host.mu.Lock()
	host.pending = nil
	host.mu.Unlock()
	check("its turn ended", "the agent's turn ended without the answer to its permission request for Write")
	write(perm, livehost.Record{Seq: 2, Kind: livehost.KindWithdrawn, ID: "toolu_1"})
	check("withdrawn", "the agent withdrew its permission request for Write")
	write(perm, livehost.Record{Seq: 2, Kind: livehost.KindAnswered, ID: "toolu_1", From: livehost.FromTerminal})
	check("answered in the pane", "the agent's permission request for Write was answered in the live conversation (terminal)")

	r.State.Question = "What now? (from .ace/QUESTION)"
	check("another question", "")
}
