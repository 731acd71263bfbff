package headless

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRedactorReplacesNestedSecretsWhole: of two secrets where one starts the other, the longer is replaced
// whole, whatever order they come in (map order is random).
func TestRedactorReplacesNestedSecretsWhole(t *testing.T) {
	t.Parallel()
	for range 20 {
		r := redactor(map[string]string{"A": "abcd", "B": "abcdefgh", "C": "xyz"})
		if got := r.Redact("key abcdefgh, short abcd, tiny xyz"); got != "key [redacted], short [redacted], tiny xyz" {
			t.Fatalf("redacted %q", got)
		}
	}
}

// TestRefusedSpecTakesItsSecretsFileAlong: a spec the supervisor refuses (from another version of ace, say)
// does not leave the secrets file it names behind.
func TestRefusedSpecTakesItsSecretsFileAlong(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretsFile := filepath.Join(dir, "env-1")
	if err := os.WriteFile(secretsFile, []byte(`{"KEY":"value"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(spec, []byte(`{"secrets_file":"`+secretsFile+`","format":"nope"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readSpec(spec, Parsers{"json": typeParser}); err == nil {
		t.Fatal("a spec without argv was accepted")
	}
	for _, f := range []string{spec, secretsFile} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", filepath.Base(f), err)
		}
	}
}

// TestCappedCountsWhatEarlierTurnsWrote: a transcript that earlier turns filled up to the cap takes no more.
func TestCappedCountsWhatEarlierTurnsWrote(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w := capped(f, 15)
	for range 3 {
		if n, err := w.Write([]byte("abcdefgh")); err != nil || n != 8 {
			t.Fatalf("write: %d %v (a full file must not fail the turn)", n, err)
		}
	}
	f.Close()
	if b, _ := os.ReadFile(path); string(b) != "0123456789abcde" {
		t.Fatalf("file %q, want it stopped at 15 bytes", b)
	}
}
