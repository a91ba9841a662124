//go:build !linux

// Package thread holds what rpctap does to the OS thread it runs on.
package thread

import "errors"

// Nice is not available: elsewhere setpriority applies to the whole process,
// which would slow rpctap's forwarding too. The thread keeps its priority.
func Nice(n int) error { return errors.ErrUnsupported }
