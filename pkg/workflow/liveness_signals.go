package workflow

import (
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/aceworks/ace/pkg/procs"
)

// signals is one look at what a run's agent does, as opposed to what it draws: each a measure that moves only
// while the agent works, and that no release of a CLI can change. liveness.go compares each look with the one
// before it.
type signals struct {
	At time.Time `json:"at"`
	// Up and Down are the bytes through the run's egress proxy to and from its destinations (the model's API
	// above all), connections still open included; Proxied is false where the run has no proxy (unboxed).
	Up      int64 `json:"up"`
	Down    int64 `json:"down"`
	Proxied bool  `json:"proxied"`
	// CPU is the CPU time of the agent's process tree, the commands it ran and waited for included.
	CPU time.Duration `json:"cpu_ns"`
	// Files sums the agent's session files and transcripts: their growth is the conversation going on.
	Files fileSum `json:"files"`
	// Work fingerprints the working copy (its files' names, sizes and change times), .git's index and HEAD.
	Work uint64 `json:"work"`
	// Screen fingerprints what the agent shows, its clocks and spinners left out (screenPrint); 0 without one.
	Screen uint64 `json:"screen"`
	// Drawn says the CLI draws its own screen (the tmux runner's): CPU counts as work above cpuDrawn, not cpuBusy.
	Drawn bool `json:"drawn,omitempty"`
}

// fileSum is the size and newest change of a set of files.
type fileSum struct {
	Bytes  int64     `json:"bytes"`
	Count  int       `json:"count"`
	Newest time.Time `json:"newest"`
}

func (f *fileSum) add(fi fs.FileInfo) {
	f.Bytes += fi.Size()
	f.Count++
	if fi.ModTime().After(f.Newest) {
		f.Newest = fi.ModTime()
	}
}

// cpuDrawn is what counts as the agent's process tree working where the CLI draws its own screen (tmux): more
// than this share of a core between two looks (plus procs.BusySlack), not procs.BusyShare. A CLI that only
// redraws its spinner and clock stays below it. Measured waiting on a request that never answers: claude 2.1.332
// 2.4 % of a core, gemini 0.61 11 % ("Thinking..." redrawn by its React renderer, beside a load of 19 on 2
// cores) — above procs.BusyShare, so that a gemini stalled at "Thinking..." looked at work for ever and never
// went to a human.
const cpuDrawn = 0.3

// busyShare is the share of a core above which the tree's CPU is work, for what s was read from.
func busyShare(s signals) float64 {
	if s.Drawn {
		return cpuDrawn
	}
	return procs.BusyShare
}

// The signals' names, in events and in what the human is told.
const (
	sigTraffic = "traffic"
	sigCPU     = "cpu"
	sigFiles   = "session files"
	sigWork    = "working copy"
	sigScreen  = "screen"
)

// moved names the signals of now that moved since before.
func moved(before, now signals) []string {
	var out []string
	if now.Proxied && (now.Up != before.Up || now.Down != before.Down) {
		out = append(out, sigTraffic)
	}
	if d, over := now.CPU-before.CPU, now.At.Sub(before.At); d > time.Duration(busyShare(now)*float64(over))+procs.BusySlack {
		out = append(out, sigCPU)
	}
	if now.Files != before.Files {
		out = append(out, sigFiles)
	}
	if now.Work != before.Work {
		out = append(out, sigWork)
	}
	if now.Screen != before.Screen {
		out = append(out, sigScreen)
	}
	return out
}

// flatLine says what stayed flat from first to now, for the stuck event and the human.
func flatLine(first, now signals) string {
	var parts []string
	if now.Proxied {
		parts = append(parts, fmt.Sprintf("no traffic to its model (%d B up, %d B down through its proxy in all)", now.Up, now.Down))
	} else {
		parts = append(parts, "no proxy to count its traffic (unboxed)")
	}
	parts = append(parts, fmt.Sprintf("%.1f s CPU (under %.0f %% of a core)", (now.CPU-first.CPU).Seconds(), busyShare(now)*100))
	parts = append(parts, fmt.Sprintf("its session files and transcript unchanged (%d files, %d B)", now.Files.Count, now.Files.Bytes))
	parts = append(parts, "its working copy unchanged")
	if now.Screen != 0 {
		parts = append(parts, "its screen unchanged but for clocks and spinners")
	}
	return strings.Join(parts, ", ")
}

// clockOnScreen is what changes on a screen while nothing happens: elapsed times, token counts, percentages.
var clockOnScreen = regexp.MustCompile(`\d+(?:[.,:]\d+)*\s*(?:ms|s|m|h|k|K|M|%)?`)

// screenPrint fingerprints a screen without what moves on it by itself: numbers (a turn's clock, its token
// count) and every sign that is not a letter, a space or ASCII punctuation (spinners cycle through ✶✻✽·⠧).
// A CLI waiting for ever on a request redraws "✽ Shimmying… (1m 42s · ↓ 70 tokens)" each second; that is not
// work, and neither is a static screen ace does not know.
func screenPrint(screen string) uint64 {
	if screen == "" {
		return 0
	}
	s := clockOnScreen.ReplaceAllString(screen, "#")
	s = strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || r == '\n' || r == '#' || r < 0x80 && unicode.IsPunct(r) {
			return r
		}
		return -1
	}, s)
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64() | 1 // never 0: 0 means no screen
}

// maxWalk bounds the entries one look stats in a directory tree: a huge working copy is fingerprinted in part
// (the agent's changes are in the part seen, or in its other signals).
const maxWalk = 20000

// sumFiles adds up the files named and every file below the directories named (missing ones are skipped).
func sumFiles(files, dirs []string) fileSum {
	var sum fileSum
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			sum.add(fi)
		}
	}
	n := 0
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(path string, de fs.DirEntry, err error) error {
			if n++; err != nil || n > maxWalk {
				return filepath.SkipDir
			}
			if de.Type().IsRegular() {
				if fi, err := de.Info(); err == nil {
					sum.add(fi)
				}
			}
			return nil
		})
	}
	return sum
}

// workPrint fingerprints the working copy at dir: every file's path, size and change time, without .git's
// contents (objects, logs, the mirror's) but with its index and HEAD, which a commit or a git add moves.
func workPrint(dir string) uint64 {
	if dir == "" {
		return 0
	}
	h := fnv.New64a()
	n := 0
	_ = filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if n++; err != nil || n > maxWalk {
			return filepath.SkipDir
		}
		if de.IsDir() && de.Name() == ".git" {
			for _, f := range []string{"index", "HEAD"} {
				if fi, err := os.Stat(filepath.Join(path, f)); err == nil {
					fmt.Fprintf(h, "%s/%s %d %d\n", path, f, fi.Size(), fi.ModTime().UnixNano())
				}
			}
			return filepath.SkipDir
		}
		if fi, err := de.Info(); err == nil && !de.IsDir() {
			fmt.Fprintf(h, "%s %d %d\n", path, fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	return h.Sum64()
}
