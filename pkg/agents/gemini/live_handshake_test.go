package gemini_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agents/gemini"
	"github.com/aceworks/ace/pkg/live"
)

// A program that is not the CLI in its protocol mode fails StartLive with ErrHandshake, whether it exits at once or
// never answers, and is ended.
func TestStartWithoutTheProtocol(t *testing.T) {
	old := live.Grace
	live.Grace = 100 * time.Millisecond
	t.Cleanup(func() { live.Grace = old })
	for name, argv := range map[string][]string{
		"exits":  {"sh", "-c", "echo 'error: unknown option' >&2; exit 2", "sh"},
		"silent": {"sh", "-c", "exec sleep 30", "sh"}, // the adapter's flags become its arguments
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := gemini.StartLive(ctx, live.Options{Argv: argv, Env: os.Environ(), Dir: t.TempDir()})
			if !errors.Is(err, live.ErrHandshake) {
				t.Fatalf("Start = %v, want ErrHandshake", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Start took %s to give up", took)
			}
		})
	}
}
