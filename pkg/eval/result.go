package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aceworks/ace/pkg/atomicfile"
)

// WriteResult writes item r.N's result into the eval directory dir whole or not at all: a result that exists is a
// scored item.
func WriteResult(dir string, r RunResult) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	p := resultPath(dir, r.N)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p, append(b, '\n'), 0o644)
}

// ReadResult reads item n's result; os.ErrNotExist when it has none yet.
func ReadResult(dir string, n int) (RunResult, error) {
	var r RunResult
	b, err := os.ReadFile(resultPath(dir, n))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", resultPath(dir, n), err)
	}
	if r.N != n {
		return r, fmt.Errorf("%s: the result of item %d", resultPath(dir, n), r.N)
	}
	return r, nil
}

// ReadResults reads every result of the eval directory dir, in the items' order.
func ReadResults(dir string) ([]RunResult, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "results"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ns []int
	for _, e := range ents {
		if n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json")); err == nil && strings.HasSuffix(e.Name(), ".json") {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	out := make([]RunResult, 0, len(ns))
	for _, n := range ns {
		r, err := ReadResult(dir, n)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
