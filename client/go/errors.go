package handlestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
)

// Error is a refusal: a node's (with the node's reason, code and message,
// read from the ErrorDetail it sends with every error) or the client's own
// for malformed input (reason invalid_argument, before any call).
//
//	if errors.Is(err, handlestore.ErrNotFound) { ... }
//	var e *handlestore.Error
//	if errors.As(err, &e) { log.Print(e.Reason, e.Code, e.Message) }
type Error struct {
	// Reason is the node's reason from the error table ("" if it gave
	// none, or gave one that does not travel with Code).
	Reason Reason
	// Code is the gRPC status code.
	Code codes.Code
	// Message is the node's message, for people.
	Message string
	// LeaderID and LeaderAddr name the leader the node knows of (0, "").
	LeaderID   uint64
	LeaderAddr string
	// CurrentRevision is the entry's revision for revision_mismatch (0 =
	// absent).
	CurrentRevision uint64
	// CompactRevision is the oldest revision the node keeps, for compacted.
	CompactRevision uint64
}

func (e *Error) Error() string {
	what := string(e.Reason)
	if what == "" {
		what = e.Code.String()
	}
	return fmt.Sprintf("handlestore: %s: %s", what, e.Message)
}

// class is the code an error is matched under by ErrUnavailable and the
// other code values: a deadline, abort or cancel from the transport is an
// unavailable node.
func (e *Error) class() codes.Code {
	switch e.Code {
	case codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		if e.Reason == "" {
			return codes.Unavailable
		}
	}
	return e.Code
}

// Is matches the error values of the table: ErrNotLeader by reason,
// ErrUnavailable (and ErrNotFound, ErrInvalidArgument, ... named after
// their code) by code.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	if !ok {
		return false
	}
	if s.byCode {
		return e.class() == s.code
	}
	return e.Reason == s.reason
}

// sentinel is an error value of the table (ErrNotFound, ErrUnavailable,
// ...): errors.Is(err, ErrX) holds for an *Error of its reason or code.
type sentinel struct {
	reason Reason
	code   codes.Code
	byCode bool
}

func (s *sentinel) Error() string {
	if s.reason != "" {
		return "handlestore: " + string(s.reason)
	}
	return "handlestore: " + s.code.String()
}

// ErrUnimplemented matches a node that does not know a method (it is
// older than this client).
var ErrUnimplemented error = &sentinel{code: codes.Unimplemented, byCode: true}

// ErrCodec: a value could not be encoded or decoded as JSON.
var ErrCodec = errors.New("handlestore: value codec")

// ErrClosed: the client or store was closed.
var ErrClosed = errors.New("handlestore: closed")

// DeadlineError: the call's deadline (its context's, else
// Config.CallTimeout) passed while no node could serve it. A write's
// outcome is unknown. errors.Is(err, context.DeadlineExceeded) and
// errors.Is(err, ErrDeadlineExceeded) hold.
type DeadlineError struct {
	// Deadline is how long the call had.
	Deadline time.Duration
	// Last is the last error a node gave (or nil).
	Last error
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("handlestore: deadline of %v exceeded; last error: %v", e.Deadline, e.Last)
}

func (e *DeadlineError) Unwrap() error { return context.DeadlineExceeded }

// Is makes a DeadlineError match ErrDeadlineExceeded too, the table's
// value of that code (a node's slow_request is one), as in the
// TypeScript client.
func (e *DeadlineError) Is(target error) bool { return target == ErrDeadlineExceeded }

// invalid is the client's own refusal of malformed input.
func invalid(format string, args ...any) error {
	return &Error{Reason: ReasonInvalidArgument, Code: codes.InvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// refusal is an error of the table the client finds itself.
func refusal(r Reason, format string, args ...any) error {
	return &Error{Reason: r, Code: r.Code(), Message: fmt.Sprintf(format, args...)}
}

func codecError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCodec, fmt.Sprintf(format, args...))
}
