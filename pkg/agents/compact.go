package agents

// CompactDue decides whether to ask an agent to compact its context now. size is its transcript's size, offset
// the size at the last compaction (or when the agent got its prompt), threshold the growth that calls for one
// (0 or less: never). Only an agent idle at its prompt is asked: typed mid-turn, the command would land in the
// agent's work or be lost. A transcript smaller than offset was started afresh and counts from zero. It is pure,
// so the tmux monitor and a headless runner decide alike.
func CompactDue(size, offset, threshold int64, st State) bool {
	return threshold > 0 && st == StateReady && Growth(size, offset) >= threshold
}

// Growth is how much a transcript of size grew since offset; one smaller than offset was started afresh and
// counts from zero.
func Growth(size, offset int64) int64 {
	if size < offset {
		return size
	}
	return size - offset
}
