package headless

import "testing"

// TestRedactorReplacesNestedSecretsWhole: of two secrets where one starts the other, the longer is replaced
// whole, whatever order they come in (map order is random).
func TestRedactorReplacesNestedSecretsWhole(t *testing.T) {
	for range 20 {
		r := redactor(map[string]string{"A": "abcd", "B": "abcdefgh", "C": "xyz"})
		if got := r.Redact("key abcdefgh, short abcd, tiny xyz"); got != "key [redacted], short [redacted], tiny xyz" {
			t.Fatalf("redacted %q", got)
		}
	}
}
