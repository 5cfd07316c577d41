package media

import (
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	mediav1 "media/clients/go/gen/media/v1"
)

// APIError is every error the service answers: its code, the finer reason of its ErrorDetails
// (e.g. validation_error) and the request fields at fault. errors.As(err, &apiErr) finds it.
type APIError struct {
	Code            connect.Code // connect.CodeInvalidArgument, ...; Code.String() is "invalid_argument"
	Message         string
	Reason          string // ErrorDetails.code; empty when absent
	FieldViolations []*mediav1.FieldViolation
	Procedure       string // e.g. /media.v1.JobService/Create
	cause           error
}

func (e *APIError) Error() string {
	var fields []string
	for _, v := range e.FieldViolations {
		if f := v.GetField() + ": " + v.GetDescription(); !strings.Contains(e.Message, f) {
			fields = append(fields, f)
		}
	}
	s := fmt.Sprintf("%s: [%s] %s", e.Procedure, e.Code, e.Message)
	if len(fields) > 0 {
		s += " (" + strings.Join(fields, "; ") + ")"
	}
	return s
}

func (e *APIError) Unwrap() error { return e.cause }

func asAPIError(err error, procedure string) error {
	var already *APIError
	if err == nil || errors.As(err, &already) {
		return err
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return &APIError{Code: connect.CodeOf(err), Message: err.Error(), Procedure: procedure, cause: err}
	}
	out := &APIError{Code: ce.Code(), Message: ce.Message(), Procedure: procedure, cause: err}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if details, ok := v.(*mediav1.ErrorDetails); ok && derr == nil {
			out.Reason = details.GetCode()
			out.FieldViolations = details.GetFieldViolations()
		}
	}
	return out
}
