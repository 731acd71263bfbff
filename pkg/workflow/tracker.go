package workflow

import (
	"errors"

	"github.com/aceworks/ace/pkg/tracker"
)

// trackerErr marks tracker errors that retrying cannot fix (missing issue, bad token, validation) as terminal;
// the rest (rate limits, 5xx, network) stay retryable.
func trackerErr(err error) error {
	if errors.Is(err, tracker.ErrNotFound) || errors.Is(err, tracker.ErrUnauthorized) || errors.Is(err, tracker.ErrValidation) {
		return Terminal(err)
	}
	return err
}
