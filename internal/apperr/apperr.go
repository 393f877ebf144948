// Package apperr is the one coded error of the service's domain. The algorithm and rating
// packages return it; the HTTP layer maps its Code to a status and a problem+json body in one
// place, so a package that knows nothing of HTTP can still say "this field is invalid" or
// "this match id was already used with another body".
package apperr

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Code classifies an error for the caller; the HTTP layer turns it into a status code.
type Code string

const (
	Invalid         Code = "invalid"           // the input breaks a rule; Fields say which
	NotFound        Code = "not_found"         // the thing asked for does not exist
	Conflict        Code = "conflict"          // the request contradicts stored state
	Unauthorized    Code = "unauthorized"      // no valid credentials
	Forbidden       Code = "forbidden"         // valid credentials without the right scope
	TooLarge        Code = "too_large"         // the input is over a configured limit
	Unsupported     Code = "unsupported"       // the input is in a format the service does not read
	NotAllowed      Code = "not_allowed"       // the operation does not exist on that resource
	Gone            Code = "gone"              // the thing asked for existed but is no longer kept
	Unavailable     Code = "unavailable"       // a dependency (the database) cannot be reached
	TooManyRequests Code = "too_many_requests" // the caller used up its rate limit
	Internal        Code = "internal"          // a bug; never caused by the input
)

// FieldError names one invalid field by its JSON path, e.g. "players[3].rating".
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the domain error: a code, a human message and, for Invalid, the fields at fault.
type Error struct {
	Code    Code
	Message string
	Fields  []FieldError
	// RetryAt, for TooManyRequests, is when the caller may try again (the zero time: soon),
	// RetryAfter how long that is from now on the domain's clock.
	RetryAt    time.Time
	RetryAfter time.Duration
	Err        error // the cause, for logs; never shown to clients
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "; %s %s", f.Field, f.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error of the given code that keeps err as its cause.
func Wrap(code Code, err error, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// Field returns an Invalid error about a single field.
func Field(field, format string, args ...any) *Error {
	return &Error{Code: Invalid, Message: "the request is invalid",
		Fields: []FieldError{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// CodeOf returns the code of the first *Error in err's chain, Internal if there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Fields collects validation failures so a request reports all its faults at once.
// The zero value is ready to use.
type Fields struct {
	list []FieldError
}

// maxFields bounds the report: a 100,000-player request with every rating wrong should not
// produce a 100,000-entry error body.
const maxFields = 50

// Add records that field is invalid.
func (f *Fields) Add(field, format string, args ...any) {
	if len(f.list) >= maxFields {
		return
	}
	f.list = append(f.list, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Include adds the field faults of err, an Invalid *Error such as a Validate method returns,
// so that one request reports the faults found by several validators together. Any other
// non-nil error is recorded against the field "body".
func (f *Fields) Include(err error) {
	if err == nil {
		return
	}
	var e *Error
	if errors.As(err, &e) && len(e.Fields) > 0 {
		for _, fe := range e.Fields {
			f.Add(fe.Field, "%s", fe.Message)
		}
		return
	}
	f.Add("body", "%s", err.Error())
}

// Rename returns err with every field name passed through rename, for an adapter whose
// input names a domain's fields differently: the domain names its own inputs ("weights[3]",
// the fourth weight it was given) and the adapter knows where its request holds them
// ("players[3].weight"). An Invalid *Error comes back as a renamed copy (of the first *Error
// in err's chain); any other error, nil included, as it is.
func Rename(err error, rename func(field string) string) error {
	var e *Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		return err
	}
	out := *e
	out.Fields = make([]FieldError, len(e.Fields))
	for i, f := range e.Fields {
		out.Fields[i] = FieldError{Field: rename(f.Field), Message: f.Message}
	}
	return &out
}

// Len reports how many faults were recorded.
func (f *Fields) Len() int { return len(f.list) }

// Err returns nil when nothing was recorded, else an Invalid error carrying every fault.
func (f *Fields) Err() error {
	if len(f.list) == 0 {
		return nil
	}
	return &Error{Code: Invalid, Message: "the request is invalid", Fields: f.list}
}
