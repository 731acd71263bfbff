package workflow

import (
	"context"
	"slices"

	"github.com/aceworks/ace/pkg/livehost"
	"github.com/aceworks/ace/pkg/store"
)

var _ questionWatcher = (*liveRunner)(nil)

// QuestionGone reports whether the permission or question the run waits on (the one Observe asked the issue,
// r.State.LiveAsked) no longer waits for an answer in the conversation, and why: the agent withdrew it (its turn
// was interrupted: claude and codex take their requests back), a human answered it in the pane, or its turn
// ended. Its host then has it no longer pending. A run that waits on something else (.ace/QUESTION, its budget)
// asked the issue another question than the request's, and is not concerned.
func (l *liveRunner) QuestionGone(ctx context.Context, r *store.Run) (why string, gone bool, err error) {
	id := r.State.LiveAsked
	if id == "" {
		return "", false, nil
	}
	st, err := l.client(r).Status(ctx)
	if err != nil || slices.ContainsFunc(st.Pending, func(p livehost.Record) bool { return p.ID == id }) {
		return "", false, nil // pending still, or no host to say: the answer's delivery finds out
	}
	_, _, _, path, _ := l.liveFiles(r)
	recs, err := livehost.ReadTranscript(path, 0)
	if err != nil {
		return "", false, l.core.needFile(ctx, r, "read the live transcript", err)
	}
	var asked *livehost.Record
	fate := ""
	for _, rec := range recs {
		if rec.ID != id {
			continue
		}
		switch rec.Kind {
		case livehost.KindPermission, livehost.KindQuestion:
			asked, fate = &rec, ""
		case livehost.KindWithdrawn:
			fate = "withdrawn"
		case livehost.KindAnswered:
			fate = "answered in the live conversation (" + rec.From + ")"
		}
	}
	if asked == nil || pendingQuestion(*asked) != r.State.Question {
		return "", false, nil
	}
	what := "question"
	if asked.Kind == livehost.KindPermission {
		what = "permission request for " + asked.Tool
	}
	switch fate {
	case "withdrawn":
		return "the agent withdrew its " + what, true, nil
	case "":
		return "the agent's turn ended without the answer to its " + what, true, nil
	}
	return "the agent's " + what + " was " + fate, true, nil
}
