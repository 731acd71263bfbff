package runbox

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// The file attempts a run's boxes keep its agent from (package sandbox records them: a hidden path read or
// written, a write outside the box's own paths, another process's /proc entry), reported to the report socket
// beside the run's proxy. Each path is recorded as an event once, up to maxFileEvents per proxy; every attempt is
// counted into the run's BoxState at its next step, which the status comment and ace show read.

const (
	// maxFileEvents bounds the paths recorded as events per proxy: a CLI probing paths, or an agent walking a
	// tree, must not fill the store. Every attempt is still counted.
	maxFileEvents = 50
	// maxBlockedAt bounds the paths a run's state names.
	maxBlockedAt = 10
	// maxShownPath bounds a path as an event or the status comment shows it: it is the agent's text.
	maxShownPath = 160
)

// fileRecords is what a run's proxy knows of its boxes' file attempts since the run's state last took them in.
type fileRecords struct {
	mu         sync.Mutex
	recorded   map[string]bool // kind and path already recorded as an event
	events     int
	newBlocked int      // attempts since the last sync
	newPaths   []string // their paths, each once
	unrecorded string   // the latest reason some attempts go unrecorded
}

// newFileRecords starts from what the run's state has: the paths it names were recorded already.
func newFileRecords(box *store.BoxState) *fileRecords {
	f := &fileRecords{recorded: map[string]bool{}}
	for _, p := range box.BlockedAt {
		f.recorded[p] = true
	}
	return f
}

// fileReport records what a box of run id reports: each new path as an event (up to maxFileEvents, with a last
// one saying that further paths are only counted), why attempts go unrecorded once per reason.
func (sb *Boxes) fileReport(p *runProxy, id int64) func(sandbox.Report) {
	return func(rep sandbox.Report) {
		f := p.files
		events := sb.connAttempts(p, rep.Attempts) // conns.go: the connections that cannot succeed in the box
		f.mu.Lock()
		for _, a := range rep.Attempts {
			if a.Kind.Network() {
				continue
			}
			f.newBlocked += a.Count
			path := shownPath(a.Path)
			if !slices.Contains(f.newPaths, path) {
				f.newPaths = append(f.newPaths, path)
			}
			if f.recorded[path] {
				continue
			}
			f.recorded[path] = true
			f.events++
			switch {
			case f.events < maxFileEvents:
				events = append(events, fileEvent(a, path, ""))
			case f.events == maxFileEvents:
				events = append(events, fileEvent(a, path, "; further paths are counted, not recorded"))
			}
		}
		f.newBlocked += rep.More
		if rep.Unrecorded != "" && rep.Unrecorded != f.unrecorded {
			f.unrecorded = rep.Unrecorded
			events = append(events, store.Event{Kind: EventBoxFile,
				Message: "file attempts in the box are not all recorded: " + Printable(rep.Unrecorded, 400) +
					" (the box still keeps the agent from them)"})
		}
		f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, ev := range events {
			if err := sb.o.Store.AppendEvent(ctx, id, ev); err != nil {
				sb.o.Logger.Warn("record a file attempt of the box", "run", id, "err", err)
			}
		}
	}
}

// fileData is a box-file event's Data: the attempt as JSON, for the API and the dashboard.
type fileData struct {
	Kind  sandbox.AttemptKind `json:"kind"`
	Op    string              `json:"op"`
	Path  string              `json:"path"`
	Write bool                `json:"write,omitzero"`
	Count int                 `json:"n"`
}

func fileEvent(a sandbox.Attempt, path, more string) store.Event {
	data, _ := json.Marshal(fileData{Kind: a.Kind, Op: a.Op, Path: a.Path, Write: a.Write, Count: a.Count})
	verb := "reading"
	if a.Write {
		verb = "writing"
	}
	var msg string
	switch a.Kind {
	case sandbox.AttemptHidden:
		msg = fmt.Sprintf("kept the agent from %s %s (%s): the box hides it (ace's root, your home, the secrets file)", verb, path, a.Op)
	case sandbox.AttemptWrite:
		msg = fmt.Sprintf("kept the agent from writing %s (%s): outside its working copy, its home and /tmp", path, a.Op)
	case sandbox.AttemptProc:
		msg = fmt.Sprintf("kept the agent from %s (%s): a process outside the box", path, a.Op)
	default:
		msg = fmt.Sprintf("kept the agent from %s (%s, %s)", path, a.Op, Printable(string(a.Kind), 20))
	}
	if a.Count > 1 {
		msg += fmt.Sprintf(", %d times", a.Count)
	}
	return store.Event{Kind: EventBoxFile, Message: msg + more, Data: string(data)}
}

// sync adds the file attempts since the last sync to the run's BoxState.
func (f *fileRecords) sync(box *store.BoxState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	box.Blocked += f.newBlocked
	for _, p := range f.newPaths {
		if !slices.Contains(box.BlockedAt, p) && len(box.BlockedAt) < maxBlockedAt {
			box.BlockedAt = append(box.BlockedAt, p)
		}
	}
	if f.unrecorded != "" {
		box.FilesUnrecorded = Printable(f.unrecorded, 400)
	}
	f.newBlocked, f.newPaths = 0, nil
}

// ReportSocket is where a run's boxes report their file attempts: beside the proxy's socket, in the directory
// they see.
func ReportSocket(proxy string) string {
	return filepath.Join(filepath.Dir(proxy), sandbox.ReportSocketName)
}

// shownPath is a path from the box as ace shows it: the agent chose it, so it is cut short and rid of what a
// terminal or Markdown would act on.
func shownPath(p string) string { return Printable(p, maxShownPath) }

// Printable is s with control characters as '?', cut to n runes (with an ellipsis).
func Printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '?'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
