package workflow

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/livehost"
	"github.com/aceworks/ace/pkg/store"
)

// TestLivePromptNotSentTwice: ace saves its intent before it sends the prompt to the live host; killed after the
// send and before it recorded the delivery, the next ace finds the prompt in the host's transcript and moves on
// to monitoring without sending it again (no host is running here: a send would fail). A message of ace's from
// before the intent (an earlier host's, say) is not taken for the prompt.
func TestLivePromptNotSentTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := withParts(&Engine{o: Options{Root: t.TempDir(), Store: st, Now: time.Now}, log: slog.New(slog.DiscardHandler)})
	intent := time.Now()
	r := &store.Run{Repo: "acme/widgets", Issue: 193, Runner: store.RunnerLive, Step: string(StepDeliver), Status: store.StatusActive}
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.State.LivePromptAt = intent

	_, _, _, transcript, err := e.live.liveFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	write := func(recs ...livehost.Record) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(transcript), 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(transcript, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, rec := range recs {
			b, _ := json.Marshal(rec)
			if _, err := f.Write(append(b, '\n')); err != nil {
				t.Fatal(err)
			}
		}
	}

	write(livehost.Record{Seq: 1, Time: intent.Add(-time.Minute), Kind: livehost.KindUser, From: livehost.FromAce, Text: "an earlier host's"},
		livehost.Record{Seq: 2, Time: intent.Add(time.Millisecond), Kind: livehost.KindUser, From: livehost.FromTerminal, Text: "typed"})
	if _, ok, err := e.live.readTranscript(ctx, r); ok || err != nil || r.State.PromptDelivered {
		t.Fatalf("a message of ace's from before the intent, or a human's, was taken for the prompt (ok %v, err %v)", ok, err)
	}

	write(livehost.Record{Seq: 3, Time: intent.Add(2 * time.Millisecond), Kind: livehost.KindUser, From: livehost.FromAce, Text: "the prompt"})
	res, err := e.live.Deliver(ctx, r)
	if err != nil {
		t.Fatalf("deliver: %v", err)
	}
	if res.Next != StepMonitor || !r.State.PromptDelivered || !r.State.LivePromptAt.IsZero() {
		t.Errorf("after the restart: next %q, delivered %v, intent %v; want monitoring, delivered, the intent cleared",
			res.Next, r.State.PromptDelivered, r.State.LivePromptAt)
	}
	evs, err := st.Events(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[len(evs)-1].Message != "the conversation had the prompt before ace restarted" {
		t.Errorf("events %+v: want the delivery found in the transcript", evs)
	}
}
