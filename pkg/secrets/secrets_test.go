package secrets_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/logging"
	"github.com/aceworks/ace/pkg/secrets"
)

func noEnv(string) (string, bool) { return "", false }

func TestSourcesInOrder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.toml")
	os.WriteFile(file, []byte("FROM_FILE = \"file-value\"\nBOTH = \"file-loses\"\n"), 0o600)
	env := map[string]string{"BOTH": "env-wins", "GITHUB_CONTROL_API_KEY": "control-key"}
	r := secrets.NewResolver(secrets.Options{File: file, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Commands: map[string]string{"FROM_CMD": `printf '%s' "cmd value"`}})
	ctx := context.Background()
	got, err := r.ResolveAll(ctx, []string{"FROM_FILE", "BOTH", "FROM_CMD"})
	if err != nil {
		t.Fatal(err)
	}
	if got["FROM_FILE"] != "file-value" || got["BOTH"] != "env-wins" || got["FROM_CMD"] != "cmd value" {
		t.Fatalf("resolved %v", got)
	}
	if _, err := r.Resolve(ctx, "NOPE"); !errors.Is(err, secrets.ErrNotFound) || !strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("missing: %v", err)
	}
}

func TestCommandRunsWithoutShell(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pwned")
	r := secrets.NewResolver(secrets.Options{LookupEnv: noEnv, Commands: map[string]string{"X": "echo a; touch " + marker}})
	v, err := r.Resolve(context.Background(), "X")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command went through a shell")
	}
	if v != "a; touch "+marker {
		t.Fatalf("value %q", v)
	}
}

func TestReadableSecretsFileIsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secrets.toml")
	os.WriteFile(file, []byte("A = \"b\"\n"), 0o644)
	r := secrets.NewResolver(secrets.Options{File: file, LookupEnv: noEnv})
	_, err := r.Resolve(context.Background(), "A")
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("err = %v, want a refusal with the fix", err)
	}
}

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

func TestLogsNeverCarryResolvedSecrets(t *testing.T) {
	const secret = "tok_very_secret_4242"
	for _, format := range []string{"text", "json"} {
		red := secrets.NewRedactor()
		r := secrets.NewResolver(secrets.Options{Redactor: red, LookupEnv: func(string) (string, bool) { return secret, true }})
		if _, err := r.Resolve(context.Background(), "TOKEN"); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		log := logging.New(&buf, format, slog.LevelDebug, red).With("pre", "with "+secret)
		log.Info("message "+secret, "attr", secret, slog.Group("g", slog.String("inner", "x"+secret)),
			"err", fmt.Errorf("wrapped: %w", errors.New("auth "+secret)), "str", stringer{secret}, "bytes", []byte(secret))
		out := buf.String()
		if strings.Contains(out, secret) {
			t.Errorf("%s log leaks the secret:\n%s", format, out)
		}
		if strings.Count(out, "***") < 6 {
			t.Errorf("%s log: expected the secret replaced by *** everywhere:\n%s", format, out)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	got, err := secrets.SplitCommand(`pass show "github/my token" 'a b' c\ d $(x)`)
	want := []string{"pass", "show", "github/my token", "a b", "c d", "$(x)"}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q %v", got, err)
	}
	if _, err := secrets.SplitCommand(`unterminated "quote`); err == nil {
		t.Fatal("an unterminated quote was accepted")
	}
}
