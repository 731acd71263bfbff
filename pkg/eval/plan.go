package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aceworks/ace/pkg/atomicfile"
)

// Item is one run of ace eval run: a task, an agent and which of its runs. Its number N is the issue number its
// run has in the eval's own store and working copies: a run of the graph is one issue's.
type Item struct {
	N          int    `json:"n"`
	InstanceID string `json:"instance_id"`
	Agent      string `json:"agent"` // as --agents names it: claude, or codex@0.171.0
	Run        int    `json:"run"`   // 1…--runs
}

// Key names the item whatever its number.
func (it Item) Key() string { return fmt.Sprintf("%s/%s/%d", it.InstanceID, it.Agent, it.Run) }

// Plan numbers an eval directory's items once and for all (plan.json): a rerun with more agents, runs or tasks
// adds items, and an item keeps its number, hence its run, its working copy and its result.
type Plan struct {
	path string // "" for a plan kept in no file (a shared book numbers its items)

	mu    sync.Mutex
	items []Item
	byKey map[string]int // key → index
	byN   map[int]int    // number → index
}

// NewPlan is an empty plan kept in no file: a shared book's (SharedBook) items are numbered by the fleet's store.
func NewPlan() *Plan { return &Plan{byKey: map[string]int{}, byN: map[int]int{}} }

// LoadPlan reads dir's plan (none yet is an empty one).
func LoadPlan(dir string) (*Plan, error) {
	p := NewPlan()
	p.path = filepath.Join(dir, "plan.json")
	b, err := os.ReadFile(p.path)
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &p.items); err != nil {
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
	for i, it := range p.items {
		if it.N != i+1 || it.InstanceID == "" || it.Agent == "" || it.Run <= 0 {
			return nil, fmt.Errorf("%s: item %d is %+v", p.path, i+1, it)
		}
		p.byKey[it.Key()], p.byN[it.N] = i, i
	}
	return p, nil
}

// Add returns the item of instance, agent and run, numbered anew when the plan has none yet.
func (p *Plan) Add(instance, agent string, run int) Item {
	p.mu.Lock()
	defer p.mu.Unlock()
	it := Item{InstanceID: instance, Agent: agent, Run: run}
	if i, ok := p.byKey[it.Key()]; ok {
		return p.items[i]
	}
	it.N = len(p.items) + 1
	p.byKey[it.Key()], p.byN[it.N] = len(p.items), len(p.items)
	p.items = append(p.items, it)
	return it
}

// put records it as numbered elsewhere (by a shared book).
func (p *Plan) put(it Item) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.byN[it.N]; ok {
		return
	}
	p.byKey[it.Key()], p.byN[it.N] = len(p.items), len(p.items)
	p.items = append(p.items, it)
}

// Item is the item numbered n.
func (p *Plan) Item(n int) (Item, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.byN[n]
	if !ok {
		return Item{}, false
	}
	return p.items[i], true
}

// Save writes the plan whole or not at all (nothing for a plan kept in no file).
func (p *Plan) Save() error {
	if p.path == "" {
		return nil
	}
	p.mu.Lock()
	b, err := json.MarshalIndent(p.items, "", "  ")
	p.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p.path, append(b, '\n'), 0o644)
}

// AgentSpec is one of --agents: an agent's name and, after @, the release of its CLI wanted ("" for the one
// installed).
type AgentSpec struct {
	Name, Version string
}

// ParseAgents reads --agents: names separated by commas, each with an optional @version.
func ParseAgents(s string) ([]AgentSpec, error) {
	var out []AgentSpec
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		name, version, _ := strings.Cut(f, "@")
		if name == "" || strings.ContainsAny(name, "/ \t") || strings.ContainsAny(version, "/ \t@") || strings.HasSuffix(f, "@") {
			return nil, fmt.Errorf("agent %q: want NAME or NAME@VERSION", f)
		}
		if seen[f] {
			return nil, fmt.Errorf("agent %q is named twice", f)
		}
		seen[f] = true
		out = append(out, AgentSpec{Name: name, Version: version})
	}
	if len(out) == 0 {
		return nil, errors.New("no agent named")
	}
	return out, nil
}

// String is the spec as --agents names it.
func (a AgentSpec) String() string {
	if a.Version == "" {
		return a.Name
	}
	return a.Name + "@" + a.Version
}
