package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"

	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/tracker"
)

type issueMeta struct {
	Title     string    `toml:"title" yaml:"title"`
	Labels    []string  `toml:"labels" yaml:"labels"`
	State     string    `toml:"state" yaml:"state"`
	Author    string    `toml:"author" yaml:"author"`
	Created   time.Time `toml:"created,omitempty" yaml:"created"`
	LabeledBy string    `toml:"labeled_by,omitempty" yaml:"labeled_by"`
}

type issueFile struct {
	Meta    issueMeta
	Body    string
	ModTime time.Time
}

func readIssue(path string) (*issueFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &tracker.Error{Op: "local tracker", Message: path + " does not exist", Kind: tracker.ErrNotFound}
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f := &issueFile{ModTime: fi.ModTime()}
	if err := splitFrontMatter(path, data, &f.Meta, &f.Body); err != nil {
		return nil, err
	}
	return f, nil
}

// splitFrontMatter decodes TOML (+++) or YAML (---) front matter into meta and returns the rest as body.
func splitFrontMatter(path string, data []byte, meta any, body *string) error {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	var fence string
	switch {
	case strings.HasPrefix(s, "+++\n"):
		fence = "+++"
	case strings.HasPrefix(s, "---\n"):
		fence = "---"
	default:
		*body = s
		return nil
	}
	rest := s[len(fence)+1:]
	end := strings.Index(rest, "\n"+fence)
	if end < 0 && strings.HasPrefix(rest, fence) {
		end = -1
	}
	var head string
	switch {
	case strings.HasPrefix(rest, fence+"\n") || rest == fence:
		head, rest = "", strings.TrimPrefix(strings.TrimPrefix(rest, fence), "\n")
	case end >= 0:
		head = rest[:end+1]
		rest = strings.TrimPrefix(rest[end+1+len(fence):], "\n")
	default:
		return fmt.Errorf("%s:1: front matter opened with %s is never closed", path, fence)
	}
	if fence == "+++" {
		if _, err := toml.Decode(head, meta); err != nil {
			var pe toml.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s:%d: %s", path, pe.Position.Line+1, pe.Message)
			}
			return fmt.Errorf("%s: %w", path, err)
		}
	} else if err := yaml.Unmarshal([]byte(head), meta); err != nil {
		return fmt.Errorf("%s: front matter: %w", path, err)
	}
	*body = rest
	return nil
}

func writeIssue(path string, f *issueFile) error { return writeFrontMatter(path, f.Meta, f.Body) }

// writeFrontMatter writes meta as TOML front matter, then body, to path (atomically): the shape of every file
// of the folder, read back by splitFrontMatter.
func writeFrontMatter(path string, meta any, body string) error {
	var b bytes.Buffer
	b.WriteString("+++\n")
	if err := toml.NewEncoder(&b).Encode(meta); err != nil {
		return fmt.Errorf("%s: front matter: %w", path, err)
	}
	b.WriteString("+++\n" + body)
	return atomicWrite(path, b.Bytes())
}

// atomicWrite writes data to path, creating its directory, so readers see the old file or the new one.
func atomicWrite(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}
