package chat

import (
	"errors"
	"fmt"
)

// ErrUnsupported is wrapped by the error of a conversion that cannot be
// made faithfully: a request, answer or event holds what the target API
// cannot express, or what the chat model does not carry.
var ErrUnsupported = errors.New("chat: not translatable")

// ErrMalformed is wrapped by the error of a body or an event that is not
// what its API sends: not JSON, or a member of the wrong type.
var ErrMalformed = errors.New("chat: malformed")

// UnsupportedError is what cannot be translated, and for which API.
type UnsupportedError struct {
	// Dialect is the API's name as errors write it (OpenAI, Anthropic,
	// Gemini, Bedrock).
	Dialect string
	// What names what it cannot take, or what the model does not carry.
	What string
	// Read reports that the API's body holds what the chat model does not
	// carry (a decoder's error); else the API cannot take what the model
	// holds (an encoder's).
	Read bool
}

func (e *UnsupportedError) Error() string {
	if e.Read {
		return "chat: " + e.Dialect + " " + e.What + " is not in the chat model"
	}
	return "chat: " + e.Dialect + " cannot take " + e.What
}

// Is reports whether target is ErrUnsupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// MalformedError is a body or event that does not decode.
type MalformedError struct {
	// Dialect is the API's name as errors write it.
	Dialect string
	// What is what was read (request, answer, stream event).
	What string
	// Err is why; nil when What says it all.
	Err error
}

func (e *MalformedError) Error() string {
	if e.Err == nil {
		return "chat: malformed " + e.Dialect + " " + e.What
	}
	return "chat: malformed " + e.Dialect + " " + e.What + ": " + e.Err.Error()
}

// Is reports whether target is ErrMalformed.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

// Unwrap returns the cause.
func (e *MalformedError) Unwrap() error { return e.Err }

// cannot is an encoder's error: dialect cannot take what.
func cannot(dialect, format string, args ...any) error {
	return &UnsupportedError{Dialect: dialect, What: fmt.Sprintf(format, args...)}
}

// notInModel is a decoder's error: dialect's what is not in the model.
func notInModel(dialect, format string, args ...any) error {
	return &UnsupportedError{Dialect: dialect, What: fmt.Sprintf(format, args...), Read: true}
}

// malformed is a decoder's error: dialect's what does not decode.
func malformed(dialect, what string, err error) error {
	return &MalformedError{Dialect: dialect, What: what, Err: err}
}

// malformedf is a decoder's error with a reason of its own.
func malformedf(dialect, what, format string, args ...any) error {
	return &MalformedError{Dialect: dialect, What: what, Err: fmt.Errorf(format, args...)}
}
