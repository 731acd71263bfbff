package workflow

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
)

// fileCacheSize bounds the workflow files a process keeps read: one per run's commit is plenty, and a commit read
// again after its entry went only costs two git processes.
const fileCacheSize = 128

// fileCache keeps what a path holds at a commit. A run reads its workflow file at its commit at every step that
// needs it (prepare, the task file, verify, the labels; again after each restart), and a commit's content never
// changes: two git processes once per commit instead of each time.
type fileCache struct {
	mu      sync.Mutex
	entries map[fileAt]cachedFile
}

// fileAt is a path at a commit of a repository.
type fileAt struct{ gitDir, rev, path string }

type cachedFile struct {
	data  []byte
	found bool
}

// readAt is readAt, answered from the cache when this commit's file was read before. Errors are not kept: the
// next read tries git again.
func (c *fileCache) readAt(ctx context.Context, gitDir, rev, path string) ([]byte, bool, error) {
	if !fullHash(rev) {
		return readAt(ctx, gitDir, rev, path) // a name may move; only a commit's hash says the same forever
	}
	k := fileAt{gitDir, rev, path}
	c.mu.Lock()
	f, ok := c.entries[k]
	c.mu.Unlock()
	if ok {
		return f.data, f.found, nil
	}
	data, found, err := readAt(ctx, gitDir, rev, path)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[fileAt]cachedFile{}
	}
	if len(c.entries) >= fileCacheSize {
		for old := range c.entries { // any one: an entry dropped is read again, never wrong
			delete(c.entries, old)
			break
		}
	}
	c.entries[k] = cachedFile{data: data, found: found}
	return data, found, nil
}

// fullHash says whether rev is an object's full hash (SHA-1 or SHA-256), not a name that may move.
func fullHash(rev string) bool {
	if len(rev) != 40 && len(rev) != 64 {
		return false
	}
	for _, c := range rev {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// readAt reads path at rev in a bare repository; found is false when the commit has no such file.
func readAt(ctx context.Context, gitDir, rev, path string) (data []byte, found bool, err error) {
	ls, err := gitText(ctx, gitDir, "ls-tree", rev, "--", path)
	if err != nil {
		return nil, false, fmt.Errorf("look for %s at %s: %w", path, rev, err)
	}
	if ls == "" {
		return nil, false, nil
	}
	out, err := exec.CommandContext(ctx, "git", "--git-dir", gitDir, "cat-file", "blob", rev+":"+path).Output()
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", path, rev, err)
	}
	return out, true, nil
}
