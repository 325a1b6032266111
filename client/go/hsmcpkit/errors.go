package hsmcpkit

import (
	"context"
	"fmt"
	"log/slog"
)

// OpError is a failed call, and what it panics with: the operation, the
// store, the handle id as the caller gave it ("" for Mint and Len) and the
// cause (errors.Is and errors.As see through it, to a *handlestore.Error
// or a *handlestore.DeadlineError). Its message leaves the id out: holding
// a handle id is the capability to use it, and the panic's value is logged
// (by mcpkit's dispatcher, by net/http).
type OpError struct {
	Op    string
	Store string
	ID    string
	Err   error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("hsmcpkit: %s %s: %v", e.Store, e.Op, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// Err is the error of the latest failed call (an *OpError), nil if none
// has failed. A later success does not clear it.
func (s *HandleStore[T]) Err() error {
	if e := s.last.Load(); e != nil {
		return e
	}
	return nil
}

// failed records a failure (Err, then the hook or the log) and gives the
// value to panic with.
func (s *HandleStore[T]) failed(op, id string, err error) *OpError {
	e := &OpError{Op: op, Store: s.store.Store(), ID: id, Err: err}
	s.last.Store(e)
	if s.opts.OnError != nil {
		s.opts.OnError(op, e)
		return e
	}
	logger := s.opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.LogAttrs(context.Background(), slog.LevelError, "handlestore: an mcpkit handle store call failed",
		slog.String("op", op), slog.String("store", e.Store), slog.Any("err", err))
	return e
}
