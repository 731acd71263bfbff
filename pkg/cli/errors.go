package cli

import (
	"errors"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

func isNotFound(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, tracker.ErrNotFound)
}
