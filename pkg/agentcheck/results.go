package agentcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aceworks/ace/pkg/atomicfile"
)

// resultsDir holds the last result per agent and version under ace's root (ace serve and ace doctor show them).
func resultsDir(root string) string { return filepath.Join(root, "agents-check") }

// Save keeps res as the last check of its agent's version under root.
func Save(root string, res Result) error {
	if res.Agent == "" {
		return errors.New("agentcheck: a result without an agent")
	}
	version := res.Version
	if version == "" {
		version = "unknown"
	}
	if err := os.MkdirAll(resultsDir(root), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	name := strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(res.Agent + "@" + version)
	return atomicfile.Write(filepath.Join(resultsDir(root), name+".json"), b, 0o600)
}

// Last returns the last check of each agent and version kept under root, by agent then version; none is no
// error.
func Last(root string) ([]Result, error) {
	entries, err := os.ReadDir(resultsDir(root))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(resultsDir(root), e.Name()))
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Name(), err)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}
