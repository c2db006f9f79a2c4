package harness

import (
	"errors"
	"fmt"
)

// NotSetUp is an error wrapping ErrNotSetUp: a scripted scenario did not
// take place as scripted (format and args say how).
func NotSetUp(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotSetUp, fmt.Sprintf(format, args...))
}

// Attempts plays a scripted scenario up to attempts times: again while play
// returns an error wrapping ErrNotSetUp, telling missed of each attempt
// that did not take place. It returns nil, the first other error, or the
// last attempt's ErrNotSetUp.
func Attempts(attempts int, play func() error, missed func(attempt int, err error)) error {
	for i := 1; ; i++ {
		err := play()
		if err == nil || !errors.Is(err, ErrNotSetUp) || i >= attempts {
			return err
		}
		missed(i, err)
	}
}
